"""The mock script's `system` key in-process: an entry fits a call whose system prompt holds its
text, with the other keys as ever; the system prompt as each way reaches the mock carries it (a
native agent's system message, a program's call through the model proxy in Chat Completions,
Messages or Responses); a `system` that is not text is a located problem. Through `evalward
run --base main`, tracing a regression to its hunk: tests/providers/test_mock_system_run.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from evalward.errors import ResourceError
from evalward.providers.base import ChatMessage, ChatRequest, RunLabels
from evalward.providers.mock import MockProvider, load_script
from evalward.runtime.proxy.wire import FORMATS
from evalward.runtime.proxy.wire.base import Kind

pytestmark = pytest.mark.unit

SCRIPT = """\
replies:
  - match: { agent: clerk, side: head, system: NEVER REFUND }
    turns: [{ content: "the head's refusal" }]
  - match: { system: NEVER REFUND }
    turns: [{ content: "no refunds" }]
  - match: { purpose: judge, system: strict grader }
    turns: [{ content: "a strict verdict" }]
  - match: { system: "" }
    turns: [{ content: "any system prompt, or none" }]
default: "nothing scripted"
"""


def _provider(tmp_path: Path, text: str = SCRIPT) -> MockProvider:
    path = tmp_path / "mock.yaml"
    path.write_text(text, encoding="utf-8")
    return MockProvider(load_script(path))


def _ask(provider: MockProvider, request: ChatRequest) -> str:
    return asyncio.run(provider.complete(request)).content


def _told(*systems: str, **labels: Any) -> ChatRequest:
    """A call with these system messages, then a user's."""
    said = [ChatMessage(role="system", content=text) for text in systems]
    messages = (*said, ChatMessage(role="user", content="refund order 7"))
    return ChatRequest(model="mock/m", messages=messages, labels=RunLabels(**labels))


def test_an_entry_fits_a_call_whose_system_prompt_holds_its_text(tmp_path: Path) -> None:
    mock = _provider(tmp_path, SCRIPT.replace('  - match: { system: "" }\n', "  - match: {}\n"))
    told = "You are a clerk.\nNEVER REFUND anything.\nBe brief."
    assert _ask(mock, _told(told)) == "no refunds"
    assert _ask(mock, _told("You are a clerk.\nBe brief.")) == "any system prompt, or none"
    assert _ask(mock, _told()) == "any system prompt, or none"  # no system prompt at all
    # the system prompt, not what the user says: a user's NEVER REFUND does not fit
    user = ChatRequest(
        model="mock/m", messages=(ChatMessage(role="user", content="NEVER REFUND me"),)
    )
    assert _ask(mock, user) == "any system prompt, or none"
    # case and spelling as written: a substring, nothing looser
    assert _ask(mock, _told("never refund anything")) == "any system prompt, or none"


def test_every_system_message_of_a_call_counts(tmp_path: Path) -> None:
    """A conversation's own instructions follow the agent's prompt as a second system
    message: text in either fits."""
    mock = _provider(tmp_path)
    assert _ask(mock, _told("You are a clerk.", "NEVER REFUND anything.")) == "no refunds"
    assert _ask(mock, _told("NEVER REFUND anything.", "Be brief.")) == "no refunds"


def test_the_key_fits_only_with_every_other_key_given(tmp_path: Path) -> None:
    mock = _provider(tmp_path)
    never = "NEVER REFUND anything."
    assert _ask(mock, _told(never, agent="clerk", side="head")) == "the head's refusal"
    # the first entry's other keys do not fit: the next entry that fits answers
    assert _ask(mock, _told(never, agent="clerk", side="base")) == "no refunds"
    assert _ask(mock, _told(never, agent="greeter", side="head")) == "no refunds"
    # purpose and system together: a judge's call told the rubric, not the agent's
    grader = "You are a strict grader."
    assert _ask(mock, _told(grader, purpose="judge")) == "a strict verdict"
    assert _ask(mock, _told(grader, purpose="agent")) == "any system prompt, or none"
    # an empty text fits every call, as an empty `contains` does
    assert _ask(mock, _told()) == "any system prompt, or none"


def _chat(system: str) -> dict[str, Any]:
    return {
        "model": "gpt-4.1-mini",
        "messages": [
            {"role": "system", "content": "You are a clerk."},
            {"role": "developer", "content": [{"type": "text", "text": system}]},
            {"role": "user", "content": "refund order 7"},
        ],
    }


def _messages(system: str) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": [
            {"type": "text", "text": "You are a clerk.\n"},
            {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [{"role": "user", "content": "refund order 7"}],
    }


def _responses(system: str) -> dict[str, Any]:
    return {"model": "gpt-4.1-mini", "instructions": system, "input": "refund order 7"}


def _responses_developer(system: str) -> dict[str, Any]:
    return {
        "model": "gpt-4.1-mini",
        "input": [
            {"role": "developer", "content": [{"type": "input_text", "text": system}]},
            {"role": "user", "content": "refund order 7"},
        ],
    }


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        (Kind.chat, _chat),
        (Kind.messages, _messages),
        (Kind.responses, _responses),
        (Kind.responses, _responses_developer),
    ],
    ids=["chat-developer", "messages-system-blocks", "responses-instructions", "responses-input"],
)
def test_a_program_s_call_through_the_model_proxy_fits_by_its_system_prompt(
    tmp_path: Path, kind: Kind, body: Any
) -> None:
    """A bring-your-own agent's request reaches the mock as the proxy reads it for its API
    (`Format.chat_request`): its system prompt, wherever that API carries it, is the one the
    key reads."""
    mock = _provider(tmp_path)
    fmt, labels = FORMATS[kind], RunLabels(agent="clerk", side="head")
    assert _ask(mock, fmt.chat_request(body("NEVER REFUND anything."), labels)) == (
        "the head's refusal"
    )
    assert _ask(mock, fmt.chat_request(body("Refunds are approved."), labels)) == (
        "any system prompt, or none"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("7", "expected a valid string; found 7"),
        ("[NEVER, REFUND]", "expected a valid string; found a list"),
        ("{ text: NEVER }", "expected a valid string; found a mapping"),
    ],
)
def test_a_system_that_is_not_text_is_a_located_problem(
    tmp_path: Path, value: str, message: str
) -> None:
    path = tmp_path / "mock.yaml"
    path.write_text(
        f"replies:\n  - match: {{ agent: clerk }}\n    turns: [{{ content: x }}]\n"
        f"  - match:\n      agent: clerk\n      system: {value}\n    turns: [{{ content: y }}]\n",
        encoding="utf-8",
    )
    with pytest.raises(ResourceError) as raised:
        load_script(path)
    (problem,) = raised.value.problems
    assert (problem.file, problem.line, problem.column) == (str(path), 6, 7)
    assert problem.path == "replies[1].match.system"
    assert problem.message == message
    assert f"{path}:6:7: replies[1].match.system: {message}" in problem.render()
