"""The `mock` provider in-process (`providers/mock.py`): the first entry whose keys all fit
answers, turn by turn and rep by rep, sides and commits apart; a script's mistakes are located
problems. Through `evalward run --mock-script`: tests/providers/test_mock_script.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalward.errors import ResourceError
from evalward.providers.base import ChatMessage, ChatRequest, RunLabels
from evalward.providers.mock import DEFAULT_REPLY, MockProvider, load_script
from evalward.runtime.proxy.wire import FORMATS
from evalward.runtime.proxy.wire.base import Kind

pytestmark = pytest.mark.unit

SCRIPT = """\
replies:
  - match: { agent: bot, fixture: refund }
    turns:
      - toolCalls: [{ name: lookup_order, arguments: { id: "7" } }]
      - content: "Shipped."
  - match: { fixture: flaky }
    reps:
      - turns: [{ content: right }]
      - turns: [{ content: wrong }]
  - match: { agent: bot, side: head }
    turns: [{ content: "head's answer" }]
  - match: { purpose: user, contains: reason }
    always: { content: "It arrived broken." }
  - match: { sha: "abc123" }
    turns: [{ content: "that commit's answer" }]
default: "nothing scripted"
"""


def _provider(tmp_path: Path, text: str = SCRIPT) -> MockProvider:
    path = tmp_path / "mock.yaml"
    path.write_text(text, encoding="utf-8")
    return MockProvider(load_script(path))


def _ask(provider: MockProvider, *said: str, **labels: object) -> tuple[str, list[str]]:
    roles = ["user", "assistant"]
    messages = tuple(ChatMessage(role=roles[i % 2], content=text) for i, text in enumerate(said))  # type: ignore[arg-type]
    request = ChatRequest(model="mock/m", messages=messages, labels=RunLabels(**labels))  # type: ignore[arg-type]
    reply = asyncio.run(provider.complete(request))
    return reply.content, [call.name for call in reply.tool_calls]


def test_a_run_s_turns_answer_in_order(tmp_path: Path) -> None:
    mock = _provider(tmp_path)
    assert _ask(mock, "refund 7", agent="bot", fixture="refund") == ("", ["lookup_order"])
    # the turn is the number of the agent's messages already in the conversation
    assert _ask(mock, "refund 7", "", agent="bot", fixture="refund") == ("Shipped.", [])
    assert _ask(mock, "refund 7", "", "ok", agent="bot", fixture="refund") == ("Shipped.", [])
    assert _ask(mock, "a", "b", "c", "d", "e", agent="bot", fixture="refund") == (
        "nothing scripted",
        [],
    )


def test_each_rep_has_its_own_turns_cycling(tmp_path: Path) -> None:
    mock = _provider(tmp_path)
    answers = [_ask(mock, "q", fixture="flaky", rep=rep)[0] for rep in range(4)]
    assert answers == ["right", "wrong", "right", "wrong"]


def test_sides_and_commits_are_answered_apart(tmp_path: Path) -> None:
    mock = _provider(tmp_path)
    assert _ask(mock, "q", agent="bot", side="head")[0] == "head's answer"
    assert _ask(mock, "q", agent="bot", side="base")[0] == "nothing scripted"
    assert _ask(mock, "q", sha="abc123" + "0" * 34)[0] == "that commit's answer"
    assert _ask(mock, "q", sha="abd123" + "0" * 34)[0] == "nothing scripted"


def test_a_simulated_user_answers_what_it_is_asked_always(tmp_path: Path) -> None:
    mock = _provider(tmp_path)
    asked = ("hi", "What is the reason?", "and the reason?", "x", "reason please")
    assert _ask(mock, *asked, purpose="user")[0] == "It arrived broken."
    assert _ask(mock, "hello", purpose="user")[0] == "nothing scripted"


def test_an_empty_script_answers_the_default(tmp_path: Path) -> None:
    assert _ask(_provider(tmp_path, ""), "q")[0] == DEFAULT_REPLY


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("replies: [{ match: { fixture: f } }]\n", "give a reply one of `turns`, `reps`"),
        ("replies: [{ match: { sha: 1234 }, turns: [{content: x}] }]\n", "quote it"),
        (
            "replies: [{ match: { side: left }, turns: [{content: x}] }]\n",
            "base, head; found 'left'",
        ),
        ("replies: [{ turns: [{ content: x, colour: red }] }]\n", "colour"),
    ],
)
def test_a_script_s_mistake_is_a_located_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mock.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ResourceError) as raised:
        load_script(path)
    (problem,) = raised.value.problems
    assert (problem.file, problem.line) == (str(path), 1)
    assert message in problem.message


def test_a_script_that_is_no_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ResourceError, match="cannot read the mock script"):
        load_script(tmp_path / "missing.yaml")
    with pytest.raises(ResourceError, match="give a file"):
        load_script(tmp_path)


LATE = """\
replies:
  - match: { toolResult: delayed }
    always: { content: late }
default: on time
"""
"""Late where a tool said an order is delayed; on time otherwise."""


def test_a_tool_result_key_answers_only_the_call_that_reads_that_result(tmp_path: Path) -> None:
    mock = _provider(tmp_path, LATE)

    def ask(*messages: ChatMessage) -> str:
        request = ChatRequest(model="mock/m", messages=messages, labels=RunLabels())
        return asyncio.run(mock.complete(request)).content

    question = ChatMessage(role="user", content="where is it? delayed?")
    called = ChatMessage(role="assistant", content="")
    late = ChatMessage(role="tool", content='{"status": "delayed"}', tool_call_id="1")
    shipped = ChatMessage(role="tool", content='{"status": "shipped"}', tool_call_id="2")
    assert ask(question) == "on time"  # a user's words are no tool's result
    assert ask(question, called, late) == "late"
    assert ask(question, called, shipped, late) == "late"  # any result of the last turn
    assert ask(question, called, shipped) == "on time"
    # a result answered already, before the model's last turn, answers nothing again
    assert ask(question, called, late, ChatMessage(role="assistant", content="late")) == "on time"
    followed = (question, called, late, ChatMessage(role="assistant", content="late"), question)
    assert ask(*followed) == "on time"


def _chat_tool(result: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return {
        "model": "gpt-4.1-mini",
        "messages": [
            {"role": "user", "content": "where is order 7?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": result},
        ],
    }


def _messages_tool(result: str) -> dict[str, Any]:
    block = {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": [{"type": "text", "text": result}],
    }
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "where is order 7?"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c1", "name": "lookup", "input": {}}],
            },
            {"role": "user", "content": [block]},
        ],
    }


def _responses_tool(result: str) -> dict[str, Any]:
    return {
        "model": "gpt-4.1-mini",
        "input": [
            {"role": "user", "content": "where is order 7?"},
            {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": result},
        ],
    }


@pytest.mark.parametrize(
    "body", [_chat_tool, _messages_tool, _responses_tool], ids=["chat", "messages", "responses"]
)
def test_a_program_s_tool_result_through_the_model_proxy_fits_a_tool_result_key(
    tmp_path: Path, body: Callable[[str], dict[str, Any]]
) -> None:
    """A bring-your-own agent's call reaches the mock as the proxy reads it for its API
    (`Format.chat_request`): the tool result it sends back, wherever that API carries it, is
    what `toolResult` reads."""
    mock = _provider(tmp_path, LATE)
    kind = {_chat_tool: Kind.chat, _messages_tool: Kind.messages, _responses_tool: Kind.responses}
    fmt = FORMATS[kind[body]]
    for result, said in (('{"status": "delayed"}', "late"), ('{"status": "shipped"}', "on time")):
        request = fmt.chat_request(body(result), RunLabels(agent="clerk"))
        assert asyncio.run(mock.complete(request)).content == said, (body, result)
