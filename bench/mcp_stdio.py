"""What reading an MCP server's stdout costs evalward: its bounded line reader
(runtime/tools/mcp_wire.py) against the reader that rebuilds its buffer on every chunk (`buffer +
chunk`, then split), on one long line arriving 64 KiB at a time and on many short ones.
The CPU time of each, in this process, for the same bytes.

    python bench/mcp_stdio.py [--megabytes 3.9] [--lines 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass

from mcp_types import jsonrpc_message_adapter

from evalward.runtime.tools.mcp_wire import CHUNK, Guard, _read_stdout


@dataclass
class _Ended:
    """What the reader asks of a process: its stdout, and that it has ended."""

    stdout: asyncio.StreamReader
    returncode: int = 0

    async def wait(self) -> int:
        return 0


def _stream(data: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=1 << 30)
    for start in range(0, len(data), CHUNK):
        reader.feed_data(data[start : start + CHUNK])
    reader.feed_eof()
    return reader


async def _bounded(data: bytes) -> float:
    from anyio import create_memory_object_stream, create_task_group

    send, receive = create_memory_object_stream[object](1 << 20)
    stderr: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    stderr.set_result(b"")
    guard = Guard("bench", message_bytes=1 << 30, session_bytes=1 << 30)
    started = time.process_time()
    async with create_task_group() as group:
        group.start_soon(_read_stdout, guard, _Ended(_stream(data)), send, stderr)  # type: ignore[arg-type]
    receive.close()
    return time.process_time() - started


async def _rebuilding(data: bytes) -> float:
    """The reader a client without a bound writes, as the SDK's stdio client reads: the
    buffer rebuilt with every chunk, each line validated as JSON-RPC."""
    stdout = _stream(data)
    started = time.process_time()
    buffer = ""
    while chunk := await stdout.read(CHUNK):
        lines = (buffer + chunk.decode()).split("\n")
        buffer = lines.pop()
        for line in lines:
            jsonrpc_message_adapter.validate_json(line)
    return time.process_time() - started


def _message(size: int) -> bytes:
    body = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * size}}
    return json.dumps(body).encode() + b"\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=float, default=3.9)
    parser.add_argument("--lines", type=int, default=20_000)
    args = parser.parse_args()
    cases = {
        f"one line of {args.megabytes:g} MiB": _message(int(args.megabytes * (1 << 20))),
        f"{args.lines} lines of 100 bytes": _message(30) * args.lines,
    }
    for name, data in cases.items():
        bounded = asyncio.run(_bounded(data))
        rebuilt = asyncio.run(_rebuilding(data))
        shown = f"bounded reader {bounded * 1000:.1f} ms CPU, rebuilding {rebuilt * 1000:.1f} ms"
        print(f"{name}: {shown}")


if __name__ == "__main__":
    main()
