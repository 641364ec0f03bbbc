"""A bring-your-own agent for tests that calls its model the way agents do: plain HTTP to
OPENAI_BASE_URL / ANTHROPIC_BASE_URL with OPENAI_API_KEY / ANTHROPIC_API_KEY (urllib, no SDK).

Command protocol by default; `--serve PORT` makes it an http agent (GET /ready, POST /run)
that uses the request's `modelProxy` key and base URLs instead of its environment.

The fixture's prompt picks what it does:
- "openai: ...": a Chat Completions tool loop (tool calls answered with a canned result).
- "anthropic: ...": the same over the Messages API.
- "calls N: ...": N Chat Completions calls in a row; answers with each call's HTTP status
  ("calls N model=NAME: ..." calls NAME rather than gpt-4.1-mini).
- "lists N: ...": N model lists (`GET /v1/models`), one embedding, then a model id that
  tries to leave its path segment; answers with each request's HTTP status.
- "raw METHOD PATH [KEY] [stream]": one request as given; answers with the status and body.
- "smuggle: ...": first a request framed two ways (a length and chunked) carrying a second
  one inside, on a socket of its own, then the "openai:" loop; answers with the statuses the
  proxy gave the first, then the loop's answer.
A prompt that mentions "understate" also reports a usage of 1 token, whatever it used.
Every run writes the environment it saw to env-<fixture>.json in the working directory, where
it may write there (the command line; in the action the working copy is read-only).
"""

import json
import os
import socket
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlsplit


def post(url: str, body: object, headers: dict[str, str], method: str = "POST") -> tuple[int, dict]:
    data = json.dumps(body).encode() if method == "POST" else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("content-type", "application/json")
    for name, value in headers.items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as failed:
        return failed.code, json.loads(failed.read() or b"{}")


def openai_loop(prompt: str, model: dict[str, str], events: list[dict]) -> str:
    url = model["openaiBaseUrl"] + "/chat/completions"
    auth = {"authorization": f"Bearer {model['apiKey']}"}
    messages: list[dict] = [{"role": "user", "content": prompt}]
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    for _ in range(4):
        status, reply = post(
            url, {"model": "gpt-4.1-mini", "messages": messages, "tools": tools}, auth
        )
        if status != 200:
            return f"model error {status}: {reply}"
        message = reply["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            return message["content"]
        for call in calls:
            name = call["function"]["name"]
            events.append(
                {
                    "type": "tool_call",
                    "tool": name,
                    "arguments": call["function"]["arguments"],
                    "id": call["id"],
                }
            )
            events.append(
                {
                    "type": "tool_result",
                    "tool": name,
                    "output": "order 12345 shipped",
                    "id": call["id"],
                }
            )
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": "order 12345 shipped"}
            )
    return "gave up"


def anthropic_loop(prompt: str, model: dict[str, str], events: list[dict]) -> str:
    url = model["anthropicBaseUrl"] + "/v1/messages"
    key = model.get("anthropicApiKey", model["apiKey"])
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    messages: list[dict] = [{"role": "user", "content": prompt}]
    tools = [{"name": "lookup", "input_schema": {"type": "object"}}]
    for _ in range(4):
        body = {
            "model": "claude-haiku-4-5",
            "max_tokens": 200,
            "messages": messages,
            "tools": tools,
        }
        status, reply = post(url, body, headers)
        if status != 200:
            return f"model error {status}: {reply}"
        messages.append({"role": "assistant", "content": reply["content"]})
        uses = [b for b in reply["content"] if b["type"] == "tool_use"]
        if not uses:
            return "".join(b.get("text", "") for b in reply["content"])
        results = []
        for use in uses:
            events.append(
                {
                    "type": "tool_call",
                    "tool": use["name"],
                    "arguments": use["input"],
                    "id": use["id"],
                }
            )
            events.append(
                {
                    "type": "tool_result",
                    "tool": use["name"],
                    "output": "order 12345 shipped",
                    "id": use["id"],
                }
            )
            results.append(
                {"type": "tool_result", "tool_use_id": use["id"], "content": "order 12345 shipped"}
            )
        messages.append({"role": "user", "content": results})
    return "gave up"


def smuggle(model: dict[str, str]) -> str:
    """The status of every reply the proxy wrote to a request that hides another, until it
    closed the connection."""
    base = urlsplit(model["openaiBaseUrl"])
    inner = json.dumps(
        {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "smuggled"}]}
    ).encode()
    hidden = (
        f"POST {base.path}/chat/completions HTTP/1.1\r\nHost: {base.netloc}\r\n"
        f"Authorization: Bearer {model['apiKey']}\r\ncontent-type: application/json\r\n"
        f"Content-Length: {len(inner)}\r\n\r\n"
    ).encode() + inner
    body = b"0\r\n\r\n" + hidden
    outer = (
        f"POST {base.path}/chat/completions HTTP/1.1\r\nHost: {base.netloc}\r\n"
        f"Content-Length: {len(body)}\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode() + body
    replies = b""
    with socket.create_connection((base.hostname, base.port), timeout=30) as connection:
        connection.sendall(outer)
        while chunk := connection.recv(65536):
            replies += chunk
    lines = replies.decode("latin-1").split("\r\n")
    return " ".join(line.split()[1] for line in lines if line.startswith("HTTP/"))


def run(request: dict, model: dict[str, str]) -> list[dict]:
    if os.access(".", os.W_OK):
        with open(f"env-{request['fixture']}.json", "w") as handle:
            json.dump(dict(os.environ), handle)
    prompt = request["messages"][-1]["content"]
    events: list[dict] = []
    if prompt.startswith("openai:"):
        answer = openai_loop(prompt, model, events)
    elif prompt.startswith("anthropic:"):
        answer = anthropic_loop(prompt, model, events)
    elif prompt.startswith("smuggle:"):
        answer = smuggle(model) + " | " + openai_loop(prompt, model, events)
    elif prompt.startswith("calls "):
        head = prompt.split(":")[0].split()
        count = int(head[1])
        named = [word.removeprefix("model=") for word in head if word.startswith("model=")]
        url = model["openaiBaseUrl"] + "/chat/completions"
        statuses = []
        for number in range(count):
            body = {
                "model": named[0] if named else "gpt-4.1-mini",
                "messages": [{"role": "user", "content": f"{prompt} #{number}"}],
            }
            status, reply = post(url, body, {"authorization": f"Bearer {model['apiKey']}"})
            statuses.append(f"{status} {reply.get('error', {}).get('message', '')}".strip())
        answer = " | ".join(statuses)
    elif prompt.startswith("lists "):
        auth = {"authorization": f"Bearer {model['apiKey']}"}
        base = model["openaiBaseUrl"]
        count = int(prompt.split(":")[0].split()[1])
        codes = [post(base + "/models", None, auth, "GET")[0] for _ in range(count)]
        embed = {"model": "text-embedding-3-small", "input": "hi"}
        codes.append(post(base + "/embeddings", embed, auth)[0])
        codes.append(post(base + "/models/..%2F..%2Fv1%2Ffiles", None, auth, "GET")[0])
        answer = " ".join(str(code) for code in codes)
    else:  # raw METHOD PATH [KEY] [stream]
        _, method, path, *rest = prompt.split()
        key = rest[0] if rest and rest[0] != "-" else model["apiKey"]
        body: dict = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}
        if "stream" in rest:
            body["stream"] = True
        headers = {"authorization": f"Bearer {key}"}
        if "anthropic" in rest:
            headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
            body["max_tokens"] = 10
        base = model["anthropicBaseUrl"]
        status, reply = post(base + path, body, headers, method)
        answer = f"{status} {json.dumps(reply, sort_keys=True)}"
    events.append({"type": "final", "content": answer})
    if "understate" in prompt:
        events.append({"type": "usage", "input_tokens": 1, "output_tokens": 0})
    return events


def from_environment() -> dict[str, str]:
    return {
        "apiKey": os.environ.get("OPENAI_API_KEY", ""),
        "anthropicApiKey": os.environ.get("ANTHROPIC_API_KEY", ""),
        "openaiBaseUrl": os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        "anthropicBaseUrl": os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    }


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.reply(200 if self.path == "/ready" else 404, {"ok": True})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.reply(200, {"trace": run(request, request["modelProxy"])})

    def reply(self, status: int, body: object) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        print(format % args, file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        HTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
    else:
        for event in run(json.loads(sys.stdin.readline()), from_environment()):
            print(json.dumps(event), flush=True)
