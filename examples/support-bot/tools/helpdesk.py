#!/usr/bin/env python3
"""The support bot's side-effecting tools, as evalward's `command` tool protocol runs them.

The call's arguments arrive as one JSON object on stdin; the result goes to stdout; the tool's
name is in EVALWARD_TOOL. Evals never run this file: every fixture shadows or replays these
tools. In production it talks to Jira (JIRA_BASE_URL, JIRA_EMAIL, JIRA_API_TOKEN,
JIRA_PROJECT) and to an SMTP relay (SMTP_HOST, SMTP_FROM).
"""

from __future__ import annotations

import base64
import json
import os
import smtplib
import sys
import urllib.request
from email.message import EmailMessage


def create_jira_ticket(arguments: dict[str, str]) -> dict[str, str]:
    credentials = f"{os.environ['JIRA_EMAIL']}:{os.environ['JIRA_API_TOKEN']}"
    description = {
        "type": "doc",
        "version": 1,
        "content": [
            {
                "type": "paragraph",
                "content": [{"type": "text", "text": f"Order {arguments.get('order_id', '?')}"}],
            }
        ],
    }
    body = {
        "fields": {
            "project": {"key": os.environ.get("JIRA_PROJECT", "REF")},
            "issuetype": {"name": "Task"},
            "summary": arguments["summary"],
            "description": description,
        }
    }
    base_url = os.environ["JIRA_BASE_URL"].rstrip("/")
    if not base_url.startswith("https://"):
        raise SystemExit("JIRA_BASE_URL must be an https:// URL")
    request = urllib.request.Request(  # noqa: S310 -- the scheme is checked above
        base_url + "/rest/api/3/issue",
        data=json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            "authorization": "Basic " + base64.b64encode(credentials.encode()).decode(),
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=20) as response:  # noqa: S310
        created = json.load(response)
    return {"ticket": created["key"], "status": "open"}


def send_email(arguments: dict[str, str]) -> dict[str, str]:
    message = EmailMessage()
    message["From"] = os.environ["SMTP_FROM"]
    message["To"] = arguments["to"]
    message["Subject"] = "About your Acme order"
    message.set_content(arguments["body"])
    with smtplib.SMTP(os.environ["SMTP_HOST"], timeout=20) as smtp:
        smtp.send_message(message)
    return {"sent": "true"}


TOOLS = {"create_jira_ticket": create_jira_ticket, "send_email": send_email}


if __name__ == "__main__":
    tool = TOOLS[os.environ["EVALWARD_TOOL"]]
    print(json.dumps(tool(json.load(sys.stdin))))
