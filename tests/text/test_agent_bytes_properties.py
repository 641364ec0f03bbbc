"""Property-based: any bytes, where an agent, a tool, a service or a model puts them (JSON
text as evalward reads it, an agent's trace events, an OpenTelemetry export, an http agent's
reply, a model's reply, a playground service's state and its delta, a request to the model
proxy over a real loopback connection), become text UTF-8 can write, each byte that is not
UTF-8 and each lone surrogate (raw or escaped) U+FFFD, or are refused with that reader's own
located error: never another exception, which would end the whole run with exit 4, and never
a traceback in the proxy's log. So does any text a fixture's result keeps (`cap_output`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evalward.errors import PlaygroundError, ProtocolError, ProviderError
from evalward.http.client import Reply
from evalward.providers import anthropic, openai
from evalward.providers.base import ChatResponse, RunLabels
from evalward.resources.playground import Playground
from evalward.rundata.results import OUTPUT_CAP_BYTES, cap_output
from evalward.rundata.trace import Trace
from evalward.runtime.agents.command import CommandOutput
from evalward.runtime.playground.base import LivePlayground, PlaygroundSource
from evalward.runtime.playground.service import state_json
from evalward.runtime.playground.state_delta import patched
from evalward.runtime.proxy.model_proxy import ModelProxy
from evalward.runtime.telemetry import otlp
from evalward.runtime.telemetry.protocol import apply_response
from evalward.text import jsontext
from fakes.model_server import Reply as ScriptedReply
from fakes.model_server import ScriptedModelServer
from runtime.proxy.test_proxy_streams import ANTHROPIC_KEY, OPENAI_KEY, providers_for
from runtime.proxy.test_servers import Served, exchange

pytestmark = pytest.mark.hostile

PROPERTY = settings(max_examples=150, deadline=None)
BAD = [
    b"\xed\xa0\x80",  # U+D800 spelt as UTF-8 would
    b"\xed\xbf\xbf",
    b"\xed\xa0\xbd\xed\xb8\x80",  # a pair, each half spelt so (CESU-8)
    b"\xff",
    b"\xc0\xaf",  # an overlong `/`
    b"\xf4\x90\x80\x80",  # past U+10FFFF
    b"\xe2\x82",  # cut short
    b"\\ud800",
    b"\\udfff",
    b"\\ud83d\\ude00",  # a pair, escaped: the one character it spells
    b"\\ud83d\\u0041",
]
UNQUOTED = bytes(range(32)) + b'"\\'
PIECES = st.lists(
    st.sampled_from(BAD) | st.binary(max_size=6) | st.text(max_size=4).map(str.encode),
    max_size=5,
).map(b"".join)
"""Bytes for inside a JSON string: what no string may hold (a quote, a backslash, a control
character) mostly taken out, so that most documents parse and reach their readers."""
STRINGS = PIECES.map(lambda piece: piece.translate(None, UNQUOTED[:-1])) | PIECES


def utf8(value: Any) -> bytes:
    """`value` as a record writes it: strict JSON in UTF-8 (a lone surrogate fails)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")


def written(trace: Trace) -> None:
    trace.model_dump_json()
    utf8(trace.model_dump(mode="json"))


def in_string(piece: bytes) -> bytes:
    """`piece` inside a JSON string (a key and a value), in an object and a list."""
    return b'{"k' + piece + b'": ["' + piece + b'", {"v": "' + piece + b'"}]}'


@PROPERTY
@given(st.binary(max_size=40) | PIECES | STRINGS.map(in_string), st.booleans())
@example(in_string(b"\xed\xa0\x80"), False)
@example(in_string(b"a\\ud800b"), True)
def test_json_text_of_any_bytes_is_writable_or_refused(raw: bytes, unique_keys: bool) -> None:
    for given_as in (raw, raw.decode("utf-8", "surrogateescape")):  # the str holds surrogates
        try:
            document = jsontext.loads(given_as, max_depth=jsontext.AGENT_DEPTH, unique_keys=True)
            jsontext.loads(given_as, unique_keys=unique_keys)
        except ValueError:
            continue
        utf8(document)


@PROPERTY
@given(STRINGS.map(lambda piece: piece.replace(b"\\", b"")))
@example(b"\xed\xa0\x80")
@example(b"a\xff\xfeb")
def test_a_json_string_holding_bytes_that_are_not_utf8_reads_as_a_utf8_decoder_does(
    piece: bytes,
) -> None:
    """The U+FFFD contract: what a string holds is its bytes decoded with replacement."""
    if any(byte < 32 or byte == ord('"') for byte in piece):
        return
    for unique_keys in (False, True):
        assert jsontext.loads(b'"' + piece + b'"', unique_keys=unique_keys) == piece.decode(
            "utf-8", "replace"
        )


@PROPERTY
@given(STRINGS, st.sampled_from(["events", "stdout"]), st.sampled_from(["events", "mixed"]))
@example(b"\xed\xa0\x80", "events", "events")
def test_trace_events_holding_any_bytes_are_taken_or_a_located_problem(
    piece: bytes, channel: str, stdout: str
) -> None:
    output = CommandOutput(Trace(), stdout)
    for line in (
        b'{"type": "tool_call", "tool": "t' + piece + b'", "id": "' + piece + b'", '
        b'"arguments": {"q' + piece + b'": "' + piece + b'"}}',
        b'{"type": "tool_call", "tool": "t", "arguments": "{\\"q\\": \\"' + piece + b'\\"}"}',
        b'{"type": "tool_result", "tool": "t", "output": "' + piece + b'"}',
        b'{"type": "error", "message": "' + piece + b'"}',
        b'{"type": "assistant", "content": "' + piece + b'", "model": "' + piece + b'"}',
        piece,
        b'{"type": "final", "content": "' + piece + b'"}',
    ):
        output.take(line + b"\n", channel)
    assert all("line" in problem for problem in output.problem)
    utf8([output.answer(), output.problem])
    written(output.trace)
    utf8(cap_output(output.trace.final_output))


@PROPERTY
@given(STRINGS)
def test_an_export_or_an_http_agents_reply_holding_any_bytes_is_taken_or_refused(
    piece: bytes,
) -> None:
    attributes = (
        b'[{"key": "gen_ai.tool.name", "value": {"stringValue": "' + piece + b'"}}, '
        b'{"key": "gen_ai.tool.call.arguments", "value": {"stringValue": "{\\"a\\": \\"'
        + piece
        + b'\\"}"}}]'
    )
    span = b'{"name": "execute_tool ' + piece + b'", "attributes": ' + attributes + b"}"
    trace, exports = Trace(), otlp.KeptSpans()
    otlp.take_export(trace, exports, b'{"spans": [' + span + b"]}", "application/json", "")
    otlp.merge_exports(trace, exports)
    written(trace)
    reply = b'{"trace": [{"type": "final", "content": "' + piece + b'"}], "final": "'
    trace = Trace()
    with contextlib.suppress(ValueError, ProtocolError):  # what the http agent's reader refuses
        apply_response(trace, jsontext.loads(reply + piece + b'"}', max_depth=64))
    written(trace)


@PROPERTY
@given(STRINGS, st.sampled_from(["openai", "anthropic"]))
@example(b"\xed\xa0\x80", "openai")
def test_a_model_reply_holding_any_bytes_is_a_response_or_a_provider_error(
    piece: bytes, api: str
) -> None:
    if api == "openai":
        body = (
            b'{"model": "m", "choices": [{"message": {"role": "assistant", "content": "'
            + piece
            + b'", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", '
            b'"arguments": "{\\"a\\": \\"' + piece + b'\\"}"}}]}, "finish_reason": "stop"}], '
            b'"usage": {"prompt_tokens": 1, "completion_tokens": 1}}'
        )
        parse = openai.parse_response
    else:
        body = (
            b'{"model": "m", "content": [{"type": "text", "text": "' + piece + b'"}, '
            b'{"type": "tool_use", "id": "t", "name": "f", "input": {"a": "' + piece + b'"}}], '
            b'"stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}'
        )
        parse = anthropic.parse_response
    try:
        response = parse(Reply(200, {}, body).json(), "m")
    except (ValueError, ProviderError):  # no JSON; a malformed reply
        return
    assert isinstance(response, ChatResponse)
    utf8([response.content, [(c.id, c.name, c.arguments) for c in response.tool_calls]])


@PROPERTY
@given(st.text(st.characters(exclude_categories=()), max_size=40), st.integers(1, 64))
@example("answer \ud800 end", OUTPUT_CAP_BYTES)
@example("\U0001f600\udc00" * 10, 7)
def test_the_output_a_result_keeps_is_utf8_whatever_the_text(text: str, limit: int) -> None:
    kept = cap_output(text, limit)
    assert len(kept.removesuffix("\n… [truncated]").encode("utf-8")) <= limit


def hostile_playground(folder: Path) -> LivePlayground:
    spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})
    return LivePlayground(PlaygroundSource("hostile", spec, folder), folder, None, 1.0, [])


@PROPERTY
@given(st.binary(max_size=40) | STRINGS.map(in_string))
@example(in_string(b"\xed\xa0\x80"))
def test_a_service_state_or_delta_holding_any_bytes_is_a_document_or_the_playgrounds_error(
    raw: bytes,
) -> None:
    live = hostile_playground(Path("/nonexistent"))
    try:
        document = state_json(live, raw, "GET /state")
    except PlaygroundError as exc:
        assert str(exc).startswith("playground 'hostile': GET /state "), exc
    else:
        utf8(document)
    delta = b'[{"op": "add", "path": "/' + raw + b'", "value": ' + raw + b"}]"
    headers = {"im": "json-patch"}
    try:
        document = patched(live, "GET /state", ('"t"', {"a": 1}, 8), Reply(226, headers, delta))
    except PlaygroundError as exc:
        assert str(exc).startswith("playground 'hostile': GET /state "), exc
    else:
        utf8(document)


# --- the model proxy, over a real loopback connection ---------------------------------------


@contextlib.asynccontextmanager
async def observing(model: ScriptedModelServer, tmp_path: Path) -> AsyncIterator[Served]:
    """The model proxy and a run's key, the run's traffic read into its trace as a
    bring-your-own agent's is."""
    providers = providers_for(model, tmp_path)
    proxy = ModelProxy(providers, None, [OPENAI_KEY, ANTHROPIC_KEY])
    await proxy.ensure_started()
    try:
        with proxy.granted(RunLabels(agent="a", fixture="fx"), Trace(), observe=True) as grant:
            yield Served(proxy, grant, int(proxy.url.rpartition(":")[2]))
    finally:
        await proxy.aclose()
        await providers.aclose()


@contextlib.contextmanager
def proxy_served(model: ScriptedModelServer, tmp_path: Path) -> Iterator[tuple[Served, Any]]:
    """The model proxy, serving on an event loop of its own thread, and that loop."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    opened = observing(model, tmp_path)
    try:
        yield asyncio.run_coroutine_threadsafe(opened.__aenter__(), loop).result(), loop
    finally:
        asyncio.run_coroutine_threadsafe(opened.__aexit__(None, None, None), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def request(key: bytes, path: bytes, body: bytes, header: bytes = b"x-a: b") -> bytes:
    return (
        b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + key
        + b"\r\nx-api-key: " + key + b"\r\n" + header + b"\r\ncontent-type: application/json"
        + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )  # fmt: skip


def chat_body(piece: bytes) -> bytes:
    """A chat completion whose every text (and the model's name) holds `piece`, with a
    tool call and its result that the proxy reads into the run's trace."""
    return (
        b'{"model": "gpt-4.1-mini' + piece + b'", "messages": ['
        b'{"role": "system", "content": "' + piece + b'"}, '
        b'{"role": "user", "content": "hello' + piece + b'"}, '
        b'{"role": "assistant", "content": null, "tool_calls": [{"id": "c' + piece + b'", '
        b'"type": "function", "function": {"name": "f' + piece + b'", '
        b'"arguments": "{\\"q\\": \\"' + piece + b'\\"}"}}]}, '
        b'{"role": "tool", "tool_call_id": "c' + piece + b'", "content": "' + piece + b'"}]}'
    )


def messages_body(piece: bytes) -> bytes:
    return (
        b'{"model": "claude-x' + piece + b'", "max_tokens": 5, "system": "' + piece + b'", '
        b'"messages": [{"role": "user", "content": "h' + piece + b'"}, '
        b'{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", '
        b'"input": {"q": "' + piece + b'"}}]}, {"role": "user", "content": ['
        b'{"type": "tool_result", "tool_use_id": "t", "content": "' + piece + b'"}]}]}'
    )


CHAT = b'{"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "reply-bytes"}]}'
MODEL_REPLY = (
    b'{"id": "x", "object": "chat.completion", "model": "gpt-4.1-mini", "choices": [{"index": 0, '
    b'"message": {"role": "assistant", "content": "a\xed\xa0\x80b", "tool_calls": [{"id": "c", '
    b'"type": "function", "function": {"name": "f", '
    b'"arguments": "{\\"q\\": \\"\xed\xa0\x80\\"}"}}]}, "finish_reason": "tool_calls"}], '
    b'"usage": {"prompt_tokens": 1, "completion_tokens": 1}}'
)


def test_a_request_to_the_model_proxy_holding_any_bytes_is_answered_or_refused_unlogged(
    model: ScriptedModelServer,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with proxy_served(model, tmp_path) as (served, loop):

        @settings(max_examples=60, deadline=None)
        @given(
            STRINGS | st.binary(max_size=12),
            st.sampled_from(["chat", "messages", "raw"]),
            st.sampled_from([b"x-a", b"anthropic-beta", b"anthropic-version", b"openai-beta"]),
        )
        @example(b"\xed\xa0\x80", "chat", b"x-a")
        @example(b"\xed\xa0\x80", "messages", b"anthropic-beta")
        @example(b"\\ud800", "chat", b"x-a")
        def answered(piece: bytes, shape: str, header: bytes) -> None:
            """A request whose body (or one header, named or not) holds `piece`."""
            if shape == "messages":
                path, body = b"/v1/messages", messages_body(piece)
            else:
                path, body = b"/v1/chat/completions", chat_body(piece) if shape == "chat" else piece
            bad = b"x-a: b" if shape == "raw" else header + b": " + piece
            sent = exchange(
                served.port, request(served.key, path, body, bad), 1, refused_closes=False
            )
            (answer,), _ = asyncio.run_coroutine_threadsafe(sent, loop).result()
            assert answer.status in (200, 400), answer
            assert served.grant.trace is not None
            written(served.grant.trace)

        answered()

        # a model's reply holding them, in its text and a tool call's arguments
        model.script("reply-bytes", ScriptedReply(raw=MODEL_REPLY))
        sent = exchange(served.port, request(served.key, b"/v1/chat/completions", CHAT), 1)
        (answer,), _ = asyncio.run_coroutine_threadsafe(sent, loop).result()
        assert answer.status == 200, answer
        assert served.grant.trace is not None
        written(served.grant.trace)
        steps = served.grant.trace.steps
        assert any(s.content == "a\ufffd\ufffd\ufffdb" for s in steps), steps
        assert any(s.arguments == {"q": "\ufffd\ufffd\ufffd"} for s in steps), steps

    # every request reached the model as UTF-8 JSON, its bad bytes U+FFFD
    assert model.calls
    for call in model.calls:
        utf8(call.body)
    printed = capfd.readouterr().err
    assert "Traceback" not in printed and "Error handling request" not in printed
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
