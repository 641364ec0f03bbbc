"""The `mock` provider: scripted replies from a file, for dry runs with no key and no network.

A script is YAML:

    replies:
      - match: { agent: support-bot, fixture: refund-must-clarify }
        turns:                       # one per model call within a run, in order
          - toolCalls: [{ name: lookup_order, arguments: { id: "12345" } }]
          - content: "Your order has shipped."
      - match: { purpose: judge }    # replies to the LLM judge
        turns:
          - content: '{"score": 1, "confidence": 0.9, "summary": "ok", "violations": []}'
    default: "Default output from the mock provider."

The first entry whose `match` keys all fit answers (keys: agent, fixture, eval, purpose and
`contains`, a substring of the last user message). Replies are stateless: the turn is the
number of assistant messages already in the conversation, so concurrent runs never interfere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalward.errors import ConfigError
from evalward.providers.base import ChatRequest, ChatResponse, ToolCall
from evalward.trace import Usage

DEFAULT_REPLY = "Default output from the mock provider."


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class MockToolCall(_Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class MockTurn(_Strict):
    content: str = ""
    tool_calls: list[MockToolCall] = Field(default_factory=list, alias="toolCalls")


class MockMatch(_Strict):
    agent: str | None = None
    fixture: str | None = None
    eval: str | None = None
    purpose: Literal["agent", "judge"] | None = None
    contains: str | None = None


class MockReply(_Strict):
    match: MockMatch = Field(default_factory=MockMatch)
    turns: list[MockTurn] = Field(min_length=1)


class MockScript(_Strict):
    replies: list[MockReply] = Field(default_factory=list)
    default: str = DEFAULT_REPLY


def load_script(path: Path) -> MockScript:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(
            f"mock script {path}: cannot read it ({exc.strerror}); "
            "set `mock-script` to an existing file"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"mock script {path}: invalid YAML: {exc}") from None
    try:
        return MockScript.model_validate(data or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"mock script {path}: {where}: {first['msg']}") from None


class MockProvider:
    name = "mock"

    def __init__(self, script: MockScript) -> None:
        self._script = script

    async def complete(self, request: ChatRequest) -> ChatResponse:
        turn_index = sum(1 for m in request.messages if m.role == "assistant")
        reply = self._find(request)
        if reply is None or turn_index >= len(reply.turns):
            turn = MockTurn(content=self._script.default)
        else:
            turn = reply.turns[turn_index]
        calls = tuple(
            ToolCall(id=f"call_{turn_index}_{i}", name=c.name, arguments=dict(c.arguments))
            for i, c in enumerate(turn.tool_calls)
        )
        # Tokens as an API counts them, at four characters a token: the tools offered are
        # part of the prompt, and the calls made part of the reply.
        prompt_chars = sum(len(m.content) for m in request.messages) + sum(
            len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in request.tools
        )
        reply_chars = len(turn.content) + sum(
            len(c.name) + len(json.dumps(c.arguments)) for c in turn.tool_calls
        )
        return ChatResponse(
            content=turn.content,
            tool_calls=calls,
            usage=Usage(input_tokens=prompt_chars // 4 + 1, output_tokens=reply_chars // 4 + 1),
            stop_reason="tool_calls" if calls else "stop",
            model=request.model,
        )

    def _find(self, request: ChatRequest) -> MockReply | None:
        labels = request.labels
        last_user = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        for reply in self._script.replies:
            match = reply.match
            if match.agent is not None and match.agent != labels.agent:
                continue
            if match.fixture is not None and match.fixture != labels.fixture:
                continue
            if match.eval is not None and match.eval != labels.eval:
                continue
            if match.purpose is not None and match.purpose != labels.purpose:
                continue
            if match.contains is not None and match.contains not in last_user:
                continue
            return reply
        return None

    async def aclose(self) -> None:
        return None
