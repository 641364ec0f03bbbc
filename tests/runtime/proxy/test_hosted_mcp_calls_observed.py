"""A tool the provider would call on the agent's behalf is never a call the run makes unseen:
a Responses request that offers a remote MCP server (`type: mcp`, whose tools OpenAI calls
itself) is refused before it reaches the provider, and a reply that holds such a call all the
same (an `mcp_call` item, from tools a stored prompt carries) is an error of the run; so a
tool the fixture forbids cannot be called unseen by handing it to the provider.

Through `evalward run` on a real repository, with the scripted model server as the provider:
a command agent with no adapter makes one request and prints the reply's text; the reply says
the model called the server's `delete_account`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, shaped
from support.closer import closer_files, run_closer
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
import json, os, sys, urllib.request
sys.stdin.readline()
body = {"model": "gpt-4.1-mini", "input": "hosted tool: close my account"}
body.update(json.loads(sys.argv[1]))
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/responses", json.dumps(body).encode(),
    {"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
     "content-type": "application/json"})
with urllib.request.urlopen(request, timeout=30) as answer:
    reply = json.loads(answer.read())
print("".join(part["text"] for item in reply["output"] if item["type"] == "message"
              for part in item["content"]))
"""

HOSTED_CALL = {
    "id": "resp_hosted",
    "object": "response",
    "created_at": 1700000000,
    "status": "completed",
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "model": "gpt-4.1-mini",
    "output": [
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "server_label": "crm",
            "name": "delete_account",
            "arguments": "{}",
            "output": "deleted",
        },
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    },
}


REMOTE_MCP = {
    "tools": [
        {
            "type": "mcp",
            "server_label": "crm",
            "server_url": "https://crm.example/mcp",
            "require_approval": "never",
        }
    ]
}


def gate(repo: GitRepo, model: ScriptedModelServer, asked: dict[str, Any]) -> dict[str, Any]:
    """The fixture's record, once the gate has run over an agent that asks with `asked`."""
    repo.commit(
        "an agent that hands delete_account to the provider",
        closer_files(AGENT, f"'{json.dumps(asked)}'"),
    )
    model.script("hosted tool", shaped(HOSTED_CALL))

    done, fixture = run_closer(repo, model)

    (verdict,) = fixture["assertions"]
    steps = [(s["type"], s.get("tool")) for s in fixture["trace"]["steps"]]
    assert verdict["status"] != "pass", f"{verdict['message']}; steps: {steps}"
    assert done.returncode != 0, verdict["message"]
    return dict(fixture)


def test_a_remote_mcp_server_offered_to_the_provider_is_refused_before_it_sees_it(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    fixture = gate(repo, model, REMOTE_MCP)

    assert model.requests_mentioning("hosted tool") == []
    (refused,) = fixture["trace"]["proxy_calls"]
    assert refused["status"] == 400 and "`mcp` tool" in refused["error"], refused


def test_a_reply_holding_a_call_the_provider_made_is_an_error_of_the_run(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    fixture = gate(repo, model, {"prompt": {"id": "pmpt_crm"}})

    (asked,) = model.requests_mentioning("hosted tool")
    assert asked["prompt"] == {"id": "pmpt_crm"}
    errors = [s["content"] for s in fixture["trace"]["steps"] if s["type"] == "error"]
    assert any("`mcp_call` item" in e for e in errors), errors
