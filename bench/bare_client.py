"""The floor for P1: a bare aiohttp client making P1's calls and nothing else.

`--fixtures` workers' worth of work at `--parallel`: each fixture is two sequential POSTs
(the tool-call turn and the final turn), as evalward's runs are. What this takes beyond the
ideal is the machine, the loopback and the benchmark server, not evalward.

    python bench/bare_client.py BASE_URL [--fixtures 1000] [--parallel 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import aiohttp

TOOLS = [
    {
        "type": "function",
        "function": {"name": "lookup", "description": "d", "parameters": {"type": "object"}},
    }
]


async def main(base_url: str, fixtures: int, parallel: int) -> None:
    url = base_url.rstrip("/") + "/chat/completions"
    limit = asyncio.Semaphore(parallel)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=parallel)) as session:

        async def post(messages: list[dict[str, object]]) -> dict[str, object]:
            body = json.dumps({"model": "m", "messages": messages, "tools": TOOLS}).encode()
            headers = {"content-type": "application/json"}
            async with session.post(url, data=body, headers=headers) as response:
                data: dict[str, object] = json.loads(await response.read())
                return data

        async def fixture(index: int) -> None:
            async with limit:
                messages: list[dict[str, object]] = [{"role": "user", "content": f"case {index}"}]
                first = await post(messages)
                messages.append(first["choices"][0]["message"])  # type: ignore[index]
                messages.append({"role": "tool", "tool_call_id": "call_0", "content": "found"})
                await post(messages)

        start = time.perf_counter()
        await asyncio.gather(*(fixture(i) for i in range(fixtures)))
        print(f"{time.perf_counter() - start:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("--fixtures", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=32)
    args = parser.parse_args()
    asyncio.run(main(args.base_url, args.fixtures, args.parallel))
