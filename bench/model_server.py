"""An OpenAI-compatible model server for benchmarks: fixed latency, scripted tool calls, counts.

Raw asyncio HTTP/1.1 with keep-alive, so that the server's own CPU per request stays far below
the client's on a 2-core machine. Script: a request whose conversation has no assistant turn
and offers tools gets a call of the first tool; any other request gets a final answer that
echoes the last user message (so `contains` assertions can check it).

    python bench/model_server.py --latency-ms 50 --port-file /tmp/port
    GET /stats -> {"requests": N, "first": t, "last": t}   (?reset=1 clears first and last)

`first` is when the first model request arrived and `last` when the last reply was sent
(Unix time), so a benchmark can split a client's wall time into start-up, the calls and
what follows them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any


class Stats:
    requests = 0
    first: float | None = None
    last: float | None = None


def reply(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    last_user = next(
        (m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), ""
    )
    tools = body.get("tools") or []
    message: dict[str, Any]
    if turn == 0 and tools:
        name = tools[0]["function"]["name"]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": name, "arguments": "{}"}}
            ],
        }
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": f"answer: {last_user}"}
        finish = "stop"
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": body.get("model", "bench"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
    }


async def handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            raw = await reader.readexactly(length) if length else b""
            if method == "GET" and path.startswith("/stats"):
                payload = json.dumps(
                    {"requests": Stats.requests, "first": Stats.first, "last": Stats.last}
                ).encode()
                if path.endswith("reset=1"):
                    Stats.first = Stats.last = None
            else:
                Stats.requests += 1
                if Stats.first is None:
                    Stats.first = time.time()
                payload = json.dumps(reply(json.loads(raw or b"{}"))).encode()
                await asyncio.sleep(latency)
                Stats.last = time.time()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def serve(port: int, latency: float, port_file: Path | None) -> None:
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, latency), "127.0.0.1", port, backlog=1024
    )
    actual = server.sockets[0].getsockname()[1]
    if port_file is not None:
        port_file.write_text(str(actual))
    print(f"listening on http://127.0.0.1:{actual}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--port-file", type=Path)
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.latency_ms / 1000, args.port_file))


if __name__ == "__main__":
    main()
