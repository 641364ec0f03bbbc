"""Google's Gemini API as the model proxy reads it: its routes (the model in the path, a
stream only as Server-Sent Events, no key in the URL), what it refuses before anything
leaves, the calls a reply asks for and the results a later request sends back (matched
without ids), its usage, its stream added up, and what `max-cost-usd` holds for a call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalward.http.sse import Event, EventReader
from evalward.providers.base import ChatResponse, RunLabels, ToolCall
from evalward.rundata.spending import UNSTATED_OUTPUT_TOKENS
from evalward.rundata.trace import Usage
from evalward.runtime.proxy.wire import FORMATS, gemini, worst_case
from evalward.runtime.proxy.wire.base import Kind, SeenResult
from evalward.runtime.proxy.wire.routes import Unnamed, WireRoute, route_of
from evalward.runtime.proxy.wire.unreported import DeltaTally
from fakes import wire_contract
from fakes import wire_render as render
from fakes.model_script import tool_call

pytestmark = pytest.mark.unit

WHOLE, STREAM = FORMATS[Kind.gemini], FORMATS[Kind.gemini_stream]
GOOGLE = {"x-goog-api-key": "k"}
ASKED = {"contents": [{"role": "user", "parts": [{"text": "Where is order 1?"}]}]}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


def answer(name: str, **response: Any) -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": response}}


def test_the_routes_name_the_model_and_a_stream_as_sse_only() -> None:
    whole = route_of("POST", "/v1beta/models/gemini-2.5-flash:generateContent", GOOGLE)
    assert whole == WireRoute(
        "gemini", Kind.gemini, "v1beta/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash"
    )
    stream = route_of("POST", "/v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse", {})
    assert isinstance(stream, WireRoute) and stream.kind is Kind.gemini_stream
    assert stream.upstream == "v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    for target in (
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",  # a JSON array, unread
        "/v1beta/models/gemini-2.5-flash:generateContent?key=AIza-secret",
        "/v1beta/models/..%2Ffiles:generateContent",
    ):
        assert isinstance(route_of("POST", target, GOOGLE), Unnamed), target
    assert route_of("POST", "/v1beta/models/gemini-2.5-flash:countTokens", GOOGLE) is None
    assert route_of("POST", "/v1beta/cachedContents", GOOGLE) is None
    assert route_of("GET", "/v1/models", GOOGLE) is None


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({**ASKED, "tools": [{"googleSearch": {}}]}, "tools[0].googleSearch"),
        ({**ASKED, "tools": [{"functionDeclarations": [], "codeExecution": {}}]}, "codeExecution"),
        ({**ASKED, "cachedContent": "cachedContents/abc"}, "`cachedContent`"),
        ({**ASKED, "generationConfig": {"candidateCount": 2}}, "candidateCount 2"),
        ({**ASKED, "generation_config": {"max_output_tokens": 9}}, "`generation_config`"),
        (
            {"contents": [{"role": "model", "parts": [{"function_call": {"name": "x"}}]}]},
            "`function_call`",
        ),
    ],
)
def test_what_evalward_could_not_see_or_bound_is_refused(body: dict[str, Any], named: str) -> None:
    said = WHOLE.unobserved(body)
    assert said is not None and named in said


def test_a_plain_request_with_functions_is_served_and_names_its_tools() -> None:
    tools = [{"functionDeclarations": [{"name": "lookup_order"}, {"name": "refund_order"}]}]
    body = {**ASKED, "tools": tools, "generationConfig": {"candidateCount": 1}}
    assert WHOLE.unobserved(body) is None
    assert WHOLE.offered(body) == ["lookup_order", "refund_order"]
    assert WHOLE.upstream({**body, "model": "gemini-2.5-flash"}) == body


def test_calls_without_ids_are_numbered_by_turn_and_their_results_found_by_name() -> None:
    """The same call twice, in two turns: two calls, each answered once."""
    first = {"candidates": [{"content": {"role": "model", "parts": [call("lookup", id="1")]}}]}
    turn = WHOLE.turn(first, ASKED)
    assert [(c.id, c.name, c.arguments) for c in turn.calls] == [
        ("gemini-0-0", "lookup", {"id": "1"})
    ]
    later = {
        "contents": [
            *ASKED["contents"],
            {"role": "model", "parts": [call("lookup", id="1")]},
            {"role": "user", "parts": [answer("lookup", status="shipped")]},
            {"role": "model", "parts": [{"text": "Again."}, call("lookup", id="1")]},
            {"role": "user", "parts": [answer("lookup", error="down")]},
        ]
    }
    assert WHOLE.results(later) == [
        SeenResult("gemini-0-0", '{"status": "shipped"}'),
        SeenResult("gemini-1-0", '{"error": "down"}', is_error=True),
    ]
    again = WHOLE.turn(first, later)
    assert [c.id for c in again.calls] == ["gemini-2-0"]


def test_a_part_that_acts_unseen_is_unread() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    reply = {"candidates": [{"content": {"role": "model", "parts": [code, {"text": "1"}]}}]}
    assert WHOLE.turn(reply).unread == ("a `executableCode` part",)


def test_usage_counts_the_tools_prompt_and_the_thinking() -> None:
    meta = {
        "promptTokenCount": 100,
        "cachedContentTokenCount": 60,
        "toolUsePromptTokenCount": 7,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 30,
    }
    assert WHOLE.usage({"usageMetadata": meta}) == Usage(input_tokens=107, output_tokens=50)


def test_a_stream_adds_up_to_the_whole_reply() -> None:
    reply = tool_call("lookup", {"id": "1"}, content="Let me look.", thoughts_tokens=4)
    body = {**ASKED, "model": "gemini-2.5-flash"}
    whole = render.gemini_body(reply, body, 1)
    chunks = render.gemini_chunks(reply, body, 1)
    assert len(chunks) > 2
    added = STREAM.accumulator(body)
    reader = EventReader()
    for _, data in chunks:
        for event in reader.feed(json.dumps(data).encode().join([b"data: ", b"\r\n\r\n"])):
            added.feed(event)
    summed = added.result()
    assert summed is not None
    assert STREAM.turn(summed, body) == WHOLE.turn(whole, body)
    assert STREAM.usage(summed) == WHOLE.usage(whole) == Usage(input_tokens=10, output_tokens=9)


def test_max_cost_usd_holds_max_output_tokens_and_refuses_what_bytes_do_not_bound() -> None:
    config = {"generationConfig": {"maxOutputTokens": 300}}
    held = worst_case.worst_usage(Kind.gemini, {**ASKED, **config}, 500)
    assert held.output_tokens == 300
    unstated = worst_case.worst_usage(Kind.gemini_stream, ASKED, 500)
    assert unstated.output_tokens == UNSTATED_OUTPUT_TOKENS
    for part in (
        {"fileData": {"mimeType": "application/pdf", "fileUri": "https://x/files/1"}},
        {"inlineData": {"mimeType": "video/mp4", "data": "AAAA"}},
        {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}},  # 258 tokens a tile
    ):
        body = {"contents": [{"role": "user", "parts": [part]}]}
        assert worst_case.unbounded(Kind.gemini_stream, body) is not None, part


def test_a_cut_stream_is_charged_the_output_its_chunks_carried() -> None:
    reply = tool_call("lookup", {"id": "1"}, content="Let me look it up for you.", pieces=4)
    tally = DeltaTally()
    for _, data in render.gemini_chunks(reply, {**ASKED, "model": "m"}, 1)[:3]:
        tally.feed(Event(None, json.dumps(data), b""))
    assert tally.tokens >= 3  # a token a chunk at least, its text at four characters a token


def test_a_mock_script_reads_the_conversation_and_answers_in_gemini_s_shape() -> None:
    body = {
        "model": "gemini-2.5-flash",
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            *ASKED["contents"],
            {"role": "model", "parts": [call("lookup", id="1")]},
            {"role": "user", "parts": [answer("lookup", status="shipped")]},
        ],
        "tools": [{"functionDeclarations": [{"name": "lookup", "parametersJsonSchema": {}}]}],
        "generationConfig": {"maxOutputTokens": 64, "temperature": 0},
    }
    request = WHOLE.chat_request(body, RunLabels())
    assert [(m.role, m.content, m.tool_call_id) for m in request.messages] == [
        ("system", "Be brief.", None),
        ("user", "Where is order 1?", None),
        ("assistant", "", None),
        ("tool", '{"status": "shipped"}', "gemini-0-0"),
    ]
    assert [t.name for t in request.tools] == ["lookup"]
    assert (request.max_tokens, request.temperature) == (64, 0.0)
    said = ChatResponse(
        "It shipped.", (ToolCall("x", "lookup", {"id": "2"}),), Usage(input_tokens=3)
    )
    reply = WHOLE.reply(said, body, 7)
    assert wire_contract.gemini_reply_problem(reply) is None
    assert [c.name for c in WHOLE.turn(reply, body).calls] == ["lookup"]


def test_the_agents_own_data_may_have_keys_in_snake_case() -> None:
    schema = {"type": "object", "properties": {"mime_type": {"type": "string"}}}
    body = {
        "contents": [
            *ASKED["contents"],
            {"role": "model", "parts": [call("describe", file_data="a.png")]},
            {"role": "user", "parts": [answer("describe", mime_type="image/png")]},
        ],
        "tools": [{"functionDeclarations": [{"name": "describe", "parametersJsonSchema": schema}]}],
    }
    assert WHOLE.unobserved(body) is None
    inline = {"inlineData": {"mime_type": "image/png", "data": "iVBOR"}}
    pictured = {"contents": [{"role": "user", "parts": [inline]}]}
    assert "`mime_type`" in (WHOLE.unobserved(pictured) or "")


def test_data_in_a_function_s_result_is_held_as_data_elsewhere_is() -> None:
    """A result's own parts: an image there in snake case is refused as a field, and in
    either spelling it is data `max-cost-usd` cannot bound."""
    picture = {"inline_data": {"mime_type": "image/png", "data": "iVBOR"}}
    result = {"functionResponse": {"name": "draw", "response": {}, "parts": [picture]}}
    body = {"contents": [*ASKED["contents"], {"role": "user", "parts": [result]}]}
    assert "`inline_data`" in (WHOLE.unobserved(body) or "")
    assert worst_case.unbounded(Kind.gemini, body) is not None


def test_the_output_limit_is_read_from_generation_config_alone() -> None:
    assert gemini.worst_output({"generationConfig": {"maxOutputTokens": 64}}) == 64
    for unstated in ({}, {"generationConfig": {"maxOutputTokens": True}}, {"maxOutputTokens": 9}):
        assert gemini.worst_output(unstated) is None, unstated


def test_data_the_bytes_do_not_bound_is_found_however_deep() -> None:
    nested: object = {"inline_data": {"mime_type": "image/png", "data": "iVBOR"}}
    for _ in range(30):  # 62 containers deep: the deepest the proxy parses is 64
        nested = {"parts": [nested]}
    found = gemini.unbounded_part(nested)
    assert found is not None and "image/png" in found
    assert gemini.unbounded_part({"parts": [{"text": "just words"}]}) is None
