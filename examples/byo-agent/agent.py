#!/usr/bin/env python3
"""A bring-your-own agent speaking evalward's trace protocol (docs/agent-protocols.md).

It stands in for the agent a team already has as code: a real one would call its model
here. This one answers order questions with a rule, so the example runs with no API key.

    python3 examples/byo-agent/agent.py               # command protocol: stdin in, JSON lines out
    python3 examples/byo-agent/agent.py --serve 8080  # http protocol: GET /healthz, POST /run
"""

from __future__ import annotations

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

ORDERS = {"12345": {"status": "shipped", "eta": "2026-11-25"}}


def lookup_order(order_id: str) -> dict[str, str]:
    return ORDERS.get(order_id, {"status": "unknown"})


def run(request: dict) -> list[dict]:
    """One fixture run: the request evalward sent in, the trace events out."""
    prompt = "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")
    events: list[dict] = [{"type": "usage", "input_tokens": len(prompt) // 4, "output_tokens": 0}]
    match = re.search(r"\b(\d{5})\b", prompt)
    if not match:
        events.append({"type": "final", "content": "Hello! How can I help with your order?"})
        return events
    arguments = {"order_id": match.group(1)}
    events.append({"type": "tool_call", "tool": "lookup_order", "arguments": arguments})
    if "lookup_order" in request.get("shadowTools", []):
        order = {"status": "unknown (shadowed)"}
    else:
        order = lookup_order(arguments["order_id"])
    events.append({"type": "tool_result", "tool": "lookup_order", "output": json.dumps(order)})
    answer = f"Order {arguments['order_id']} is {order['status']}"
    if "eta" in order:
        answer += f" and should arrive on {order['eta']}"
    events.append({"type": "final", "content": answer + "."})
    events.append({"type": "usage", "input_tokens": 0, "output_tokens": len(answer) // 4})
    return events


def command() -> None:
    request = json.loads(sys.stdin.readline())
    print(f"agent: fixture {request['fixture']}", file=sys.stderr)  # logs go to stderr
    for event in run(request):
        print(json.dumps(event), flush=True)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._reply(200, {"ok": True} if self.path == "/healthz" else {"error": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length))
        self._reply(200, {"trace": run(request)})

    def _reply(self, status: int, body: object) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        print(format % args, file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        HTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
    else:
        command()
