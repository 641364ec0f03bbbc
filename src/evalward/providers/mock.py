"""The `mock` provider: scripted replies from a file, for dry runs with no key and no network.

A script is YAML: `replies`, each a `match` and its `turns`, `reps` or `always`, and a
`default` (docs/providers.md#the-mock-provider says it all, with an example).

The first entry whose `match` keys all fit answers (keys: agent, fixture, eval, purpose, rep,
side, sha, `contains`, a substring of the last user message, `system`, a substring of the
system prompt, and `toolResult`, a substring of the tool results the call answers). `side`
and `sha` answer the base and the head differently, so a regression can be dry-run with no
key; `system` answers by what the agent is told and `toolResult` by what its tools said, so
attribution's variants of the head (some hunks of its prompt or of a tool's code taken back)
are answered by their own prompt and tools, and a regression can be traced to its hunk with
no key too. Replies are stateless: the turn is the number of assistant messages already in the
conversation, and the rep is the run's, so concurrent runs never interfere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from evalward.errors import Problem, ResourceError, UnsafeFile, YamlSyntaxError
from evalward.files.safe_files import read_regular
from evalward.providers.base import ChatRequest, ChatResponse, ToolCall
from evalward.resources.reading.problems import did_you_mean, problems_from_validation, render_path
from evalward.resources.reading.yamlsource import Document, PathKey, decode, parse_documents
from evalward.rundata.trace import Usage

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
    purpose: Literal["agent", "judge", "user", "pairwise"] | None = None
    rep: int | None = Field(default=None, ge=0)
    side: Literal["base", "head"] | None = None
    sha: str | None = Field(default=None, pattern=r"^[0-9a-f]{4,40}$")
    """The commit a side was checked out from, in full or its first four characters or more."""
    contains: str | None = None
    system: str | None = None
    """Text the call's system prompt holds: its system messages' text, as the model is sent
    it (a native agent's `system`, an Anthropic `system`, an OpenAI `system` or `developer`
    message, a Responses API's `instructions`)."""
    tool_result: str | None = Field(default=None, alias="toolResult")
    """Text the tool results the call answers hold: those after the model's last turn (a
    declarative agent's tools, an MCP server's, a program's through the model proxy)."""

    @field_validator("sha", mode="before")
    @classmethod
    def _quoted(cls, value: object) -> object:
        """A sha of digits only is a number to YAML, and would lose its leading zeros."""
        if isinstance(value, int) and not isinstance(value, bool):
            raise ValueError(f'a commit sha is text: quote it, as sha: "{value}"')
        return value

    @property
    def by_side(self) -> bool:
        """Whether this entry answers one side, or one commit, and not the other."""
        return self.side is not None or self.sha is not None


class MockRep(_Strict):
    turns: list[MockTurn] = Field(min_length=1)


class MockReply(_Strict):
    match: MockMatch = Field(default_factory=MockMatch)
    turns: list[MockTurn] | None = Field(default=None, min_length=1)
    reps: list[MockRep] | None = Field(default=None, min_length=1)
    """Per rep (0, 1, ...) its own turns; rep n takes item n modulo the list's length."""
    always: MockTurn | None = None
    """The one reply to every call that matches, whatever its turn (e.g. a simulated user's
    answer to a question, with `contains`)."""

    @model_validator(mode="after")
    def _turns_or_reps(self) -> MockReply:
        given = [k for k in ("turns", "reps", "always") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give a reply one of `turns`, `reps` (a list of `{turns: ...}`) or `always`"
            )
        return self

    def turns_of(self, rep: int) -> list[MockTurn]:
        if self.reps is not None:
            return self.reps[rep % len(self.reps)].turns
        return self.turns or []


class MockScript(_Strict):
    replies: list[MockReply] = Field(default_factory=list)
    default: str = DEFAULT_REPLY
    _origin: tuple[str, Document] | None = PrivateAttr(default=None)
    """The file it was loaded from, as shown, and its document: where its problems are."""

    @property
    def by_side(self) -> bool:
        """Whether the base and the head may get different replies to the same call."""
        return any(reply.match.by_side for reply in self.replies)


MAX_SCRIPT_BYTES = 64 * 1024 * 1024
"""The largest mock script read (a repository's file: read as `safe_files` reads)."""


def load_script(path: Path) -> MockScript:
    """The script at `path`; every mistake in it is a located problem (exit 2)."""
    shown = str(path)
    try:
        raw = read_regular(path, MAX_SCRIPT_BYTES)
    except UnsafeFile as exc:
        message = f"cannot read the mock script: it {exc.reason}; give a file"
        raise ResourceError([Problem(shown, None, None, "", message)]) from None
    except OSError as exc:
        message = f"cannot read the mock script ({exc.strerror}); give an existing file"
        raise ResourceError([Problem(shown, None, None, "", message)]) from None
    try:
        documents = parse_documents(decode(raw))
    except YamlSyntaxError as exc:
        raise ResourceError([Problem(shown, exc.line, exc.column, "", str(exc))]) from None
    document = documents[0] if documents else Document(None, 1)
    definition = _resource_definition(document, shown)
    if definition is not None:
        raise ResourceError([definition])
    try:
        script = MockScript.model_validate(document.data or {})
    except ValidationError as exc:
        problems = problems_from_validation(exc, document, shown, MockScript)
        raise ResourceError(problems) from None
    script._origin = (shown, document)
    return script


def _resource_definition(document: Document, shown: str) -> Problem | None:
    """Why a file of evalward's resources (an Eval's, an agent's) given as the script is not
    one, said once: each of its top-level fields refused as unknown hid the file's mix-up."""
    data = document.data
    if not isinstance(data, Mapping) or "apiVersion" not in data or "replies" in data:
        return None
    kind = data.get("kind")
    shape = (
        f"kind: {kind}" if isinstance(kind, str) and kind else f"apiVersion: {data['apiVersion']}"
    )
    line, column = document.locate(("apiVersion",))
    return Problem(
        shown,
        line,
        column,
        "",
        f"a resource definition (`{shape}`), not a mock script, which is a file of scripted "
        "replies shaped `replies: [{match, turns}, ...]` (docs/providers.md#the-mock-provider); "
        "give the script's file instead",
    )


@dataclass(frozen=True)
class Defined:
    """The names a run's calls may carry: its agents, its fixtures (and a JudgeCalibration
    replay's `example-N` and `pair-N`), its Evals and JudgeCalibrations; and those defined
    but not loaded, whose own problem says why."""

    agents: frozenset[str]
    fixtures: frozenset[str]
    evals: frozenset[str]
    invalid: frozenset[tuple[str, str]] = frozenset()
    tools: Mapping[str, Mapping[str, frozenset[str] | None] | None] = field(
        default_factory=dict, compare=False
    )
    """Each agent's tools by name, each with the names its arguments may have (None: any);
    None for an agent whose tools are known only in a run (its own program's, an MCP
    server's)."""


LISTED_NAMES = 10
"""The defined names a message lists at most."""
_REPLAYED = re.compile(r"^(?:example|pair)-[1-9][0-9]*\Z")
"""The fixture a JudgeCalibration's replay calls by (`example-1`, `pair-1`)."""


def undefined_names(script: MockScript, defined: Defined) -> tuple[list[Problem], list[Problem]]:
    """Each `match` of the script naming an agent, fixture or Eval no definition has, which
    fits no call: refused when the name is close to a defined one (a misspelling, whose
    calls would get another entry's reply or `default`), else a warning (an entry for what
    was removed, or for another suite of a shared script)."""
    refused: list[Problem] = []
    warned: list[Problem] = []
    if script._origin is None:
        return refused, warned
    shown, document = script._origin
    if not script.replies:
        line, column = document.locate(("replies",)) if document.data else (None, None)
        warned.append(
            Problem(
                shown,
                line,
                column,
                "replies",
                f"the mock script lists no reply: every call is answered with its `default` "
                f"({script.default[:60]!r}) whatever it asks, so a run checks that text, not "
                "what the agent does; list a reply for each agent's calls (`replies: [{match: "
                "{agent: …}, always: {content: …}}]`)",
            )
        )
    for index, reply in enumerate(script.replies):
        match = reply.match
        for key, name, names, kinds, plural in (
            ("agent", match.agent, defined.agents, ("Agent",), "agents"),
            ("fixture", match.fixture, defined.fixtures, ("EvalFixture",), "fixtures"),
            ("eval", match.eval, defined.evals, ("Eval", "JudgeCalibration"), "Evals"),
        ):
            if name is None or name in names or any((k, name) in defined.invalid for k in kinds):
                continue
            if key == "fixture" and _REPLAYED.match(name):
                continue
            listed = sorted(names)
            close = did_you_mean(name, listed)
            more = ", ..." if len(listed) > LISTED_NAMES else ""
            hint = close or (
                f" (the {plural} are {', '.join(listed[:LISTED_NAMES])}{more})" if listed else ""
            )
            said = (
                f"the entry is for {key} {name!r}, which is not defined{hint}: it would fit no call"
            )
            loc: PathKey = ("replies", index, "match", key)
            line, column = document.locate(loc)
            if close:
                message = (
                    f"{said}, and the calls it was written for would get another entry's "
                    "reply or `default`"
                )
                refused.append(Problem(shown, line, column, render_path(loc), message))
            else:
                message = f"{said}; remove it if it is stale, or name what it is for"
                warned.append(Problem(shown, line, column, render_path(loc), message))
        for call, at in _tool_calls(reply, ("replies", index), document):
            for place, message in _unoffered(call, at, match, defined):
                line, column = document.locate(place)
                warned.append(Problem(shown, line, column, render_path(place), message))
    return refused, warned


def _tool_calls(
    reply: MockReply, at: PathKey, document: Document
) -> Iterator[tuple[MockToolCall, PathKey]]:
    """Each tool call an entry's turns make, with where it is in the script (under the key
    written, `toolCalls` or `tool_calls`)."""
    turns: list[tuple[MockTurn, PathKey]] = []
    if reply.always is not None:
        turns.append((reply.always, (*at, "always")))
    for j, turn in enumerate(reply.turns or []):
        turns.append((turn, (*at, "turns", j)))
    for r, rep in enumerate(reply.reps or []):
        turns += [(turn, (*at, "reps", r, "turns", j)) for j, turn in enumerate(rep.turns)]
    for turn, place in turns:
        key = "toolCalls" if (*place, "toolCalls") in document.marks else "tool_calls"
        for k, call in enumerate(turn.tool_calls):
            yield call, (*place, key, k)


def _unoffered(
    call: MockToolCall, at: PathKey, match: MockMatch, defined: Defined
) -> list[tuple[PathKey, str]]:
    """What is wrong with a scripted tool call that the tools its agent is offered show (the
    agent it names, else every agent's): a tool not offered, which the run answers with
    "no such tool", or an argument its schema does not list, which the tool refuses. Each is
    only warned of, close name or not: a script may make the model call a wrong name or
    argument on purpose, to test how the agent recovers, and refusing it would break such
    scripts; the warning still says which name is close. A judge's or a simulated user's
    call, and an agent whose tools are known only in a run, are not checked."""
    if match.purpose not in (None, "agent"):
        return []
    agents = [match.agent] if match.agent is not None else sorted(defined.tools)
    offered: dict[str, list[frozenset[str] | None]] = {}
    for agent in agents:
        tools = defined.tools.get(agent)
        if tools is None:
            return []  # not defined (said above), or its tools are known only in a run
        for name, arguments in tools.items():
            offered.setdefault(name, []).append(arguments)
    if not agents:
        return []
    whose = f"agent {match.agent!r} is not" if match.agent is not None else "no agent is"
    if call.name not in offered:
        listed = sorted(offered)
        close = did_you_mean(call.name, listed)
        said = (
            f"the call is of tool {call.name!r}, which {whose} offered{close}: the run "
            f"answers it that there is no such tool, and runs none; "
            f"{'its' if match.agent is not None else 'the'} tools are "
            f"{', '.join(listed[:LISTED_NAMES]) or 'none'}"
        )
        fix = "fix its name" if close else "name one of them"
        return [((*at, "name"), f"{said}; {fix}, unless the call is meant to fail")]
    schemas = offered[call.name]
    if any(names is None for names in schemas):
        return []
    allowed = sorted(frozenset[str]().union(*(n for n in schemas if n is not None)))
    wrong: list[tuple[PathKey, str]] = []
    for argument in call.arguments:
        if argument not in allowed:
            close = did_you_mean(argument, allowed)
            message = (
                f"{argument!r} is no argument of tool {call.name!r}{close}, whose schema lists "
                f"{', '.join(allowed)} and no other; "
                f"{'fix its name' if close else 'remove it, or add it to the schema'}, "
                "unless the call is meant to fail"
            )
            wrong.append(((*at, "arguments", argument), message))
    return wrong


_LABEL_KEYS = ("agent", "fixture", "eval", "purpose", "rep", "side")
"""The `match` keys that fit a call whose label (`RunLabels`) is the same, or when not given."""


def system_prompt(request: ChatRequest) -> str:
    """The text of a request's system messages, each apart, as Anthropic's API is sent them
    (`anthropic.request_body`). Every way a call reaches the mock carries its system prompt so:
    a native agent's `system` and a conversation's (`runtime.agents`), and a program's call
    through the model proxy, whose wire formats read Anthropic's `system`, a Chat Completions
    `system` or `developer` message, and a Responses API's `instructions` and `system` or
    `developer` input items as system messages (`runtime.proxy.wire`)."""
    return "\n\n".join(m.content for m in request.messages if m.role == "system")


class MockProvider:
    name = "mock"

    def __init__(self, script: MockScript) -> None:
        self._script = script

    async def complete(self, request: ChatRequest) -> ChatResponse:
        turn_index = sum(1 for m in request.messages if m.role == "assistant")
        reply = self._find(request)
        turns = reply.turns_of(request.labels.rep) if reply is not None else []
        if reply is not None and reply.always is not None:
            turn = reply.always
        elif turn_index < len(turns):
            turn = turns[turn_index]
        else:
            turn = MockTurn(content=self._script.default)
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
        system = system_prompt(request)
        answered = _answered_tool_results(request)
        for reply in self._script.replies:
            match = reply.match
            if (
                all(getattr(match, key) in (None, getattr(labels, key)) for key in _LABEL_KEYS)
                and (match.sha is None or labels.sha.startswith(match.sha))
                and (match.contains is None or match.contains in last_user)
                and (match.system is None or match.system in system)
                and (match.tool_result is None or any(match.tool_result in r for r in answered))
            ):
                return reply
        return None

    async def aclose(self) -> None:
        return None


def _answered_tool_results(request: ChatRequest) -> list[str]:
    """The tool results after the model's last turn: what the call answers (none when that
    turn called no tool)."""
    results: list[str] = []
    for message in reversed(request.messages):
        if message.role == "assistant":
            break
        if message.role == "tool":
            results.append(message.content)
    return results
