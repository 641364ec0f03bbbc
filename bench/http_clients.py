"""aiohttp against httpx for evalward's model calls: the same calls, made the way HttpClient
makes them (a pool of `--parallel` connections, a timeout per call, no redirects followed,
the body read to a bound), by one library or the other, one process per library; and by
evalward's HttpClient itself (`--client evalward`, what every provider call goes through),
to compare one version of it with another (run each with PYTHONPATH at its tree's src).

`--client pyreqwest`, `rnet` and `aiosonic` make the same calls with other asynchronous
clients (not evalward's dependencies: install the one to measure beside it), each with a
pool of `--parallel`, no redirect followed and the whole body read, to see whether another
well-kept library would spend less than aiohttp (docs/decisions/http-client.md).

Each fixture is two sequential POSTs (the tool-call turn and the final turn) as P1's are.
Start the benchmark model server at a latency, then time both processes alternated, e.g.

    python bench/model_server.py --latency-ms 500 --port-file /tmp/port &
    URL=http://127.0.0.1:$(cat /tmp/port)/v1
    /usr/bin/time -v python bench/http_clients.py $URL --client aiohttp --fixtures 320
    /usr/bin/time -v python bench/http_clients.py $URL --client httpx --fixtures 320

It prints the calls' wall time and the process's CPU per call, import and start-up included
and from the first call on, so the whole-process figures and the per-call figures can both
be read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

LIMIT = 64 * 1024 * 1024
TOOLS = [
    {
        "type": "function",
        "function": {"name": "lookup", "description": "d", "parameters": {"type": "object"}},
    }
]

Post = Callable[[bytes], Awaitable[bytes]]


async def with_aiohttp(url: str, parallel: int, run: Callable[[Post], Awaitable[None]]) -> None:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=parallel)
    async with aiohttp.ClientSession(
        connector=connector, cookie_jar=aiohttp.DummyCookieJar()
    ) as session:

        async def post(body: bytes) -> bytes:
            async with session.post(
                url,
                data=body,
                headers={"content-type": "application/json"},
                timeout=aiohttp.ClientTimeout(total=60, connect=10),
                allow_redirects=False,
            ) as response:
                chunks, size = [], 0
                async for chunk in response.content.iter_any():
                    size += len(chunk)
                    if size > LIMIT:
                        raise RuntimeError("too big")
                    chunks.append(chunk)
                return b"".join(chunks)

        await run(post)


async def with_httpx(url: str, parallel: int, run: Callable[[Post], Awaitable[None]]) -> None:
    import httpx

    limits = httpx.Limits(max_connections=parallel, max_keepalive_connections=parallel)
    async with httpx.AsyncClient(
        limits=limits, timeout=httpx.Timeout(60, connect=10), follow_redirects=False
    ) as client:

        async def post(body: bytes) -> bytes:
            request = client.build_request(
                "POST", url, content=body, headers={"content-type": "application/json"}
            )
            response = await client.send(request, stream=True)
            try:
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > LIMIT:
                        raise RuntimeError("too big")
                    chunks.append(chunk)
                return b"".join(chunks)
            finally:
                await response.aclose()

        await run(post)


async def with_pyreqwest(url: str, parallel: int, run: Callable[[Post], Awaitable[None]]) -> None:
    from pyreqwest.client import ClientBuilder

    async with ClientBuilder().max_connections(parallel).build() as client:

        async def post(body: bytes) -> bytes:
            request = client.post(url).body_bytes(body)
            request = request.header("content-type", "application/json").build()
            response = await request.send()
            return _bounded(bytes(await response.bytes()))

        await run(post)


async def with_rnet(url: str, parallel: int, run: Callable[[Post], Awaitable[None]]) -> None:
    import rnet

    client = rnet.Client(
        allow_redirects=False, timeout=60, connect_timeout=10, pool_max_size=parallel
    )

    async def post(body: bytes) -> bytes:
        response = await client.post(url, body=body, headers={"content-type": "application/json"})
        return _bounded(bytes(await response.bytes()))

    await run(post)


async def with_aiosonic(url: str, parallel: int, run: Callable[[Post], Awaitable[None]]) -> None:
    import aiosonic
    from aiosonic.connectors import TCPConnector
    from aiosonic.pools import PoolConfig

    client = aiosonic.HTTPClient(TCPConnector(pool_configs={":default": PoolConfig(size=parallel)}))

    async def post(body: bytes) -> bytes:
        response = await client.post(
            url, data=body, headers={"content-type": "application/json"}, follow=False
        )
        return _bounded(await response.content())

    await run(post)


def _bounded(body: bytes) -> bytes:
    if len(body) > LIMIT:
        raise RuntimeError("too big")
    return body


async def with_evalward(url: str, parallel: int, run: Callable[[Post], Awaitable[None]]) -> None:
    from evalward.http.client import HttpClient

    client = HttpClient(timeout_seconds=60, connect_timeout_seconds=10, max_connections=parallel)
    try:

        async def post(body: bytes) -> bytes:
            return (await client.post_json(url, json.loads(body))).body

        await run(post)
    finally:
        await client.aclose()


CLIENTS: dict[str, Callable[[str, int, Callable[[Post], Awaitable[None]]], Awaitable[None]]] = {
    "aiohttp": with_aiohttp,
    "httpx": with_httpx,
    "evalward": with_evalward,
    "pyreqwest": with_pyreqwest,
    "rnet": with_rnet,
    "aiosonic": with_aiosonic,
}


async def main(base_url: str, client: str, fixtures: int, parallel: int) -> None:
    url = base_url.rstrip("/") + "/chat/completions"
    limit = asyncio.Semaphore(parallel)

    async def run(post: Post) -> None:
        async def fixture(index: int) -> None:
            async with limit:
                messages: list[dict[str, Any]] = [{"role": "user", "content": f"case {index}"}]
                body = {"model": "m", "messages": messages, "tools": TOOLS}
                first = json.loads(await post(json.dumps(body).encode()))
                messages.append(first["choices"][0]["message"])
                messages.append({"role": "tool", "tool_call_id": "call_0", "content": "found"})
                json.loads(await post(json.dumps(body).encode()))

        start, started = time.perf_counter(), time.process_time()
        await asyncio.gather(*(fixture(i) for i in range(fixtures)))
        wall = time.perf_counter() - start
        cpu = time.process_time()
        calls = 2 * fixtures
        print(
            f"{client}: calls {wall:.3f} s wall, {cpu / calls * 1000:.3f} ms CPU/call, "
            f"{(cpu - started) / calls * 1000:.3f} ms from the first call"
        )

    await CLIENTS[client](url, parallel, run)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("--client", choices=list(CLIENTS), required=True)
    parser.add_argument("--fixtures", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=32)
    args = parser.parse_args()
    asyncio.run(main(args.base_url, args.client, args.fixtures, args.parallel))
