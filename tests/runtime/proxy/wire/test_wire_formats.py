"""The model proxy's wire formats against the official SDKs' published types: every reply
it writes for a mock script, every stream it replays from a whole reply, and the whole reply
it adds a stream back up to."""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest
from anthropic.types import Message, RawMessageStreamEvent
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from evalward.http.sse import EventReader
from evalward.providers.base import ChatResponse, ToolCall
from evalward.rundata.trace import Usage
from evalward.runtime.proxy.wire import FORMATS
from evalward.runtime.proxy.wire import embeddings as embeddings_wire
from evalward.runtime.proxy.wire.base import Kind

pytestmark = pytest.mark.unit

REPLIES = {
    "text": ChatResponse(
        "Your order 12345 has shipped.", usage=Usage(input_tokens=9, output_tokens=7)
    ),
    "tool": ChatResponse(
        "",
        (ToolCall("call_1", "lookup_order", {"order_id": "12345"}),),
        usage=Usage(input_tokens=12, output_tokens=4),
    ),
    "both": ChatResponse(
        "Let me look.",
        (
            ToolCall("call_a", "lookup_order", {"order_id": "1"}),
            ToolCall("call_b", "lookup_order", {"order_id": "2"}),
        ),
        usage=Usage(input_tokens=30, output_tokens=11),
    ),
}
WHOLE = {Kind.chat: ChatCompletion, Kind.responses: Response, Kind.messages: Message}
EVENT: dict[Kind, TypeAdapter[Any]] = {
    Kind.chat: TypeAdapter(ChatCompletionChunk),
    Kind.responses: TypeAdapter(ResponseStreamEvent),
    Kind.messages: TypeAdapter(RawMessageStreamEvent),
}
REQUEST = {"model": "m-1", "stream": True, "stream_options": {"include_usage": True}}


def replayed(kind: Kind, reply: dict[str, Any]) -> list[Any]:
    """The events a whole reply is streamed as, read back from their bytes."""
    reader = EventReader()
    events = []
    for chunk in FORMATS[kind].replay(REQUEST, reply):
        events += reader.feed(chunk)
    return events


@pytest.mark.parametrize("kind", list(WHOLE), ids=str)
@pytest.mark.parametrize("name", list(REPLIES))
def test_mock_replies_and_their_streams_are_what_the_sdks_read(kind: Kind, name: str) -> None:
    fmt = FORMATS[kind]
    reply = fmt.reply(REPLIES[name], REQUEST, 1)
    WHOLE[kind].model_validate(reply)  # the SDK's own type accepts the whole reply
    events = replayed(kind, reply)
    assert events, "a stream of no events"
    for event in events:
        if event.data != "[DONE]":
            EVENT[kind].validate_python(event.json())
    accumulator = fmt.accumulator(REQUEST)
    passed = [event for event in events if accumulator.feed(event)]
    assert passed == events  # the agent asked for usage: nothing is held back
    whole = accumulator.result()
    assert whole is not None and accumulator.error is None
    # the stream adds up to what the reply says: text, tool calls, tokens
    assert fmt.turn(whole) == fmt.turn(reply)
    assert fmt.usage(whole) == fmt.usage(reply) == REPLIES[name].usage


def test_a_chat_stream_keeps_the_usage_chunk_from_an_agent_that_did_not_ask_for_it() -> None:
    fmt = FORMATS[Kind.chat]
    asked_nothing = {"model": "m-1", "stream": True}
    upstream = fmt.upstream(dict(asked_nothing))
    assert upstream["stream_options"] == {"include_usage": True}  # asked for upstream
    reply = fmt.reply(REPLIES["text"], asked_nothing, 1)
    events = replayed(Kind.chat, reply)  # with its usage chunk, as upstream sends it
    accumulator = fmt.accumulator(asked_nothing)
    passed = [event for event in events if accumulator.feed(event)]
    usage_chunks = [e for e in events if e.data != "[DONE]" and e.json().get("usage")]
    assert len(usage_chunks) == 1 and usage_chunks[0] not in passed
    assert passed[-1].data == "[DONE]"
    whole = accumulator.result()
    assert whole is not None
    assert fmt.usage(whole) == REPLIES["text"].usage  # metered all the same


def test_a_stream_cut_short_keeps_what_was_done() -> None:
    fmt = FORMATS[Kind.responses]
    reply = fmt.reply(REPLIES["both"], REQUEST, 1)
    events = replayed(Kind.responses, reply)
    accumulator = fmt.accumulator(REQUEST)
    for event in events[:-1]:  # no response.completed
        accumulator.feed(event)
    whole = accumulator.result()
    assert whole is not None
    assert [c.name for c in fmt.turn(whole).calls] == ["lookup_order", "lookup_order"]


@pytest.mark.parametrize("encoding", ["float", "base64"])
def test_mock_embeddings_are_deterministic_unit_vectors_in_the_sdks_shape(encoding: str) -> None:
    body = {
        "model": "text-embedding-3-small",
        "input": ["alpha", "beta", "alpha"],
        "dimensions": 64,
    }
    body["encoding_format"] = encoding
    reply = embeddings_wire.mock_reply(body)
    vectors = []
    for item in reply["data"]:
        raw = item["embedding"]
        if encoding == "base64":  # as the SDK decodes it, before its type reads it
            item["embedding"] = raw = list(struct.unpack("<64f", base64.b64decode(raw)))
        vectors.append(raw)
    CreateEmbeddingResponse.model_validate(reply)
    assert [len(v) for v in vectors] == [64, 64, 64]
    assert vectors[0] == pytest.approx(vectors[2]) and vectors[0] != pytest.approx(vectors[1])
    assert sum(x * x for x in vectors[0]) == pytest.approx(1.0, abs=1e-5)
    assert embeddings_wire.usage(reply).input_tokens > 0
