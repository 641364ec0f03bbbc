"""What evalward sends and reads, judged by the providers' own published types.

Every request evalward builds (tools, tool results, system prompts, the judge's calls,
temperature, max_tokens, tool_choice) goes through the real provider to the scripted server,
which checks it against the official SDKs' request types (`fakes.wire_contract`; the `model`
fixture fails a test on any violation). Every reply shape, the fake's own and the odd ones real
servers send, is read by the SDK's response model and by evalward's parser in the same test.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
from anthropic.types import Message
from openai.types.chat import ChatCompletion

from evalward.errors import ProviderError
from evalward.providers import anthropic as anthropic_wire
from evalward.providers import openai as openai_wire
from evalward.providers.base import ChatMessage, ChatRequest, ChatResponse, ToolCall, ToolSpec
from evalward.providers.config import provider_config
from evalward.providers.registry import Providers, build_providers
from evalward.rundata.trace import StepType, Trace, Usage
from evalward.runtime.proxy.wire import FORMATS
from evalward.runtime.proxy.wire.base import Kind
from evalward.scoring.judges.judge import JUDGE_MAX_TOKENS, JudgeCase, JudgeSettings, ask_judge
from fakes.model_server import ScriptedModelServer, text, tool_call
from fakes.wire_contract import anthropic_request_problem, openai_request_problem

pytestmark = pytest.mark.integration

LOOKUP = ToolSpec(
    "lookup_order",
    "Look up an order.",
    {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)
CALL = ToolCall("call_1", "lookup_order", {"order_id": "12345"})

CONVERSATIONS: dict[str, ChatRequest] = {
    "system, user, tools, temperature, max_tokens": ChatRequest(
        model="m",
        messages=(
            ChatMessage("system", "Be brief."),
            ChatMessage("user", "Where is order 12345?"),
        ),
        tools=(LOOKUP,),
        temperature=0.2,
        max_tokens=256,
    ),
    "a tool call and its result sent back": ChatRequest(
        model="m",
        messages=(
            ChatMessage("system", "Be brief."),
            ChatMessage("user", "Where is order 12345?"),
            ChatMessage("assistant", "", tool_calls=(CALL,)),
            ChatMessage("tool", '{"status": "shipped"}', tool_call_id="call_1"),
        ),
        tools=(LOOKUP,),
    ),
    "text beside two tool calls, results in turn": ChatRequest(
        model="m",
        messages=(
            ChatMessage("user", "Orders 12345 and 67890?"),
            ChatMessage(
                "assistant",
                "Let me look both up.",
                tool_calls=(CALL, ToolCall("call_2", "lookup_order", {"order_id": "67890"})),
            ),
            ChatMessage("tool", "shipped", tool_call_id="call_1"),
            ChatMessage("tool", "lost", tool_call_id="call_2"),
            ChatMessage("assistant", "One shipped, one lost."),
            ChatMessage("user", "Thanks"),
        ),
        tools=(LOOKUP,),
        temperature=0,
    ),
    "no tools": ChatRequest(model="m", messages=(ChatMessage("user", "Hello"),)),
}


def providers_for(model: ScriptedModelServer) -> Providers:
    return build_providers(
        {
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "sk-test",
            "ANTHROPIC_BASE_URL": model.anthropic_url,
            "ANTHROPIC_API_KEY": "sk-ant-test",
        }
    )


def send(model: ScriptedModelServer, model_id: str, request: ChatRequest) -> ChatResponse:
    providers = providers_for(model)

    async def go() -> ChatResponse:
        try:
            provider, name = providers.resolve(model_id)
            return await provider.complete(
                ChatRequest(
                    name, request.messages, request.tools, request.temperature, request.max_tokens
                )
            )
        finally:
            await providers.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("model_id", ["openai/gpt-test", "anthropic/claude-test"])
@pytest.mark.parametrize("conversation", list(CONVERSATIONS))
def test_every_request_is_one_the_official_types_accept(
    model: ScriptedModelServer, model_id: str, conversation: str
) -> None:
    model.script("Hello", text("Hi."))
    model.script(lambda body: True, tool_call("lookup_order", {"order_id": "12345"}))
    request = CONVERSATIONS[conversation]
    response = send(model, model_id, request)
    assert response.content or response.tool_calls
    (call,) = model.calls
    # the `model` fixture also asserts no contract violation; check here to name the case
    assert model.contract_violations == []
    body = call.body
    if model_id.startswith("openai"):
        assert openai_request_problem(body) is None
        # llama-cpp-python's server drops tools unless tool_choice is given
        assert body.get("tool_choice") == ("auto" if request.tools else None)
        for message in body["messages"]:
            if message.get("tool_calls"):
                # a string, as the official types and llama-cpp-python's server both accept
                assert isinstance(message["content"], str)
    else:
        assert anthropic_request_problem(body, call.headers["anthropic-version"]) is None
        assert ("temperature" in body) is (request.temperature is not None)


def test_the_judge_call_is_one_the_official_types_accept(model: ScriptedModelServer) -> None:
    model.script(lambda body: True, text('{"score": 1, "summary": "fine", "violations": []}'))
    trace = Trace()
    trace.add(StepType.input, content="hi")
    trace.add(StepType.final, content="Hello!")
    case = JudgeCase("The reply is polite.", {"prompt": "hi"}, trace, reference="Hello")

    async def go() -> None:
        providers = providers_for(model)
        try:
            for judge in ("openai/judge-1", "anthropic/judge-2"):
                await ask_judge(case, JudgeSettings(providers, judge, temperature=0.0))
        finally:
            await providers.aclose()

    asyncio.run(go())
    openai_call, anthropic_call = model.calls
    assert openai_request_problem(openai_call.body) is None
    version = anthropic_call.headers["anthropic-version"]
    assert anthropic_request_problem(anthropic_call.body, version) is None
    assert openai_call.body["max_tokens"] == anthropic_call.body["max_tokens"] == JUDGE_MAX_TOKENS
    assert openai_call.body["temperature"] == 0


def test_anthropic_version_2026_10_21_gets_no_sampling_parameters(
    model: ScriptedModelServer,
) -> None:
    """That version of the Messages API refuses `temperature` with HTTP 400, even at 1.0."""
    model.script(lambda body: True, text("ok"))
    config = provider_config({"providers": {"anthropic": {"anthropicVersion": "2026-10-21"}}})
    env = {"ANTHROPIC_BASE_URL": model.anthropic_url, "ANTHROPIC_API_KEY": "sk-ant-test"}
    providers = build_providers(env, config=config)
    provider, name = providers.resolve("anthropic/claude-test")
    request = CONVERSATIONS["system, user, tools, temperature, max_tokens"]

    async def go() -> None:
        try:
            await provider.complete(ChatRequest(name, request.messages, request.tools, 0.0, 99))
        finally:
            await providers.aclose()

    asyncio.run(go())
    (call,) = model.calls
    assert call.headers["anthropic-version"] == "2026-10-21"
    assert "temperature" not in call.body and call.body["max_tokens"] == 99
    assert anthropic_request_problem(call.body, "2026-10-21") is None


def test_the_contract_check_refuses_what_the_apis_refuse() -> None:
    """The checker is not vacuous: an unknown key, a wrong role, a number for a string."""
    good = openai_wire.request_body(CONVERSATIONS["a tool call and its result sent back"])
    assert openai_request_problem(good) is None
    for broken in (
        {**good, "tool_choise": "auto"},
        {**good, "messages": [{"role": "robot", "content": "hi"}]},
        {**good, "messages": [{"role": "tool", "content": "x", "tool_call_id": 7}]},
        {**good, "tools": [{"type": "function", "function": {"description": "no name"}}]},
    ):
        assert openai_request_problem(broken) is not None, broken
    message = anthropic_wire.request_body(CONVERSATIONS["no tools"])
    assert anthropic_request_problem(message) is None
    assert anthropic_request_problem({k: v for k, v in message.items() if k != "max_tokens"})
    assert anthropic_request_problem({**message, "messages": [{"role": "robot", "content": "x"}]})
    # API version 2026-10-21 refuses sampling parameters; earlier ones take a number in [0, 1]
    assert anthropic_request_problem({**message, "temperature": 0.2}, "2026-10-21")
    assert anthropic_request_problem({**message, "temperature": 0.2}, "2023-06-01") is None
    assert anthropic_request_problem({**message, "temperature": 3}, "2023-06-01")


# --- replies: the SDK's response model and evalward's parser, side by side -------------------

OPENAI_BASE: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1_764_000_000,
    "model": "served-model",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "It shipped."},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}

LLAMA_CPP_PYTHON_TOOL_CALL: dict[str, Any] = {
    # as llama-cpp-python 0.3 answers with chat_format chatml-function-calling
    "id": "chatcmpl-e2d49562",
    "object": "chat.completion",
    "created": 1_795_429_143,
    "model": "smollm2",
    "choices": [
        {
            "index": 0,
            "message": {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call__0_lookup_order_cmpl-8679a450",
                        "type": "function",
                        "function": {
                            "name": "lookup_order",
                            "arguments": '{"order_id": "12345"}',
                        },
                    }
                ],
                "role": "assistant",
                "function_call": {
                    "name": "lookup_order:",
                    "arguments": '{"order_id": "12345"}',
                },
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 232, "completion_tokens": 12, "total_tokens": 244},
}


def _openai(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(OPENAI_BASE)
    for path, value in changes.items():
        target: Any = body
        *parents, last = path.split("__")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is _DROP:
            del target[last]
        else:
            target[last] = value
    return body


_DROP = object()

# name: (body, official shape?, content, tool calls, usage (in, out), stop reason)
OPENAI_SHAPES: dict[str, tuple[dict[str, Any], bool, str, list[str], tuple[int, int], str]] = {
    "plain": (_openai(), True, "It shipped.", [], (12, 3), "stop"),
    "no usage (some servers)": (_openai(usage=_DROP), True, "It shipped.", [], (0, 0), "stop"),
    "usage null": (_openai(usage=None), True, "It shipped.", [], (0, 0), "stop"),
    "cut at the token limit": (
        _openai(choices__0__finish_reason="length"),
        True,
        "It shipped.",
        [],
        (12, 3),
        "length",
    ),
    "reasoning_content beside content (llama-server, vLLM, DeepSeek)": (
        _openai(choices__0__message__reasoning_content="The user wants the order status."),
        True,
        "It shipped.",
        [],
        (12, 3),
        "stop",
    ),
    "extra fields everywhere": (
        {
            **_openai(choices__0__message__annotations=[], system_fingerprint="fp_1"),
            "timings": {"predicted_ms": 12.5},
            "service_tier": "default",
        },
        True,
        "It shipped.",
        [],
        (12, 3),
        "stop",
    ),
    "llama-cpp-python's tool call (content null, function_call beside)": (
        LLAMA_CPP_PYTHON_TOOL_CALL,
        True,
        "",
        ["lookup_order"],
        (232, 12),
        "tool_calls",
    ),
    "content as a list of text parts (Mistral-style servers)": (
        _openai(
            choices__0__message__content=[
                {"type": "text", "text": "It "},
                {"type": "image_url", "image_url": {"url": "data:,"}},
                {"type": "text", "text": "shipped."},
            ]
        ),
        False,
        "It shipped.",
        [],
        (12, 3),
        "stop",
    ),
    "no finish_reason and no model": (
        _openai(choices__0__finish_reason=None, model=_DROP),
        False,
        "It shipped.",
        [],
        (12, 3),
        "",
    ),
}


@pytest.mark.parametrize("shape", list(OPENAI_SHAPES))
def test_openai_reply_shapes_read_as_the_sdk_reads_them(shape: str) -> None:
    body, official, content, tools, (tokens_in, tokens_out), stop = OPENAI_SHAPES[shape]
    # a shape off the API's documented one is read as the SDK's client reads replies: leniently
    sdk = ChatCompletion.model_validate(body) if official else ChatCompletion.construct(**body)
    ours = openai_wire.parse_response(json.loads(json.dumps(body)), "asked-model")
    assert (ours.content, [c.name for c in ours.tool_calls]) == (content, tools)
    assert (ours.usage.input_tokens, ours.usage.output_tokens) == (tokens_in, tokens_out)
    assert ours.stop_reason == stop
    assert ours.truncated is (stop == "length")
    assert ours.model == (body.get("model") or "asked-model")
    if official:
        message = sdk.choices[0].message
        assert ours.content == (message.content or "")
        sdk_calls = [(c.id, c.function.name) for c in message.tool_calls or []]  # type: ignore[union-attr]
        assert [(c.id, c.name) for c in ours.tool_calls] == sdk_calls
        assert ours.usage.input_tokens == (sdk.usage.prompt_tokens if sdk.usage else 0)
    for call in ours.tool_calls:
        assert call.arguments == {"order_id": "12345"}


ANTHROPIC_BASE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "It shipped."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 20, "output_tokens": 4},
}

ANTHROPIC_SHAPES: dict[str, tuple[dict[str, Any], str, list[str], tuple[int, int], str]] = {
    "plain": (ANTHROPIC_BASE, "It shipped.", [], (20, 4), "end_turn"),
    "thinking before text, a tool call after": (
        {
            **ANTHROPIC_BASE,
            "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": "sig"},
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "lookup_order",
                    "input": {"order_id": "12345"},
                },
            ],
            "stop_reason": "tool_use",
        },
        "Checking.",
        ["lookup_order"],
        (20, 4),
        "tool_use",
    ),
    "cut at max_tokens": (
        {**ANTHROPIC_BASE, "stop_reason": "max_tokens"},
        "It shipped.",
        [],
        (20, 4),
        "max_tokens",
    ),
    "extra usage fields": (
        {
            **ANTHROPIC_BASE,
            "usage": {
                "input_tokens": 20,
                "output_tokens": 4,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": None,
                "service_tier": "standard",
            },
        },
        "It shipped.",
        [],
        (20, 4),
        "end_turn",
    ),
}


@pytest.mark.parametrize("shape", list(ANTHROPIC_SHAPES))
def test_anthropic_reply_shapes_read_as_the_sdk_reads_them(shape: str) -> None:
    body, content, tools, (tokens_in, tokens_out), stop = ANTHROPIC_SHAPES[shape]
    sdk = Message.model_validate(body)
    ours = anthropic_wire.parse_response(json.loads(json.dumps(body)), "asked")
    assert (ours.content, [c.name for c in ours.tool_calls]) == (content, tools)
    sdk_text = "".join(b.text for b in sdk.content if b.type == "text")
    assert ours.content == sdk_text
    assert (ours.usage.input_tokens, ours.usage.output_tokens) == (tokens_in, tokens_out)
    assert (sdk.usage.input_tokens, sdk.usage.output_tokens) == (tokens_in, tokens_out)
    assert ours.stop_reason == stop == sdk.stop_reason
    assert ours.truncated is (stop == "max_tokens")


MALFORMED_OPENAI = {
    "message a string": (_openai(choices__0__message="It shipped."), "choices[0].message"),
    "a tool call that is not an object": (
        _openai(choices__0__message__tool_calls=["lookup_order"]),
        "choices[0].message.tool_calls[0]",
    ),
    "prompt_tokens not a number": (_openai(usage__prompt_tokens="12"), "usage.prompt_tokens"),
    "prompt_tokens true": (_openai(usage__prompt_tokens=True), "usage.prompt_tokens"),
    "usage a list": (_openai(usage=[12, 3]), "usage"),
    "no choices": (_openai(choices=[]), "choices"),
    "content a number": (_openai(choices__0__message__content=42), "choices[0].message.content"),
    "a text part without text": (
        _openai(choices__0__message__content=[{"type": "text"}]),
        "choices[0].message.content[0].text",
    ),
    "tool arguments a number": (
        _openai(
            choices__0__message__tool_calls=[
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": 7}}
            ]
        ),
        "choices[0].message.tool_calls[0].function.arguments",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED_OPENAI))
def test_a_malformed_openai_reply_is_a_provider_error_naming_the_field(case: str) -> None:
    body, field = MALFORMED_OPENAI[case]
    with pytest.raises(ProviderError) as caught:
        openai_wire.parse_response(body, "m")
    assert f"malformed reply: {field} should be" in str(caught.value)


@pytest.mark.parametrize("shape", list(OPENAI_SHAPES))
def test_the_proxy_reads_an_openai_reply_with_the_providers_parser(shape: str) -> None:
    body, _, content, tools, (tokens_in, tokens_out), stop = OPENAI_SHAPES[shape]
    seen = FORMATS[Kind.chat].turn(json.loads(json.dumps(body)))
    ours = openai_wire.parse_response(json.loads(json.dumps(body)), "asked-model")
    assert (seen.text, [c.name for c in seen.calls], seen.stop_reason) == (content, tools, stop)
    assert [(c.id, c.arguments) for c in seen.calls] == [
        (c.id, c.arguments) for c in ours.tool_calls
    ]
    assert FORMATS[Kind.chat].usage(body) == Usage(input_tokens=tokens_in, output_tokens=tokens_out)


def test_the_proxy_meters_whole_float_token_counts_as_the_provider_reads_them() -> None:
    body = _openai(usage__prompt_tokens=12.0, usage__completion_tokens=3.0)
    assert openai_wire.parse_response(body, "m").usage == Usage(input_tokens=12, output_tokens=3)
    assert FORMATS[Kind.chat].usage(body) == Usage(input_tokens=12, output_tokens=3)


@pytest.mark.parametrize("case", list(MALFORMED_OPENAI))
def test_the_proxy_reads_a_malformed_openai_reply_it_passes_on_refusing_nothing(case: str) -> None:
    body, _ = MALFORMED_OPENAI[case]
    unread_usage = ("prompt_tokens not a number", "prompt_tokens true", "usage a list")
    unread_text = ("message a string", "no choices", "content a number", "a text part without text")
    seen = FORMATS[Kind.chat].turn(body)
    assert FORMATS[Kind.chat].usage(body).input_tokens == (0 if case in unread_usage else 12)
    assert seen.text == ("" if case in unread_text else "It shipped.")
    assert all(isinstance(c.arguments, dict) for c in seen.calls)


MALFORMED_ANTHROPIC = {
    "content a string": ({**ANTHROPIC_BASE, "content": "It shipped."}, "content"),
    "a block that is not an object": ({**ANTHROPIC_BASE, "content": ["hi"]}, "content[0]"),
    "tool input a string": (
        {
            **ANTHROPIC_BASE,
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "{}"}],
        },
        "content[0].input",
    ),
    "output_tokens a float": (
        {**ANTHROPIC_BASE, "usage": {"input_tokens": 1, "output_tokens": 2.5}},
        "usage.output_tokens",
    ),
    "stop_reason a number": ({**ANTHROPIC_BASE, "stop_reason": 3}, "stop_reason"),
}


@pytest.mark.parametrize("case", list(MALFORMED_ANTHROPIC))
def test_a_malformed_anthropic_reply_is_a_provider_error_naming_the_field(case: str) -> None:
    body, field = MALFORMED_ANTHROPIC[case]
    with pytest.raises(ProviderError) as caught:
        anthropic_wire.parse_response(body, "m")
    assert f"malformed reply: {field} should be" in str(caught.value)


@pytest.mark.parametrize("shape", list(ANTHROPIC_SHAPES))
def test_the_proxy_reads_an_anthropic_reply_with_the_providers_parser(shape: str) -> None:
    body, content, tools, (tokens_in, tokens_out), stop = ANTHROPIC_SHAPES[shape]
    seen = FORMATS[Kind.messages].turn(json.loads(json.dumps(body)))
    assert (seen.text, [c.name for c in seen.calls], seen.stop_reason) == (content, tools, stop)
    assert FORMATS[Kind.messages].usage(body) == Usage(
        input_tokens=tokens_in, output_tokens=tokens_out
    )


def test_the_proxy_reads_a_tool_call_without_an_id_and_whole_float_counts_as_the_provider() -> None:
    block = {"type": "tool_use", "name": "lookup_order", "input": {"order_id": "12345"}}
    body = {
        **ANTHROPIC_BASE,
        "content": [{"type": "text", "text": "Checking."}, block],
        "usage": {"input_tokens": 20.0, "output_tokens": 4.0},
    }
    ours = anthropic_wire.parse_response(body, "m")
    seen = FORMATS[Kind.messages].turn(body)
    assert [(c.id, c.name) for c in seen.calls] == [(c.id, c.name) for c in ours.tool_calls]
    assert [c.id for c in seen.calls] == ["toolu_1"]
    assert (
        FORMATS[Kind.messages].usage(body) == ours.usage == Usage(input_tokens=20, output_tokens=4)
    )


@pytest.mark.parametrize("case", list(MALFORMED_ANTHROPIC))
def test_the_proxy_reads_a_malformed_anthropic_reply_it_passes_on_refusing_nothing(
    case: str,
) -> None:
    body, _ = MALFORMED_ANTHROPIC[case]
    seen = FORMATS[Kind.messages].turn(body)
    unread_text = ("content a string", "a block that is not an object", "tool input a string")
    assert seen.text == ("" if case in unread_text else "It shipped.")
    assert FORMATS[Kind.messages].usage(body).input_tokens == (1 if "float" in case else 20)
