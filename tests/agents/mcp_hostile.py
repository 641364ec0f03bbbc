"""A stdio MCP server out to break its client, one way per mode (argv[1]); the standard
library only, so it runs as any agent user. It speaks JSON-RPC lines itself:

- silent: reads everything, answers nothing;
- exit: says why on stderr and exits 3 before answering;
- garbage: answers `initialize` with a line that is not JSON;
- not-jsonrpc: answers `initialize` with JSON that is no JSON-RPC message;
- wrong-id: answers `initialize` under another id;
- flood: answers `tools/list` with one line of 6 MiB;
- deep-schema: lists a tool whose input schema nests 41 deep;
- big-schema: lists a tool whose input schema is 100 KB;
- hang-call: lists its tool, never answers a call of it;
- ask-client: asks the client to sample a model during a call, then answers with what the
  client said;
- ok: a well-behaved server with one tool, `echo`.
"""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1]
TOOL = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def reply(request: dict[str, object], result: dict[str, object]) -> None:
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def nested(depth: int) -> dict[str, object]:
    schema: dict[str, object] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def tools() -> list[dict[str, object]]:
    if MODE == "deep-schema":
        return [{**TOOL, "inputSchema": nested(20)}]
    if MODE == "big-schema":
        props = {f"p{i}": {"type": "string", "description": "x" * 90} for i in range(1000)}
        return [{**TOOL, "inputSchema": {"type": "object", "properties": props}}]
    return [TOOL]


def initialize(request: dict[str, object]) -> None:
    params = request.get("params") or {}
    assert isinstance(params, dict)
    if MODE == "garbage":
        sys.stdout.write("Starting server... done\n")
        sys.stdout.flush()
        return
    if MODE == "not-jsonrpc":
        send({"hello": "world"})
        return
    result = {
        "protocolVersion": params.get("protocolVersion"),
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "hostile", "version": "1"},
    }
    if MODE == "wrong-id":
        send({"jsonrpc": "2.0", "id": 9999, "result": result})
        return
    reply(request, result)


def call(request: dict[str, object]) -> None:
    if MODE == "hang-call":
        return
    params = request.get("params") or {}
    assert isinstance(params, dict)
    if MODE == "ask-client":
        sampling = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}
        sampling["maxTokens"] = 10
        send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": sampling})
        answer = json.loads(sys.stdin.readline())
        text = f"the client answered: {json.dumps(answer.get('error') or answer.get('result'))}"
    else:
        text = json.dumps(params.get("arguments"))
    reply(request, {"content": [{"type": "text", "text": text}], "isError": False})


def main() -> None:
    if MODE == "exit":
        print("boom: no such database", file=sys.stderr)
        sys.exit(3)
    for line in sys.stdin:
        request = json.loads(line)
        method = request.get("method")
        if MODE == "silent" or "id" not in request:
            continue
        if method == "initialize":
            initialize(request)
        elif method == "tools/list":
            if MODE == "flood":
                sys.stdout.write('{"jsonrpc": "2.0", "id": 1, "result": "' + "x" * (6 << 20))
                sys.stdout.write('"}\n')
                sys.stdout.flush()
                continue
            reply(request, {"tools": tools()})
        elif method == "tools/call":
            call(request)
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "?"}})


if __name__ == "__main__":
    main()
