"""evalward's own server against a hostile client: the model proxy, and the OpenTelemetry
receiver on its port (the one listener evalward runs; an http agent's server and a
playground's services are the agent's own).

An agent under test writes whatever bytes it likes to the proxy. Request smuggling (a length
and chunked, two lengths, a folded header, codings that are nearly `chunked`), heads too long
or too many, a head dripped a byte at a time, pipelined requests: each is refused (one 400,
the connection closed, nothing after it read as a request) or answered in order, no
traceback is printed for it, and the next good request is served.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import logging
import struct
import sys
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalward.providers.base import RunLabels
from evalward.rundata.trace import Trace
from evalward.runtime.proxy.model_proxy import Grant, ModelProxy
from evalward.runtime.telemetry.otlp import MAX_EXPORT_BYTES
from fakes.model_server import ScriptedModelServer, text, tool_call
from runtime.proxy.test_proxy_streams import ANTHROPIC_KEY, OPENAI_KEY, providers_for
from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.conformance

AGENTS = Path(__file__).resolve().parents[2] / "agents"

GUARD = 120.0
"""A server that has not answered or closed after this long hangs."""


@dataclass
class Served:
    proxy: ModelProxy
    grant: Grant
    port: int

    @property
    def key(self) -> bytes:
        return self.grant.key.encode()


@asynccontextmanager
async def serving(
    model: ScriptedModelServer, tmp_path: Path, idle_seconds: float = 75.0
) -> AsyncIterator[Served]:
    model.script("hello", text("Hi there."))
    model.script("again", text("Hello again."))
    providers = providers_for(model, tmp_path)
    proxy = ModelProxy(providers, None, [OPENAI_KEY, ANTHROPIC_KEY], idle_seconds=idle_seconds)
    await proxy.ensure_started()
    try:
        with proxy.granted(RunLabels(agent="a", fixture="fx"), Trace()) as grant:
            yield Served(proxy, grant, int(proxy.url.rpartition(":")[2]))
    finally:
        await proxy.aclose()
        await providers.aclose()


def chat(key: bytes, prompt: str = "hello") -> bytes:
    """A good request: a chat completion, with the run's key."""
    body = json.dumps(
        {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": prompt}]}
    ).encode()
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: Bearer " + key + b"\r\ncontent-type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


def export(key: bytes) -> bytes:
    """A good request to the receiver: an OTLP/JSON export with no spans."""
    body = b'{"resourceSpans": []}'
    return (
        b"POST /otlp/" + key + b"/v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"content-type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


@dataclass
class Answer:
    status: int
    body: bytes


async def exchange(
    port: int, data: bytes, replies: int, *, refused_closes: bool = True
) -> tuple[list[Answer], bytes | None]:
    """Write `data` on a new connection and read up to `replies` replies (each framed by its
    length), then, after a refusal, what came after it until the server closed the
    connection (None: it was not read, as after good requests)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers: list[Answer] = []
    try:
        async with asyncio.timeout(GUARD):
            writer.write(data)
            await writer.drain()
            while len(answers) < replies:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError as cut:
                    return answers, cut.partial
                answers.append(await _answer(reader, head))
            if not (refused_closes and answers and answers[-1].status >= 400):
                return answers, None
            return answers, await reader.read()
    finally:
        writer.close()


async def _answer(reader: asyncio.StreamReader, head: bytes) -> Answer:
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return Answer(int(lines[0].split()[1]), await reader.readexactly(length))


def says(answer: Answer) -> str:
    """A chat completion's text, or the body as it is."""
    try:
        return str(json.loads(answer.body)["choices"][0]["message"]["content"])
    except (ValueError, KeyError):
        return answer.body.decode()


async def still_serving(served: Served) -> None:
    """A good chat call and a good export, each on a new connection, are answered."""
    (answer,), _ = await exchange(served.port, chat(served.key), 1)
    assert (answer.status, says(answer)) == (200, "Hi there.")
    (answer,), _ = await exchange(served.port, export(served.key), 1)
    assert answer.status == 200


# --- smuggling and heads out of bounds ---------------------------------------------------


def smuggling(target: bytes, key: bytes) -> dict[str, bytes]:
    """Requests whose framing is ambiguous, each carrying a second, good request that a
    server reading the framing the other way would answer."""
    smuggled = chat(key, "again")
    start = (
        b"POST " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    )
    chunked_end = b"0\r\n\r\n" + smuggled
    n = str(len(smuggled)).encode()
    return {
        "length-and-chunked": start
        + b"Content-Length: "
        + str(len(chunked_end)).encode()
        + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
        + chunked_end,
        "chunked-and-length": start
        + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
        + chunked_end,
        "two-lengths": start
        + b"Content-Length: 0\r\nContent-Length: "
        + n
        + b"\r\n\r\n"
        + smuggled,
        "two-equal-lengths": start + b"Content-Length: 0\r\nContent-Length: 0\r\n\r\n" + smuggled,
        "a-list-of-lengths": start + b"Content-Length: 0, " + n + b"\r\n\r\n" + smuggled,
        "a-folded-transfer-encoding": start
        + b"Transfer-Encoding:\r\n chunked\r\nContent-Length: 0\r\n\r\n"
        + chunked_end,
        "a-folded-header": start + b"X-A: b\r\n c\r\nContent-Length: 0\r\n\r\n" + smuggled,
        "chunked-not-last": start + b"Transfer-Encoding: chunked, identity\r\n\r\n" + chunked_end,
        "nearly-chunked": start + b"Transfer-Encoding: xchunked\r\n\r\n" + chunked_end,
        "a-space-before-the-colon": start + b"Transfer-Encoding : chunked\r\n\r\n" + chunked_end,
        "bare-line-feeds": start.replace(b"\r\n", b"\n") + b"Content-Length: 0\n\n" + smuggled,
        "a-nul-in-a-value": start + b"X-A: b\x00c\r\nContent-Length: 0\r\n\r\n" + smuggled,
        "a-chunk-size-that-overflows": start
        + b"Transfer-Encoding: chunked\r\n\r\n"
        + b"f" * 20
        + b"\r\n"
        + smuggled,
        "a-request-line-too-long": b"GET /v1/models?" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n",
        "a-header-too-long": start + b"X-A: " + b"a" * 9000 + b"\r\n\r\n",
        "too-many-headers": start + b"X-A: a\r\n" * 200 + b"\r\n",
    }


CASES = list(smuggling(b"/", b"k"))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("target", ["model-proxy", "otlp-receiver"])
def test_a_request_framed_to_smuggle_or_too_big_is_refused_and_the_server_goes_on(
    model: ScriptedModelServer,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    case: str,
    target: str,
) -> None:
    async def go() -> None:
        async with serving(model, tmp_path) as served:
            path = b"/v1/chat/completions" if target == "model-proxy" else b"/otlp/%s/v1/traces"
            request = smuggling(path.replace(b"%s", served.key), served.key)[case]
            answers, after = await exchange(served.port, request, 2)
            assert [a.status for a in answers] == [400], answers
            assert after == b""  # closed, and nothing after the refusal read as a request
            assert served.grant.trace is not None and served.grant.trace.proxy_calls == []
            await still_serving(served)

    asyncio.run(go())
    assert [call.body["messages"][0]["content"] for call in model.calls] == ["hello"]
    # nothing said of it: not logged, and not printed by Python's last-resort handler
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    printed = capfd.readouterr().err
    assert "Traceback" not in printed and "Error handling request" not in printed


async def read_until_cut(closed: asyncio.Future[bytes]) -> bytes:
    """What the server sent before it closed the connection: a close with bytes of ours still
    unread on its side is a reset, which says the same (nothing) as an orderly end."""
    try:
        return await closed
    except ConnectionResetError:
        return b""


def test_a_head_dripped_a_byte_at_a_time_is_cut_off_and_others_are_served_meanwhile(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Each byte well within any timeout, the head never whole: the proxy closes the
    connection once it has waited its idle bound for a request, and answers others."""
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: " + b"a" * 8000

    async def go() -> tuple[int, bytes]:
        async with serving(model, tmp_path, idle_seconds=1.0) as served:
            reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
            closed = asyncio.ensure_future(reader.read())
            sent = 0
            try:
                async with asyncio.timeout(GUARD):
                    while sent < len(head) and not closed.done():
                        writer.write(head[sent : sent + 1])
                        await writer.drain()
                        sent += 1
                        if sent == 10:
                            await still_serving(served)
                        await asyncio.sleep(0.05)
                    return sent, await read_until_cut(closed)
            except ConnectionError:
                return sent, await read_until_cut(closed)
            finally:
                writer.close()

    sent, read = asyncio.run(go())
    assert sent < 8000 and read == b""  # cut off, with no reply
    assert [call.body["messages"][0]["content"] for call in model.calls] == ["hello"]


# --- pipelined requests -------------------------------------------------------------------


def test_pipelined_requests_are_answered_in_order_each_with_its_own_answer(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    async def go() -> list[Answer]:
        async with serving(model, tmp_path) as served:
            pipelined = chat(served.key, "hello") + export(served.key) + chat(served.key, "again")
            answers, _ = await exchange(served.port, pipelined, 3)
            return answers

    answers = asyncio.run(go())
    assert [(a.status, says(a)) for a in answers] == [
        (200, "Hi there."),
        (200, "{}"),
        (200, "Hello again."),
    ]


def test_a_bad_request_in_a_pipeline_ends_it_and_what_follows_is_never_answered(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    """The good request before the bad one is answered, or refused with it when both came
    in one read (aiohttp drops what it parsed of a read that ends in an error); the one
    after it never is."""

    async def go() -> tuple[list[Answer], bytes | None]:
        async with serving(model, tmp_path) as served:
            bad = smuggling(b"/v1/chat/completions", served.key)["length-and-chunked"]
            pipelined = chat(served.key, "hello") + bad + chat(served.key, "again")
            answers, after = await exchange(served.port, pipelined, 3)
            await still_serving(served)
            return answers, after

    answers, after = asyncio.run(go())
    assert [(a.status, says(a)) for a in answers[:-1]] in ([], [(200, "Hi there.")])
    assert answers[-1].status == 400 and after == b""
    assert "again" not in [call.body["messages"][0]["content"] for call in model.calls]


# --- a compressed request body ------------------------------------------------------------


@functools.cache
def gzip_of_zeros(mebibytes: int) -> bytes:
    """A gzip file of `mebibytes` MiB of zeros, made without deflating them all: each MiB is
    deflated after a full flush, which resets the compressor, so every MiB is the same bytes
    (zlib's level 9 over a gigabyte takes seconds of CPU; this, the CRC's pass alone)."""
    zeros = b"\0" * (1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # raw: the frame is ours
    compressor.compress(zeros)
    compressor.flush(zlib.Z_FULL_FLUSH)
    piece = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mebibytes):
        crc = zlib.crc32(zeros, crc)
    head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip, deflate, no name, level 9
    trailer = struct.pack("<II", crc, (mebibytes << 20) & 0xFFFFFFFF)
    return head + piece * mebibytes + compressor.flush() + trailer


def test_the_gzip_of_zeros_inflates_to_as_many_zeros() -> None:
    assert gzip.decompress(gzip_of_zeros(3)) == b"\0" * (3 << 20)


@pytest.mark.parametrize("target", ["model-proxy", "otlp-receiver"])
def test_a_compressed_request_body_that_inflates_past_the_bound_is_refused(
    model: ScriptedModelServer, tmp_path: Path, target: str
) -> None:
    """A gigabyte of zeros in a megabyte of gzip: the receiver inflates it only up to its
    bound, the model proxy not at all (tracemalloc's peak, the server's and this client's,
    stays near the bound), each refuses it and serves the next request."""
    body = gzip_of_zeros(1024)

    async def go() -> tuple[Answer, int]:
        async with serving(model, tmp_path) as served:
            path = b"/v1/chat/completions" if target == "model-proxy" else b"/otlp/%s/v1/traces"
            head = (
                b"POST " + path.replace(b"%s", served.key) + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Authorization: Bearer " + served.key + b"\r\ncontent-type: application/json"
                b"\r\nContent-Encoding: gzip\r\nContent-Length: " + str(len(body)).encode()
            )
            tracemalloc.start()
            try:
                start = tracemalloc.get_traced_memory()[0]
                (answer,), _ = await exchange(
                    served.port, head + b"\r\n\r\n" + body, 1, refused_closes=False
                )
                peak = tracemalloc.get_traced_memory()[1] - start
            finally:
                tracemalloc.stop()
            await still_serving(served)
            return answer, peak

    answer, peak = asyncio.run(go())
    assert answer.status == 400
    if target == "model-proxy":  # no SDK compresses a request: refused before a byte of it
        assert "not compressed (Content-Encoding)" in answer.body.decode()
    else:
        assert f"inflates to more than {MAX_EXPORT_BYTES:,} bytes" in answer.body.decode()
    assert peak < MAX_EXPORT_BYTES + 16_000_000, f"{peak:,} bytes at the peak"


NOT_GZIP = (
    b"evalward cannot read this export: the gzip body does not inflate "
    b"(Error -3 while decompressing data: incorrect header check)"
)


@pytest.mark.parametrize(
    ("coding", "compress", "expected"),
    [
        ("gzip", gzip.compress, Answer(200, b"{}")),
        ("deflate", zlib.compress, Answer(200, b"{}")),
        ("gzip", bytes, Answer(400, NOT_GZIP)),
    ],
    ids=["gzip", "deflate", "said-gzip-but-is-not"],
)
def test_an_export_compressed_as_exporters_do_is_inflated_by_the_receiver(
    model: ScriptedModelServer,
    tmp_path: Path,
    coding: str,
    compress: Callable[[bytes], bytes],
    expected: Answer,
) -> None:
    body = compress(b'{"resourceSpans": []}')

    async def go() -> Answer:
        async with serving(model, tmp_path) as served:
            request = (
                b"POST /otlp/" + served.key + b"/v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"content-type: application/json\r\ncontent-encoding: "
                + coding.encode()
                + b"\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
            (answer,), _ = await exchange(served.port, request, 1, refused_closes=False)
            return answer

    assert asyncio.run(go()) == expected


# --- from a pull request's agent, through `evalward run` ---------------------------------


def test_an_agent_that_smuggles_a_request_to_the_proxy_gets_a_400_and_no_traceback_shows(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """The real path: `evalward run` on a repository whose agent writes the smuggling request
    to the proxy itself, then calls its model as usual. The proxy refuses the first, the
    hidden request never reaches the model, the run goes on, and evalward's output holds
    no traceback."""
    repo.commit(
        "an agent that smuggles",
        {
            "agents.yaml": one_agent_suite(
                "smuggler",
                "ask",
                command=f"{{ run: [{sys.executable}, agent/proxy_agent.py] }}",
                prompt="smuggle: where is order 12345?",
                assertion="{ type: contains, value: '400 | 12345 shipped.' }",
            ),
            "agent/proxy_agent.py": (AGENTS / "proxy_agent.py").read_text(),
        },
    )
    model.script("where is order", tool_call("lookup", {"id": "12345"}), text("12345 shipped."))

    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path, **provider_env(model))

    assert done.returncode == 0, done.stdout + done.stderr
    (fixture,) = json.loads(done.stdout)["fixtures"]
    assert fixture["status"] == "pass", fixture["trace"]
    assert [c["status"] for c in fixture["trace"]["proxy_calls"]] == [200, 200]
    assert "smuggled" not in json.dumps([call.body for call in model.calls])
    assert "Traceback" not in done.stderr and "Error handling request" not in done.stderr
