"""P8: what the model proxy adds to an agent's model call: latency and CPU per call, whole
and streamed, against the same calls made straight to the upstream server.

Three processes: an upstream OpenAI-compatible server (aiohttp; a whole reply at once, or
a stream of 20 events, the first at once and one every `--gap-ms` after), evalward's model
proxy (`ModelProxy` with one granted key whose calls are recorded and read for steps, as a
fixture run's are), and this driver, the client. The client makes `--calls` sequential
calls (one in flight, so no queueing hides or adds anything) each way, alternating direct
and proxied. Reported: the median latency of whole calls each way and the difference; the
median time to the first streamed byte each way and the difference; the proxy process's CPU
(user + sys from /proc) per call, whole and streamed.

    python bench/p8_proxy.py [--calls 400] [--gap-ms 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
EVENTS = 20
REQUEST = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "Where is 12345?"}]}


def reply_body() -> dict[str, object]:
    message = {"role": "assistant", "content": "Your order 12345 has shipped."}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
    }


def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    data = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def serve_upstream(port_file: str, gap_ms: float) -> None:
    from aiohttp import web

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):
            return web.json_response(reply_body())
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(chunk({"role": "assistant", "content": ""}))
        for number in range(EVENTS - 3):
            await asyncio.sleep(gap_ms / 1000)
            await response.write(chunk({"content": f"word{number} "}))
        await response.write(chunk({}, "stop"))
        usage = {"prompt_tokens": 12, "completion_tokens": 17, "total_tokens": 29}
        await response.write(
            b"data: "
            + json.dumps(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "gpt-4.1-mini",
                    "choices": [],
                    "usage": usage,
                }
            ).encode()
            + b"\n\n"
        )
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        Path(port_file).write_text(str(port))
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_proxy(upstream: str, port_file: str) -> None:
    from evalward.providers.base import RunLabels
    from evalward.providers.registry import build_providers
    from evalward.rundata.trace import Trace
    from evalward.runtime.proxy.model_proxy import ModelProxy

    async def main() -> None:
        providers = build_providers({"OPENAI_BASE_URL": upstream, "OPENAI_API_KEY": "sk-bench"})
        proxy = ModelProxy(providers)
        await proxy.ensure_started()
        grant = proxy.open_grant(RunLabels(agent="bench", fixture="fx"), Trace(), observe=True)
        Path(port_file).write_text(
            json.dumps({"url": grant.env["OPENAI_BASE_URL"], "key": grant.key})
        )
        await asyncio.Event().wait()

    asyncio.run(main())


def started(*argv: str) -> tuple[subprocess.Popen[bytes], str]:
    port_file = Path(tempfile.mkdtemp()) / "port"
    process = subprocess.Popen([sys.executable, __file__, *argv, str(port_file)])
    deadline = time.monotonic() + 20
    while not port_file.exists() or not port_file.read_text():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{argv[0]} did not start")
        time.sleep(0.02)
    return process, port_file.read_text()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(
    direct: str, proxied: str, key: str, proxy_pid: int, calls: int
) -> dict[str, float]:
    import aiohttp

    targets = {"direct": (direct, "sk-bench"), "proxy": (proxied, key)}
    whole: dict[str, list[float]] = {"direct": [], "proxy": []}
    first: dict[str, list[float]] = {"direct": [], "proxy": []}
    cpu: dict[str, float] = {}
    async with aiohttp.ClientSession() as session:

        async def call(way: str, stream: bool) -> float:
            url, token = targets[way]
            body = {**REQUEST, "stream": stream}
            started_at = time.perf_counter()
            async with session.post(
                f"{url}/chat/completions", json=body, headers={"authorization": f"Bearer {token}"}
            ) as response:
                if stream:
                    await response.content.readany()
                    ttfb = time.perf_counter() - started_at
                    await response.read()
                    return ttfb
                await response.read()
                assert response.status == 200, response.status
                return time.perf_counter() - started_at

        for stream in (False, True):
            for _ in range(20):  # warm both paths: connections, the proxy's first call
                await call("direct", stream)
                await call("proxy", stream)
            spent = 0.0
            for _ in range(calls):
                for way in ("direct", "proxy"):
                    before = cpu_seconds(proxy_pid) if way == "proxy" else 0.0
                    value = await call(way, stream)
                    if way == "proxy":
                        spent += cpu_seconds(proxy_pid) - before
                    (first if stream else whole)[way].append(value * 1000)
            cpu["stream" if stream else "whole"] = spent / calls * 1000
    med = {
        f"{kind}_{way}": statistics.median(values[way])
        for kind, values in (("whole", whole), ("first_byte", first))
        for way in ("direct", "proxy")
    }
    return {**med, "cpu_whole_ms": cpu["whole"], "cpu_stream_ms": cpu["stream"]}


def main() -> None:
    if sys.argv[1:2] == ["--serve-upstream"]:
        serve_upstream(sys.argv[4], float(sys.argv[3]))
        return
    if sys.argv[1:2] == ["--serve-proxy"]:
        serve_proxy(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    args = parser.parse_args()
    upstream, port = started("--serve-upstream", "--gap", str(args.gap_ms))
    direct = f"http://127.0.0.1:{port}/v1"
    proxy, info = started("--serve-proxy", direct)
    try:
        where = json.loads(info)
        result = asyncio.run(measure(direct, where["url"], where["key"], proxy.pid, args.calls))
    finally:
        proxy.terminate()
        upstream.terminate()
    added = result["whole_proxy"] - result["whole_direct"]
    first = result["first_byte_proxy"] - result["first_byte_direct"]
    print(
        f"whole call, median: direct {result['whole_direct']:.2f} ms, through the proxy "
        f"{result['whole_proxy']:.2f} ms: +{added:.2f} ms"
    )
    print(
        f"streamed, first byte, median: direct {result['first_byte_direct']:.2f} ms, through "
        f"the proxy {result['first_byte_proxy']:.2f} ms: +{first:.2f} ms"
    )
    print(
        f"proxy CPU per call: whole {result['cpu_whole_ms']:.2f} ms, streamed "
        f"({EVENTS} events) {result['cpu_stream_ms']:.2f} ms"
    )


if __name__ == "__main__":
    main()
