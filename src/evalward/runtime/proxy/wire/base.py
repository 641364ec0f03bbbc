"""What the model proxy needs of each API it speaks, and the plain records it reads out.

Each wire format (`chat`, `responses`, `messages`, `embeddings`) says, for its own shapes:
what to send upstream, how a stream adds up to the whole reply (`Accumulator`), how a whole
reply is streamed again (a cached reply, a mock reply), what a reply cost in tokens, what
the model asked for (`Turn`: text and tool calls) and which tool results the agent sent back
(`SeenResult`), what of a request it refuses because evalward could not observe it
(`unobserved`), and — under a mock script — how a request reads as a `ChatRequest` and a
`ChatResponse` is written back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, Protocol

from evalward.errors import WireError
from evalward.http import sse
from evalward.http.sse import Event
from evalward.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    RunLabels,
    ToolCall,
    ToolSpec,
)
from evalward.providers.reply_fields import LenientReader
from evalward.rundata.trace import Usage
from evalward.text.cuts import cap_chars

Api = Literal["openai", "anthropic", "gemini"]
"""The provider whose key and base URL serve a route, and whose error shape it answers in."""

PASSED_ON = LenientReader("")
"""How the proxy reads a reply it passes on: with the provider's parser, refusing nothing
(so it never words an error, and the provider one would name is no matter: one reader serves
every format)."""


class Kind(StrEnum):
    chat = "chat"
    """OpenAI Chat Completions."""
    responses = "responses"
    """OpenAI Responses."""
    messages = "messages"
    """Anthropic Messages."""
    embeddings = "embeddings"
    """OpenAI embeddings."""
    gemini = "gemini"
    """Google's Gemini `generateContent`."""
    gemini_stream = "gemini_stream"
    """Google's Gemini `streamGenerateContent`, as Server-Sent Events."""


@dataclass(frozen=True)
class Turn:
    """What one reply of the model said: its text and the tool calls it asked for."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    stop_reason: str = ""
    unread: tuple[str, ...] = ()
    """What else the reply held that evalward does not read as text or tool calls, and
    through which the agent could act unseen ("2 choices", "an `mcp_call` item")."""


@dataclass(frozen=True)
class SeenResult:
    """A tool's result the agent sent the model, by the id of the call it answers."""

    call_id: str
    output: str
    is_error: bool = False


class Accumulator(Protocol):
    """Reads a streamed reply event by event into the whole reply it stands for."""

    error: str | None
    """What an error event in the stream said."""

    def feed(self, event: Event) -> bool:
        """Take one event; False when it is evalward's own and not passed to the agent."""
        ...

    def result(self) -> dict[str, Any] | None:
        """The whole reply, as the API would have answered without streaming; None when
        the stream ended before there was one."""
        ...


class Format(Protocol):
    """One API's shapes (see the module's docstring)."""

    kind: Kind

    def streamed(self, body: Mapping[str, Any]) -> bool: ...

    def upstream(self, body: dict[str, Any]) -> dict[str, Any]: ...

    def accumulator(self, body: Mapping[str, Any]) -> Accumulator: ...

    def replay(self, body: Mapping[str, Any], reply: Mapping[str, Any]) -> list[bytes]: ...

    def usage(self, reply: Mapping[str, Any]) -> Usage: ...

    def unobserved(self, body: Mapping[str, Any]) -> str | None:
        """Why the proxy refuses `body` before it reaches the provider: it asks for a reply
        whose tool calls evalward could not read (None: nothing)."""
        ...

    def turn(self, reply: Mapping[str, Any], request: Mapping[str, Any] | None = None) -> Turn:
        """What `reply` said; `request`, the request it answers, numbers the calls of an API
        whose calls have no ids (Gemini's)."""
        ...

    def results(self, body: Mapping[str, Any]) -> list[SeenResult]: ...

    def offered(self, body: Mapping[str, Any]) -> list[str]:
        """The names of the tools `body` offers the model, as a reply would call them: what
        a run offered is how a base fixture's guard of a renamed tool is held
        (plan/preflight/tool_refs.py, `unoffered_tools`)."""
        ...

    def chat_request(self, body: Mapping[str, Any], labels: RunLabels) -> ChatRequest: ...

    def reply(
        self, response: ChatResponse, body: Mapping[str, Any], number: int
    ) -> dict[str, Any]: ...


class TypedEvents:
    """What Anthropic Messages and the OpenAI Responses API share: a stream is asked for with
    `stream: true` and sent upstream as asked, a reply is replayed as a stream of its events
    each named by its `type` (`events_of`, the format's own), and a call is metered by
    `usage.input_tokens` and `usage.output_tokens`."""

    @staticmethod
    def streamed(body: Mapping[str, Any]) -> bool:
        return body.get("stream") is True

    @staticmethod
    def upstream(body: dict[str, Any]) -> dict[str, Any]:
        return body

    @staticmethod
    def events_of(reply: Mapping[str, Any]) -> list[dict[str, Any]]:
        raise NotImplementedError

    @classmethod
    def replay(cls, body: Mapping[str, Any], reply: Mapping[str, Any]) -> list[bytes]:
        del body
        return [sse.encode(data, str(data["type"])) for data in cls.events_of(reply)]

    @staticmethod
    def usage(reply: Mapping[str, Any]) -> Usage:
        usage = mapping(reply.get("usage"))
        return Usage(
            input_tokens=count(usage.get("input_tokens")),
            output_tokens=count(usage.get("output_tokens")),
        )


def chat_request(
    body: Mapping[str, Any],
    labels: RunLabels,
    messages: list[ChatMessage],
    tools: list[ToolSpec],
    max_tokens: object,
) -> ChatRequest:
    """The request a provider sends, from a body each wire format has already read its way."""
    temperature = body.get("temperature")
    try:
        sampled = float(temperature) if isinstance(temperature, int | float) else None
    except OverflowError:  # an integer of 400 digits: JSON has it, no float does
        raise WireError("`temperature` must be a number a float can hold") from None
    return ChatRequest(
        model=str(body.get("model", "")),
        messages=tuple(messages),
        tools=tuple(tools),
        temperature=sampled,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        labels=labels,
    )


def tool_spec(tool: Mapping[str, Any], schema: str) -> ToolSpec:
    """A tool the agent offers (its `name` checked by its format), its JSON schema under
    `schema`."""
    return ToolSpec(
        name=str(tool["name"]),
        description=str(tool.get("description") or ""),
        parameters=dict(tool.get(schema) or {}),
    )


def names_in(tools: object) -> list[str]:
    """The `name` of each tool of a list that has one."""
    return [str(tool["name"]) for tool in items(tools) if tool.get("name")]


def list_field(body: Mapping[str, Any], key: str, *, required: bool = False) -> list[Any]:
    value = body.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list) or (required and not value):
        raise WireError(f"`{key}` must be a {'non-empty ' if required else ''}list")
    return value


TEXT_PARTS = ("text", "input_text", "output_text")


def text_of(content: object) -> str:
    """A message's text: a string, or the text of its text parts / blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") in TEXT_PARTS
        )
    raise WireError(f"message content must be a string or a list of parts, got {content!r:.60}")


def lenient_text(content: object) -> str:
    """`text_of` for a reply or a tool result the proxy only reads: never refuses."""
    try:
        return text_of(content)
    except WireError:
        return str(content)


def count(value: object) -> int:
    """A token count read leniently (`LenientReader`): metering a reply passed on as it came
    must not fail."""
    return PASSED_ON.count(value, "")


def event_object(event: Event) -> dict[str, Any] | None:
    """An event's data when it is a JSON object; None for any other (`[DONE]`, a bare value),
    which the proxy passes on and reads nothing from."""
    try:
        data = event.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def index_of(data: Mapping[str, Any]) -> int:
    """The `index` of a choice, a tool call's fragment or a content block (0 when it has none)."""
    index = data.get("index")
    return index if isinstance(index, int) else 0


def mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def items(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def unread_parts(
    parts: list[Mapping[str, Any]], read: tuple[str, ...], noun: str
) -> tuple[str, ...]:
    """`Turn.unread`: each type of `parts` not among the `read` ones, once, as a reply's
    `noun` ("a `mcp_call` item")."""
    said = (
        f"a `{cap_chars(str(p.get('type')), 60)}` {noun}"
        for p in parts
        if p.get("type") not in read
    )
    return tuple(dict.fromkeys(said))
