"""The scripted model server as the official SDKs see it: every wire shape it serves
(Chat Completions and Responses, Anthropic Messages, each streamed and not; embeddings; the
model lists) is consumed by the real `openai` / `anthropic` clients, which get exactly what
was scripted, and the fake's own contract check finds nothing to refuse in its requests or in
the replies and events it rendered (the `model` fixture fails a test on any violation).
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from fakes import wire_render
from fakes.model_server import Reply, ScriptedModelServer, error, text
from fakes.wire_contract import (
    anthropic_event_problem,
    chat_chunk_problem,
    embeddings_reply_problem,
    embeddings_request_problem,
    openai_request_problem,
    response_event_problem,
    response_problem,
    responses_request_problem,
)

pytestmark = pytest.mark.integration

ORDERS = [("lookup_order", {"order_id": "12345"}), ("lookup_order", {"order_id": "67890"})]
ORDER_SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}}
CHAT_TOOLS: Any = [
    {"type": "function", "function": {"name": "lookup_order", "parameters": ORDER_SCHEMA}}
]
RESPONSES_TOOLS: Any = [
    {"type": "function", "name": "lookup_order", "parameters": ORDER_SCHEMA, "strict": False}
]
ASK: Any = [{"role": "user", "content": "Where are orders 12345 and 67890?"}]
LOOKUP_REPLY = Reply(
    content="Let me look both up.", tool_calls=ORDERS, prompt_tokens=31, completion_tokens=17
)


@pytest.fixture
def gpt(model: ScriptedModelServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=model.base_url, api_key="sk-test", max_retries=0) as client:
        yield client


@pytest.fixture
def claude(model: ScriptedModelServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=model.anthropic_url, api_key="sk-ant-test", max_retries=0
    ) as client:
        yield client


def scripted_calls() -> list[tuple[str, str]]:
    return [(name, json.dumps(arguments)) for name, arguments in ORDERS]


# --- Chat Completions ------------------------------------------------------------------------


def test_a_streamed_chat_completion_accumulates_to_the_scripted_text_tool_calls_and_usage(
    model: ScriptedModelServer, gpt: openai.OpenAI
) -> None:
    model.script("orders", LOOKUP_REPLY)
    chunks = list(
        gpt.chat.completions.create(
            model="gpt-4.1-mini",
            messages=ASK,
            tools=CHAT_TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    *deltas, usage_chunk = chunks
    text_pieces = [c.choices[0].delta.content for c in deltas if c.choices[0].delta.content]
    assert "".join(text_pieces) == "Let me look both up." and len(text_pieces) == 3
    assert deltas[0].choices[0].delta.role == "assistant"
    calls: dict[int, dict[str, Any]] = {}
    fragments: dict[int, int] = {}
    for chunk in deltas:
        for call in chunk.choices[0].delta.tool_calls or []:
            assert call.function is not None
            entry = calls.setdefault(call.index, {"id": call.id, "name": "", "arguments": ""})
            entry["name"] += call.function.name or ""
            entry["arguments"] += call.function.arguments or ""
            fragments[call.index] = fragments.get(call.index, 0) + bool(call.function.arguments)
    assert [(c["name"], c["arguments"]) for c in calls.values()] == scripted_calls()
    assert [c["id"] for c in calls.values()] == ["call_0", "call_1"]
    assert fragments == {0: 3, 1: 3}  # the arguments arrive in pieces
    assert [c.choices[0].finish_reason for c in deltas][-1] == "tool_calls"
    assert all(c.usage is None for c in deltas)
    assert usage_chunk.choices == []
    assert usage_chunk.usage is not None
    assert (usage_chunk.usage.prompt_tokens, usage_chunk.usage.completion_tokens) == (31, 17)
    assert usage_chunk.usage.total_tokens == 48
    assert model.calls[0].events[-1] == (None, "[DONE]")


def test_the_sdks_stream_helper_builds_the_same_completion_as_the_plain_call(
    model: ScriptedModelServer, gpt: openai.OpenAI
) -> None:
    model.script("orders", LOOKUP_REPLY)
    plain = gpt.chat.completions.create(model="gpt-4.1-mini", messages=ASK, tools=CHAT_TOOLS)
    with gpt.chat.completions.stream(
        model="gpt-4.1-mini", messages=ASK, tools=CHAT_TOOLS
    ) as stream:
        streamed = stream.get_final_completion()
    for completion in (plain, streamed):
        (choice,) = completion.choices
        assert choice.message.content == "Let me look both up."
        assert choice.finish_reason == "tool_calls"
        calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]  # type: ignore[union-attr]
        assert calls == scripted_calls()
    assert model.calls[0].stream is None and model.calls[1].stream is not None


def test_no_usage_chunk_unless_the_request_asks_for_it(
    model: ScriptedModelServer, gpt: openai.OpenAI
) -> None:
    model.script("hello", text("Hi there."))
    hello: Any = [{"role": "user", "content": "hello"}]
    chunks = list(gpt.chat.completions.create(model="m", messages=hello, stream=True))
    assert all(c.choices and c.usage is None for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Hi there."
    raw = [data for _, data in model.calls[0].events if isinstance(data, dict)]
    assert all("usage" not in data for data in raw)


# --- Responses -------------------------------------------------------------------------------


def outputs(response: Any) -> list[tuple[str, ...]]:
    summary: list[tuple[str, ...]] = []
    for item in response.output:
        if item.type == "message":
            summary.append(("message", "".join(part.text for part in item.content)))
        else:
            summary.append((item.type, item.name, item.arguments))
    return summary


SCRIPTED_OUTPUT = [
    ("message", "Let me look both up."),
    *[("function_call", name, arguments) for name, arguments in scripted_calls()],
]


def test_a_response_plain_and_streamed_holds_the_scripted_text_and_function_calls(
    model: ScriptedModelServer, gpt: openai.OpenAI
) -> None:
    model.script("orders", LOOKUP_REPLY)
    plain = gpt.responses.create(model="gpt-4.1-mini", input=ASK, tools=RESPONSES_TOOLS)
    assert (plain.status, plain.output_text, outputs(plain)) == (
        "completed",
        "Let me look both up.",
        SCRIPTED_OUTPUT,
    )
    calls = [item for item in plain.output if item.type == "function_call"]
    assert len({c.call_id for c in calls}) == 2  # type: ignore[union-attr]
    assert plain.usage is not None
    assert (plain.usage.input_tokens, plain.usage.output_tokens) == (31, 17)
    assert plain.usage.total_tokens == 48
    assert plain.usage.input_tokens_details.cached_tokens == 0
    assert plain.usage.output_tokens_details.reasoning_tokens == 0

    events = list(
        gpt.responses.create(model="gpt-4.1-mini", input=ASK, tools=RESPONSES_TOOLS, stream=True)
    )
    assert [e.sequence_number for e in events] == list(range(len(events)))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    text_deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(text_deltas) == "Let me look both up." and len(text_deltas) == 3
    done_calls = [
        (e.output_index, e.arguments)
        for e in events
        if e.type == "response.function_call_arguments.done"
    ]
    assert done_calls == [(1, json.dumps(ORDERS[0][1])), (2, json.dumps(ORDERS[1][1]))]
    completed = events[-1].response  # type: ignore[union-attr]
    assert outputs(completed) == SCRIPTED_OUTPUT and completed.usage == plain.usage

    with gpt.responses.stream(model="gpt-4.1-mini", input=ASK, tools=RESPONSES_TOOLS) as stream:
        final = stream.get_final_response()
    assert outputs(final) == SCRIPTED_OUTPUT


def test_a_response_cut_at_its_token_limit_is_incomplete_streamed_or_not(
    model: ScriptedModelServer, gpt: openai.OpenAI
) -> None:
    model.script("essay", text("It was a dark and", finish_reason="length"))
    plain = gpt.responses.create(model="m", input="Write an essay", max_output_tokens=5)
    assert (plain.status, plain.output_text) == ("incomplete", "It was a dark and")
    assert plain.incomplete_details is not None
    assert plain.incomplete_details.reason == "max_output_tokens"
    assert plain.max_output_tokens == 5
    events = list(gpt.responses.create(model="m", input="Write an essay", stream=True))
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.status == "incomplete"  # type: ignore[union-attr]


def test_a_responses_turn_is_a_run_of_assistant_items_in_input_or_behind_the_previous_response(
    model: ScriptedModelServer, gpt: openai.OpenAI
) -> None:
    model.script("orders", Reply(tool_calls=ORDERS), text("Both shipped."), text("A third turn."))
    first = gpt.responses.create(model="m", input="Where are orders 12345 and 67890?")
    assert [item.type for item in first.output] == ["function_call", "function_call"]
    results: Any = [
        {"type": "function_call_output", "call_id": item.call_id, "output": "shipped"}  # type: ignore[union-attr]
        for item in first.output
    ]
    # the two function calls of one reply are one assistant turn, not two
    history = [item.model_dump(exclude_none=True) for item in first.output]
    second = gpt.responses.create(model="m", input=[*ASK, *history, *results])
    assert second.output_text == "Both shipped."
    # only the new items, the conversation behind previous_response_id: still matched by
    # what it mentions, and still its second turn
    chained = gpt.responses.create(model="m", input=results, previous_response_id=first.id)
    assert chained.output_text == "Both shipped."
    assert chained.previous_response_id == first.id
    thanks: Any = [{"role": "user", "content": "Thanks"}]
    third = gpt.responses.create(model="m", input=thanks, previous_response_id=chained.id)
    assert third.output_text == "A third turn."
    assert model.calls[3].body["input"] == thanks  # recorded as sent


def test_instructions_and_input_are_what_a_script_mentions(
    model: ScriptedModelServer, gpt: openai.OpenAI
) -> None:
    model.script("Answer in French", text("Bonjour."))
    model.script("order 555", text("Order 555 shipped."))
    french = gpt.responses.create(model="m", instructions="Answer in French", input="Hello")
    order = gpt.responses.create(model="m", input=[{"role": "user", "content": "order 555?"}])
    assert (french.output_text, order.output_text) == ("Bonjour.", "Order 555 shipped.")
    assert french.instructions == "Answer in French"
    assert len(model.requests_mentioning("Answer in French")) == 1


# --- Anthropic Messages ----------------------------------------------------------------------


def test_a_streamed_message_builds_the_scripted_content_and_tool_use(
    model: ScriptedModelServer, claude: anthropic.Anthropic
) -> None:
    model.script("orders", LOOKUP_REPLY)
    with claude.messages.stream(model="claude-haiku-4-5", max_tokens=200, messages=ASK) as stream:
        message = stream.get_final_message()
    plain = claude.messages.create(model="claude-haiku-4-5", max_tokens=200, messages=ASK)
    for reply in (message, plain):
        assert reply.content[0].type == "text" and reply.content[0].text == "Let me look both up."
        uses = [(b.id, b.name, b.input) for b in reply.content if b.type == "tool_use"]
        assert uses == [("toolu_0", *ORDERS[0]), ("toolu_1", *ORDERS[1])]
        assert reply.stop_reason == "tool_use"
        assert (reply.usage.input_tokens, reply.usage.output_tokens) == (31, 17)
    kinds = [name for name, _ in model.calls[0].events]
    assert kinds[:2] == ["message_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    deltas = [
        data["delta"]["type"]
        for name, data in model.calls[0].events
        if name == "content_block_delta"
    ]
    assert deltas.count("text_delta") == 3 and deltas.count("input_json_delta") == 6


# --- streams that fail -----------------------------------------------------------------------


def test_an_error_mid_stream_reaches_each_sdk_as_its_api_sends_it(
    model: ScriptedModelServer, gpt: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    model.script("hello", text("Hello there, friend.", stream_error="server_error"))
    model.script("bonjour", text("Bonjour, mon ami.", stream_error="overloaded_error"))
    hello: Any = [{"role": "user", "content": "hello"}]
    received: list[str] = []
    with pytest.raises(openai.APIError, match="scripted server_error"):
        for chunk in gpt.chat.completions.create(model="m", messages=hello, stream=True):
            received.append(chunk.choices[0].delta.content or "")
    assert 0 < len("".join(received)) < len("Hello there, friend.")
    events = list(gpt.responses.create(model="m", input="hello", stream=True))
    assert events[-1].type == "error" and events[-1].code == "server_error"
    assert "response.completed" not in [e.type for e in events]
    with pytest.raises(anthropic.APIStatusError) as failed:
        for _ in claude.messages.create(
            model="m", max_tokens=50, messages=[{"role": "user", "content": "bonjour"}], stream=True
        ):
            pass
    assert isinstance(failed.value.body, dict)
    assert failed.value.body["error"]["type"] == "overloaded_error"


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_a_cut_stream_stops_where_it_was_cut_and_never_completes(
    model: ScriptedModelServer, gpt: openai.OpenAI, claude: anthropic.Anthropic, api: str
) -> None:
    model.script("hello", text("Hello there, friend.", cut=True, break_after=4))
    hello: Any = [{"role": "user", "content": "hello"}]
    received = 0
    # each SDK raises its own transport error
    with pytest.raises(Exception) as failed:
        if api == "chat":
            stream: Any = gpt.chat.completions.create(model="m", messages=hello, stream=True)
        elif api == "responses":
            stream = gpt.responses.create(model="m", input="hello", stream=True)
        else:
            stream = claude.messages.create(model="m", max_tokens=9, messages=hello, stream=True)
        for _ in stream:
            received += 1
    assert "reset" in repr(failed.value).lower() or isinstance(failed.value, openai.APIError)
    call = model.calls[0]
    assert call.stream is not None
    assert call.stream.finished.wait(30) and not call.stream.completed
    assert len(call.stream.sent) == 4
    skipped = 1 if api == "messages" else 0  # the SDK does not hand the ping on
    assert received == 4 - skipped


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_a_stream_request_scripted_an_error_gets_it_as_a_json_reply(
    model: ScriptedModelServer, gpt: openai.OpenAI, claude: anthropic.Anthropic, api: str
) -> None:
    model.script("hello", error(429))
    hello: Any = [{"role": "user", "content": "hello"}]
    if api == "messages":
        with pytest.raises(anthropic.RateLimitError) as refused:
            claude.messages.create(model="m", max_tokens=9, messages=hello, stream=True)
        assert isinstance(refused.value.body, dict) and refused.value.body["type"] == "error"
    else:
        with pytest.raises(openai.RateLimitError, match="scripted error"):
            if api == "chat":
                gpt.chat.completions.create(model="m", messages=hello, stream=True)
            else:
                gpt.responses.create(model="m", input="hello", stream=True)
    assert model.calls[0].stream is None


# --- pacing: a stream is sent as it is produced ------------------------------------------------


def test_the_first_event_of_a_held_stream_reaches_the_client_before_the_last_is_sent(
    model: ScriptedModelServer, gpt: openai.OpenAI
) -> None:
    release = threading.Event()
    model.script("hello", text("one two three", event_delay=0.02, hold=release, hold_after=2))
    hello: Any = [{"role": "user", "content": "hello"}]
    chunks = iter(gpt.chat.completions.create(model="m", messages=hello, stream=True))
    first, second = next(chunks), next(chunks)
    stream = model.calls[0].stream
    assert stream is not None
    # the client holds two events while the server, held, has sent only those two
    assert len(stream.sent) == 2 and not stream.finished.is_set()
    assert first.choices[0].delta.role == "assistant"
    release.set()
    rest = list(chunks)
    assert stream.finished.wait(30) and stream.completed
    assert len(stream.sent) == 2 + len(rest) + 1  # and `[DONE]`, which the SDK swallows
    pieces = [c.choices[0].delta.content or "" for c in (second, *rest)]
    assert "".join(pieces) == "one two three"
    gaps = [later - earlier for earlier, later in zip(stream.sent, stream.sent[1:], strict=False)]
    assert all(gap >= 0.02 * 0.9 for gap in gaps)  # each event waited its delay


def test_a_stream_is_chunked_and_the_connection_kept_alive_after_it(
    model: ScriptedModelServer,
) -> None:
    model.script("hello", text("Hi there."))
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}], "stream": True}
    connection = http.client.HTTPConnection(model.server.url.removeprefix("http://"))
    try:
        replies = []
        for _ in range(2):
            connection.request(
                "POST",
                "/v1/chat/completions",
                json.dumps(body),
                {"content-type": "application/json"},
            )
            reply = connection.getresponse()
            headers = {k.lower(): v for k, v in reply.getheaders()}
            replies.append(reply.read().decode())
            sock = connection.sock
            assert headers["transfer-encoding"] == "chunked"
            assert headers["content-type"].startswith("text/event-stream")
            assert "content-length" not in headers and not reply.will_close
        assert connection.sock is sock is not None  # one connection served both
    finally:
        connection.close()
    for text_body in replies:
        events = text_body.split("\n\n")
        assert events[-2:] == ["data: [DONE]", ""]
        assert all(e.startswith("data: {") for e in events[:-2])


# --- embeddings and the model lists ----------------------------------------------------------


def test_embeddings_are_a_deterministic_vector_per_input(
    model: ScriptedModelServer, gpt: openai.OpenAI
) -> None:
    both = gpt.embeddings.create(
        model="text-embedding-3-small", input=["order 12345", "order 67890"], dimensions=8
    )
    vectors = [item.embedding for item in both.data]
    assert vectors == [wire_render.embedding(s, 8) for s in ("order 12345", "order 67890")]
    assert vectors[0] != vectors[1] and all(len(v) == 8 for v in vectors)
    assert all(abs(sum(x * x for x in v) - 1) < 1e-5 for v in vectors)
    alone = gpt.embeddings.create(
        model="text-embedding-3-small", input="order 67890", dimensions=8, encoding_format="float"
    )
    assert alone.data[0].embedding == vectors[1]  # base64 (the SDK's default) or float
    assert [c.body.get("encoding_format") for c in model.calls] == ["base64", "float"]
    tokens = gpt.embeddings.create(model="text-embedding-3-small", input=[[1, 2, 3], [4, 5]])
    assert [len(item.embedding) for item in tokens.data] == [1536, 1536]
    assert tokens.data[0].embedding == wire_render.embedding([1, 2, 3])
    assert (both.usage.prompt_tokens, tokens.usage.prompt_tokens) == (4, 5)
    assert tokens.usage.total_tokens == 5


def test_an_embeddings_request_scripted_an_error_gets_it(
    model: ScriptedModelServer, gpt: openai.OpenAI
) -> None:
    model.script_sequence("order 12345", error(503), Reply())
    with pytest.raises(openai.InternalServerError):
        gpt.embeddings.create(model="text-embedding-3-small", input="order 12345")
    again = gpt.embeddings.create(model="text-embedding-3-small", input="order 12345")
    assert again.data[0].embedding == wire_render.embedding("order 12345")


def test_the_model_list_in_each_providers_shape(
    model: ScriptedModelServer, gpt: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    model.models = ["gpt-4.1-mini", "claude-haiku-4-5", "claude-sonnet-4-5"]
    assert [m.id for m in gpt.models.list()] == model.models
    listed = list(claude.models.list(limit=2))  # the SDK pages through `has_more`
    assert [m.id for m in listed] == model.models
    assert all(m.type == "model" and m.display_name for m in listed)
    pages = [c for c in model.calls if "anthropic-version" in c.headers]
    assert len(pages) == 2 and all(c.path == "/v1/models" for c in model.calls)
    assert model.requests == [{}, {}, {}]


# --- the contract check judges every new shape -----------------------------------------------


def test_the_fake_checks_its_own_stream_events_and_every_request_shape(
    model: ScriptedModelServer, gpt: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    """Not vacuous through the server: a request, a reply or an event the SDK types refuse is
    reported."""
    model.script("hello", text("Hi.", finish_reason="exhausted"))
    model.script("bonjour", text("Salut.", stream_error="tea_error"))
    hello: Any = [{"role": "user", "content": "hello"}]
    list(gpt.chat.completions.create(model="m", messages=hello, stream=True))
    with pytest.raises(anthropic.APIStatusError):
        list(
            claude.messages.create(
                model="m",
                max_tokens=5,
                messages=[{"role": "user", "content": "bonjour"}],
                stream=True,
            )
        )
    connection = http.client.HTTPConnection(model.server.url.removeprefix("http://"))
    bad = {"model": "m", "input": [[1, "a"]]}
    connection.request("POST", "/v1/embeddings", json.dumps(bad))
    assert connection.getresponse().status == 200
    connection.close()
    found, model.contract_violations = model.contract_violations, []
    assert len(found) == 3
    assert found[2].startswith("openai embeddings request: `input` is not")
    assert found[0].startswith("openai stream event 4 rendered by the fake:")
    assert "finish_reason" in found[0]
    assert found[1].startswith("anthropic stream event") and "tea_error" in found[1]


def test_the_contract_check_refuses_what_the_sdk_types_refuse() -> None:
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    assert openai_request_problem(chat) is None
    assert openai_request_problem({**chat, "stream_options": {"include_usage": True}}) is None
    assert openai_request_problem({**chat, "stream_options": {"include_usage": "yes"}})
    assert openai_request_problem({**chat, "stream": "yes"})
    responses = {"model": "m", "input": "hi", "stream": True}
    assert responses_request_problem(responses) is None
    assert responses_request_problem({**responses, "messages": []})
    assert responses_request_problem({**responses, "input": [{"type": "function_call"}]})
    embeddings = {"model": "m", "input": [[1, 2], [3]], "dimensions": 8}
    assert embeddings_request_problem(embeddings) is None
    for broken in ([[1, "a"]], [], [1.5], {"text": "hi"}):
        assert embeddings_request_problem({**embeddings, "input": broken}), broken
    assert embeddings_request_problem({**embeddings, "dimension": 8})

    assert chat_chunk_problem({"object": "chat.completion.chunk", "id": "c"})
    assert (
        chat_chunk_problem({"error": {"message": "x", "type": "t", "code": None, "param": None}})
        is None
    )
    assert response_event_problem({"type": "response.output_text.delta", "delta": "x"})
    assert response_event_problem({"type": "response.teleported", "sequence_number": 0})
    assert response_problem({"id": "r", "object": "response", "output": []})
    assert anthropic_event_problem("ping", {"type": "ping"}) is None
    assert anthropic_event_problem("message_stop", {"type": "ping"})
    assert anthropic_event_problem("content_block_stop", {"type": "content_block_stop"})
    assert embeddings_reply_problem(
        {
            "object": "list",
            "model": "m",
            "data": [{"object": "embedding", "index": 0, "embedding": "%%"}],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
    )
