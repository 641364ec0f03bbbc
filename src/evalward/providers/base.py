"""The provider-neutral chat request and response every runner and judge speaks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from evalward.rundata.trace import CUT_AT_TOKEN_LIMIT, Usage


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    parts: tuple[dict[str, Any], ...] = ()
    """The content parts as the fixture wrote them (`{type: text, text, cache_control}`),
    sent as they are; `content` is their text, for everything that reads the message."""


@dataclass(frozen=True)
class ToolChoice:
    """Which tool a call must make: `auto`, `none`, `required` (some tool) or `tool` (`name`)."""

    mode: Literal["auto", "none", "required", "tool"] = "auto"
    name: str = ""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class CallTally:
    """The calls the providers answered for one run's scoring: what a result records of its
    judges' calls (`FixtureResult.judge_calls`), for a rerun that reads it from the cache."""

    calls: int = 0


@dataclass(frozen=True)
class RunLabels:
    """Who is asking: lets the mock provider script replies per agent and fixture."""

    agent: str = ""
    fixture: str = ""
    eval: str = ""
    rep: int = 0
    purpose: Literal["agent", "judge", "user", "pairwise"] = "agent"
    """Whose call: the agent's, a judge's, a simulated user's, or a pairwise judge's."""
    side: str = ""
    """`base` or `head`: which side of the comparison the run is ("" outside a run); for a
    pairwise judge's call, the side shown to it as A."""
    sha: str = ""
    """The commit that side was checked out from ("" when unknown, e.g. before a first commit)."""
    compared: bool = False
    """A head run of a comparison: a pull request's program, whose forwarded calls the
    response cache keeps apart from a push's (`ResponseCache.raw_key`)."""
    tally: CallTally | None = field(default=None, compare=False, repr=False)
    """Where the calls a provider answers for these labels are counted, if anywhere (one
    run's judges'); no part of who is asking."""


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    temperature: float | None = None
    max_tokens: int | None = None
    labels: RunLabels = field(default_factory=RunLabels)
    tool_choice: ToolChoice | None = None
    """None: the API's default (the model chooses)."""


@dataclass(frozen=True)
class ChatResponse:
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""
    model: str = ""
    cached: bool = False

    @property
    def truncated(self) -> bool:
        """The reply stopped at its token limit: not a whole answer."""
        return self.stop_reason in CUT_AT_TOKEN_LIMIT


class Provider(Protocol):
    """A model provider. Implementations retry transient failures themselves."""

    name: str

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    async def aclose(self) -> None: ...
