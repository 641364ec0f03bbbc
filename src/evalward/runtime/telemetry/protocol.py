"""The bring-your-own trace protocol (docs/agent-protocols.md), shared by command and http.

evalward sends one JSON object describing the fixture run; the agent answers with trace
events, one JSON object each: assistant, tool_call, tool_result, usage, final, error.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from evalward.errors import ProtocolError
from evalward.providers.base import ChatMessage
from evalward.resources.models import FixtureInput
from evalward.rundata.trace import StepType, Trace, Usage, arguments_from_json
from evalward.runtime.tools.tools import FixtureTools

PROTOCOL = "evalward.trace/v1"
EVENT_TYPES = ("assistant", "tool_call", "tool_result", "usage", "final", "error")


def agent_request(
    *,
    agent: str,
    fixture: str,
    eval: str,
    fixture_input: FixtureInput | None,
    messages: Iterable[ChatMessage],
    tools: FixtureTools,
) -> dict[str, Any]:
    """The one JSON object a bring-your-own agent receives per fixture run. It says nothing
    of which rep or side the run is: every rep of a fixture gets the same request, so an
    agent cannot behave well on some reps only."""
    request: dict[str, Any] = {
        "protocol": PROTOCOL,
        "agent": agent,
        "fixture": fixture,
        "eval": eval,
    }
    if fixture_input is not None:
        request["input"] = fixture_input.model_dump(mode="json", exclude_defaults=True)
    request["messages"] = [{"role": m.role, "content": m.content} for m in messages]
    request["shadowTools"] = sorted(tools.shadow)
    request["toolReplay"] = [e.model_dump(mode="json", by_alias=True) for e in tools.replay]
    return request


RESEMBLANCE = 0.85
"""How alike a `type` and an event type must be, folded (`_folded`), for the one to be taken
for the other: `tool_cal`, `errors` are; `user` (like `usage`) and `message` are not, which
an agent's own JSON often says."""


def resembled_event(kind: object) -> str | None:
    """The event type a `type` that is none stands for: the same spelt in another case or
    with other separators (`tool-call`, `toolCall`, `Tool_Call`), or a letter or two off
    (`tool_cal`); None for a type like no event's."""
    if not isinstance(kind, str) or kind in EVENT_TYPES:
        return None
    close = difflib.get_close_matches(_folded(kind), _FOLDED, n=1, cutoff=RESEMBLANCE)
    return _FOLDED[close[0]] if close else None


EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "assistant": ("content", "message"),
    "final": ("content", "message"),
    "error": ("content", "message"),
    "tool_call": ("tool", "name"),
    "tool_result": ("tool", "name"),
    "usage": ("input_tokens", "output_tokens", "cost_usd"),
}
"""The fields, one of which an event of each type carries: a tool's name (`apply_event`
refuses a tool event without it), the text, the counts."""


def misspelt_event(event: Mapping[str, Any]) -> str | None:
    """The event type a JSON object is meant as though its `type` is none: that type spelt in
    another case or with other separators (`tool-call`, `toolCall`, `TOOL_CALL`), and the
    object carrying one of that event's fields (`EVENT_FIELDS`). None otherwise: a
    framework's own part, such as the Vercel AI SDK's `{"type": "tool-call", "toolName": …}`,
    is shaped like no event."""
    kind = event.get("type")
    if not isinstance(kind, str) or kind in EVENT_TYPES:
        return None
    meant = _FOLDED.get(_folded(kind))
    if meant is None or not any(key in event for key in EVENT_FIELDS[meant]):
        return None
    return meant


def _folded(kind: str) -> str:
    """`kind` in lower case, its letters and digits alone."""
    return "".join(c for c in kind.casefold() if c.isalnum())


_FOLDED = {_folded(event): event for event in EVENT_TYPES}
"""Each event type by its folded form (`_folded`): what a `type` spelt otherwise is matched
against, made once rather than at each line an agent prints."""


def apply_event(trace: Trace, event: object) -> None:
    """Append one event to the trace (a `usage` event adds to the latest step)."""
    if not isinstance(event, Mapping):
        raise ProtocolError(f"expected a JSON object with a `type`, got {short(event)}")
    kind = event.get("type")
    if kind not in EVENT_TYPES:
        meant = resembled_event(kind)
        hint = f" (did you mean {meant!r}?)" if meant else ""
        raise ProtocolError(
            f"unknown event type {kind!r}{hint}; expected one of {', '.join(EVENT_TYPES)}"
        )
    common = _timing_and_model(event)
    if kind == "usage":
        _add_usage(trace, event)
        return
    text = event.get("content", event.get("message", ""))
    if kind == "error":
        trace.add(StepType.error, content=str(text or ""), **common)
        return
    if kind in ("assistant", "final"):
        if "content" not in event and "message" not in event:
            given = [f"`{key}`" for key in event if key not in _STEP_FIELDS]
            instead = f"; it gives {', '.join(given)}" if given else ""
            raise ProtocolError(
                f'a `{kind}` event needs `content` (its text, `""` for none){instead}: an '
                "answer under another key would be read as empty, and every check that it "
                "does not say something would pass"
            )
        trace.record(StepType(kind), "agent", content=str(text or ""), **common)
        return
    tool = event.get("tool", event.get("name"))
    if not isinstance(tool, str) or not tool:
        raise ProtocolError(f"a `{kind}` event needs `tool` (the tool's name)")
    call_id = str(event["id"]) if event.get("id") is not None else None
    if kind == "tool_call":
        trace.record(
            StepType.tool_call,
            "agent",
            tool=tool,
            call_id=call_id,
            arguments=_arguments(event.get("arguments")),
            **common,
        )
        return
    output = event.get("output", "")
    trace.record(
        StepType.tool_result,
        "agent",
        tool=tool,
        call_id=call_id,
        output=output if isinstance(output, str) else json.dumps(output, ensure_ascii=False),
        is_error=bool(event.get("is_error", event.get("isError", False))),
        source="agent",
        **common,
    )


_STEP_FIELDS = frozenset({"type", "started_at", "duration_ms", "model", "id"})
"""What every step event may carry besides its own fields (`_timing_and_model`)."""


def _timing_and_model(event: Mapping[str, Any]) -> dict[str, Any]:
    """The fields every step event may carry: when it started, how long it took, its model."""
    common: dict[str, Any] = {}
    for key in ("started_at", "duration_ms"):
        number = _finite(event.get(key))
        if key == "duration_ms" and number is not None and number < 0:
            raise ProtocolError(f"`duration_ms` must be 0 or more, got {short(number)}")
        if number is not None:
            common[key] = number
    if isinstance(event.get("model"), str):
        common["model"] = event["model"]
    return common


def _add_usage(trace: Trace, event: Mapping[str, Any]) -> None:
    """A `usage` event adds its tokens and cost to the latest step."""
    usage = Usage(
        input_tokens=_int(event, "input_tokens"),
        output_tokens=_int(event, "output_tokens"),
        cost_usd=_cost(event),
        reported=True,
    )
    if not trace.steps:
        raise ProtocolError("a `usage` event needs a step before it")
    last = trace.steps[-1]
    last.usage = usage if last.usage is None else last.usage + usage


def apply_response(trace: Trace, body: object) -> None:
    """An HTTP agent's reply: a list of events, `{"trace": [...]}` or `{"final": "..."}`."""
    events: object = body
    if isinstance(body, Mapping):
        if "trace" in body:
            events = body["trace"]
        elif isinstance(body.get("final"), str):
            events = [{"type": "final", "content": body["final"]}]
        else:
            raise ProtocolError(
                'expected a list of trace events, {"trace": [...]} or {"final": "..."}'
            )
    if not isinstance(events, list):
        raise ProtocolError(f"`trace` must be a list of events, got {short(events)}")
    for index, event in enumerate(events):
        try:
            apply_event(trace, event)
        except ProtocolError as exc:
            raise ProtocolError(f"trace[{index}]: {exc}") from None


def _arguments(raw: object) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        return arguments_from_json(raw)
    return {"_value": raw}


def _finite(value: object) -> float | None:
    """A number as a float, or None: not a number, or none a float can hold (`10**400`)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


MAX_TOKENS = 10**12
"""The most tokens one `usage` event may count: more than any call reads or writes, and small
enough that the sum of a run's events is a number every reader of results.json can hold."""
MAX_COST_USD = 1_000_000.0
"""The most one `usage` event may say it cost, for the same reason."""


def _int(event: Mapping[str, Any], key: str) -> int:
    value = event.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_TOKENS:
        raise ProtocolError(
            f"`{key}` must be an integer from 0 to {MAX_TOKENS:,}, got {short(value)}"
        )
    return value


def _cost(event: Mapping[str, Any]) -> float | None:
    cost = _finite(event.get("cost_usd"))
    if cost is not None and not 0 <= cost <= MAX_COST_USD:
        raise ProtocolError(
            f"`cost_usd` must be from 0 to {MAX_COST_USD:,.0f} dollars, got {short(cost)}"
        )
    return cost


def short(value: object, limit: int = 80) -> str:
    """`value` as JSON, cut to `limit` characters, to quote in a message: whatever it is
    (nested too deeply to write, a number too large for JSON), never an error itself."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        text = f"a {type(value).__name__} that cannot be shown"
    return text if len(text) <= limit else text[: limit - 3] + "..."
