"""An OpenAI-compatible model server for benchmarks: fixed latency, scripted tool calls, counts.

Raw asyncio HTTP/1.1 with keep-alive, so that the server's own CPU per request stays far below
the client's on a 2-core machine. Script: a request whose conversation has no assistant turn
and offers tools gets a call of the first tool; any other request gets a final answer that
echoes the last user message (so `contains` assertions can check it).

    python bench/model_server.py --latency-ms 50 --port-file /tmp/port
    GET /stats -> {"requests": N, "first": t, "last": t, "latency": {...}, "cpu": s}
    GET /stats?reset=1 -> the same, then clears first, last, the latency samples, the peak
    and cpu

`first` is when the first model request arrived and `last` when the last reply was sent
(Unix time), so a benchmark can split a client's wall time into start-up, the calls and
what follows them. `requests` counts every model request since the server started;
`peak_in_flight` is the most model requests it held at once since the last reset.

Latency. The delivered latency of a model request is measured from the moment the server has
its whole body (the handler's `readexactly` returned) to the moment the reply has been handed
to the socket (`transport.write`, which sends at once on an idle loopback connection); time on
the wire and in the client is not part of it. `latency` in /stats reports it since the last
reset: `n`, `mean_ms`, `p50_ms`, `p99_ms`, `min_ms`, `max_ms`, with `configured_ms` and
`compensation_ms` (below). `cpu` is the server process's CPU seconds (user + sys) since then.

What the server guarantees about it, for a latency of a few milliseconds or more:
  * the mean over a run of a few hundred requests or more is at or just above the configured
    latency, never below it: the pacing aims at configured + `--excess-ms` (0.03 ms), and
    the rare late outliers it only partly offsets keep it at +0.03-0.15 ms in practice;
  * no reply is sent earlier than configured - `--max-early-ms` (1 ms); in practice the
    median reply leaves within ~0.05 ms of the configured latency, early ones by less than
    the compensation (the loop's typical lateness, 0.1-0.3 ms here; the earliest of 2,000
    replies at 32 connections was 0.3-0.8 ms early), late ones by the machine's wake-up
    jitter (`p99_ms` ~1.5-2 ms above, `max_ms`).
How. A reply is written by a timer callback at arrival + latency - compensation (`call_at`;
building the reply is inside the latency, not added to it as with a `sleep` after it). Python's
epoll takes its timeout in whole milliseconds, rounded up, so on the 2-core benchmark VM every
timer fired 0.6-0.9 ms late on average (p99 ~2 ms); the loop therefore waits with select() on
the epoll fd (microsecond timeouts) and then collects events with a zero-timeout epoll poll,
which leaves the VM's wake-up latency, ~0.15 ms (`--selector epoll` restores plain epoll).
That systematic lateness is calibrated away as the server runs: after each reply the
compensation moves by 2% of the reply's error against the target (clipped to +-0.5 ms, so a
stall of the machine, which makes many replies late at once, barely moves it), and stays in
[0, max-early]. It starts at 0, so a fresh server's first replies are late, never early.
The server's CPU is ~0.2 ms per request at 32 connections (`cpu` in /stats).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import select
import selectors
import time
from pathlib import Path
from typing import Any, ClassVar

GAIN = 0.02  # how much of each reply's error the compensation absorbs
CLIP = 0.0005  # errors count up to 0.5 ms: a stall's late replies barely move the compensation


class FineEpollSelector(selectors.EpollSelector):
    """Epoll, but waits with microsecond timeouts: select() on the epoll fd, then poll(0)."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None or timeout > 0:
            select.select([self._selector.fileno()], [], [], timeout)  # type: ignore[attr-defined]
        return super().select(0)


class Stats:
    requests = 0
    in_flight = 0
    peak_in_flight = 0
    first: float | None = None
    last: float | None = None
    latencies: ClassVar[list[float]] = []
    cpu_since = time.process_time()


class Pacer:
    """When to send a reply so that the delivered latency's mean is `latency` + `excess`."""

    def __init__(self, latency: float, excess: float, max_early: float) -> None:
        self.latency = latency
        self.target = latency + excess
        self.max_early = max_early
        self.compensation = 0.0

    def due(self, arrival: float) -> float:
        return arrival + self.latency - self.compensation

    def delivered(self, seconds: float) -> None:
        Stats.latencies.append(seconds)
        error = min(max(seconds - self.target, -CLIP), CLIP)
        compensation = self.compensation + GAIN * error
        self.compensation = min(max(compensation, 0.0), self.max_early)


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
    # Tokens at four characters a token and four more a message, as an API counts them
    # roughly: the messages' text and tool calls and the tools offered; the reply's text and
    # tool calls.
    sent = sum(
        len(m.get("content") or "") + len(json.dumps(m.get("tool_calls", []))) for m in messages
    )
    prompt = (sent + len(json.dumps(tools))) // 4 + 4 * len(messages)
    completion = (
        len(message["content"] or "") + len(json.dumps(message.get("tool_calls", [])))
    ) // 4 + 1
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": body.get("model", "bench"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def response(payload: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(payload)}\r\n\r\n".encode()
        + payload
    )


def stats(pacer: Pacer, reset: bool) -> bytes:
    samples = sorted(Stats.latencies)
    n = len(samples)
    latency: dict[str, Any] = {
        "n": n,
        "configured_ms": pacer.latency * 1000,
        "compensation_ms": pacer.compensation * 1000,
    }
    if n:
        latency |= {
            "mean_ms": sum(samples) / n * 1000,
            "p50_ms": samples[n // 2] * 1000,
            "p99_ms": samples[max(math.ceil(0.99 * n) - 1, 0)] * 1000,
            "min_ms": samples[0] * 1000,
            "max_ms": samples[-1] * 1000,
        }
    cpu = time.process_time()
    payload = json.dumps(
        {
            "requests": Stats.requests,
            "peak_in_flight": Stats.peak_in_flight,
            "first": Stats.first,
            "last": Stats.last,
            "latency": latency,
            "cpu": cpu - Stats.cpu_since,
        }
    ).encode()
    if reset:
        Stats.first = Stats.last = None
        Stats.latencies = []
        Stats.peak_in_flight = Stats.in_flight
        Stats.cpu_since = cpu
    return payload


def send(
    loop: asyncio.AbstractEventLoop,
    writer: asyncio.StreamWriter,
    data: bytes,
    arrival: float,
    pacer: Pacer,
    sent: asyncio.Future[None],
) -> None:
    """The timer callback: write the reply, record what was delivered, resume the handler."""
    if not writer.is_closing():
        writer.write(data)
        pacer.delivered(loop.time() - arrival)
        Stats.last = time.time()
    if not sent.done():
        sent.set_result(None)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pacer: Pacer) -> None:
    loop = asyncio.get_running_loop()
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
            arrival = loop.time()
            if method == "GET" and path.startswith("/stats"):
                writer.write(response(stats(pacer, reset=path.endswith("reset=1"))))
            else:
                Stats.requests += 1
                Stats.in_flight += 1
                Stats.peak_in_flight = max(Stats.peak_in_flight, Stats.in_flight)
                if Stats.first is None:
                    Stats.first = time.time()
                data = response(json.dumps(reply(json.loads(raw or b"{}"))).encode())
                sent: asyncio.Future[None] = loop.create_future()
                loop.call_at(pacer.due(arrival), send, loop, writer, data, arrival, pacer, sent)
                try:
                    await sent
                finally:
                    Stats.in_flight -= 1
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def serve(port: int, pacer: Pacer, port_file: Path | None) -> None:
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, pacer), "127.0.0.1", port, backlog=1024
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
    parser.add_argument("--excess-ms", type=float, default=0.03, help="the mean's target margin")
    parser.add_argument("--max-early-ms", type=float, default=1.0, help="compensation's cap")
    parser.add_argument("--selector", choices=["fine", "epoll"], default="fine")
    parser.add_argument("--port-file", type=Path)
    args = parser.parse_args()
    pacer = Pacer(args.latency_ms / 1000, args.excess_ms / 1000, args.max_early_ms / 1000)
    selector = FineEpollSelector() if args.selector == "fine" else selectors.EpollSelector()
    loop = asyncio.SelectorEventLoop(selector)
    try:
        loop.run_until_complete(serve(args.port, pacer, args.port_file))
    finally:
        loop.close()


if __name__ == "__main__":
    main()
