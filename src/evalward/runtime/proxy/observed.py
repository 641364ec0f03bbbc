"""A bring-your-own agent's trace from its traffic: what the model proxy saw of its calls.

An agent written on a framework prints no trace events unless someone writes an adapter.
But every model call it makes goes through evalward's model proxy, which sees the model ask
for tool calls, the agent send the tools' results back in its next request, and the model's
last answer. `TrafficObserver` turns those into the run's steps as they happen — assertions,
the judge and report.html read them like any others — and `Trace.record` merges them with the
events an agent does print, so nothing is counted twice.

Only what the model asked for and the agent sent back is taken: a result for a call id no
reply of this run asked for (a conversation history the fixture gave, a made-up id) is not a
step of this run. What else a reply holds that the agent could act on and evalward does not
read (a second choice, a call of a kind it does not know) makes the run an error, never a
silent pass. A framework that keeps its tool protocol in text (DSPy's ReAct) is read by
`runtime.text_tools`: the call from the reply's text, its result from the next request's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from evalward.providers.base import ToolCall
from evalward.rundata.trace import (
    MAX_OFFERED_TOOLS,
    MEASURED_ORIGIN,
    OFFERED_NAME_CHARS,
    Step,
    StepType,
    Trace,
)
from evalward.runtime.proxy import text_tools
from evalward.runtime.proxy.wire.base import SeenResult, Turn


class TrafficObserver:
    """The steps one fixture run's model calls show."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        if trace.offered_tools is None:
            trace.offered_tools = []
        self._offered = set(trace.offered_tools)
        self._called: dict[str, tuple[str, float]] = {}
        """Tool name by call id, of every tool call a reply asked for, and when that reply
        reached the agent: its result is timed from then to the request that sends it back."""
        self._answered: set[str] = set()
        self.last_answer: Step | None = None
        """The text of the latest reply, when that reply asked for no tool."""
        self._in_text: list[tuple[str, str]] = []
        """Call id and (tool, arguments) key of every tool call a reply asked for in text."""

    def offer(self, names: Sequence[str] | None) -> None:
        """Keep the tool names a request offers the model (`Trace.offered_tools`): what a
        base fixture's guard of a renamed tool reads. `names` None (a request whose tools are
        not known) makes the run's not known. A name past `OFFERED_NAME_CHARS` is left out
        whole: a prefix of it would be another tool's name (`…-refund_order` of
        `…-refund_order_v2`), one no request offered."""
        offered = self.trace.offered_tools
        if offered is None:
            return  # a request before offered tools it did not say: not known
        if names is None:  # this one's tools are not known (`text_tools.offered`)
            self.trace.offered_tools = None
            return
        for name in names:
            if len(name) > OFFERED_NAME_CHARS:
                continue
            if name not in self._offered and len(offered) < MAX_OFFERED_TOOLS:
                self._offered.add(name)
                offered.append(name)

    def request(
        self,
        results: Sequence[SeenResult],
        at: float | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> None:
        """The tool results a request sends the model, the first time each is seen (in
        `body`'s text, too, for the calls replies asked for in text)."""
        if body is not None and self._in_text:
            results = [*results, *self._text_results(body)]
        sent = at or time.time()
        for result in results:
            called = self._called.get(result.call_id)
            if called is None or result.call_id in self._answered:
                continue
            self._answered.add(result.call_id)
            tool, asked = called
            self.trace.record(
                StepType.tool_result,
                MEASURED_ORIGIN,
                tool=tool,
                call_id=result.call_id,
                output=result.output,
                is_error=result.is_error,
                source="agent",
                started_at=asked,
                duration_ms=max(sent - asked, 0.0) * 1000,
            )

    def reply(
        self,
        turn: Turn,
        model: str,
        at: float | None = None,
        request: Mapping[str, Any] | None = None,
        duration_ms: float = 0.0,
    ) -> None:
        """What one reply said: its text, then the tool calls it asked for (in its text
        only when its `request` asked for ReAct's fields). The call's `duration_ms`, as the
        proxy timed it, rides on the first step the reply produced: what the agent reports
        of its own steps never makes a slow call look fast."""
        started = at or time.time()
        took = {"duration_ms": duration_ms}
        text = None
        if turn.text.strip():
            text = self.trace.record(
                StepType.assistant,
                MEASURED_ORIGIN,
                content=turn.text,
                model=model,
                stop_reason=turn.stop_reason or None,
                started_at=started,
                **took,
            )
            took = {}
        calls = turn.calls
        if not calls and request is not None and text_tools.asks_for_calls(request):
            calls = self._text_calls(turn.text)
        answered = time.time()
        for call in calls:
            self._called.setdefault(call.id, (call.name, answered))
            self.trace.record(
                StepType.tool_call,
                MEASURED_ORIGIN,
                tool=call.name,
                call_id=call.id,
                arguments=call.arguments,
                model=model,
                started_at=started,
                **took,
            )
            took = {}
        unread = list(turn.unread)
        if any(not call.name for call in calls):
            unread.append("a tool call with no name")
        if unread:
            self.trace.record(
                StepType.error, MEASURED_ORIGIN, content=unread_message(unread), started_at=started
            )
        self.last_answer = None if calls else text

    def _text_calls(self, text: str) -> tuple[ToolCall, ...]:
        calls = []
        for call in text_tools.calls_in_reply(text):
            call_id = f"text-{len(self._in_text) + 1}"
            self._in_text.append((call_id, _key(call.tool, call.arguments)))
            calls.append(ToolCall(call_id, call.tool, call.arguments))
        return tuple(calls)

    def _text_results(self, body: Mapping[str, Any]) -> list[SeenResult]:
        """Each step of the request's trajectory, as the result of the earliest call a reply
        asked for in text with the same tool and arguments."""
        taken: set[str] = set()
        out = []
        for step in text_tools.trajectory(text_tools.request_text(body)):
            key = _key(step.tool, step.arguments)
            for call_id, asked in self._in_text:
                if asked == key and call_id not in taken:
                    taken.add(call_id)
                    out.append(SeenResult(call_id, step.observation or ""))
                    break
        return out


def settle_answer(trace: Trace, text: str, observer: TrafficObserver | None) -> None:
    """The final answer of a run whose agent gave no `final` event: its plain output text —
    or, when that text holds the model's last reply word for word, that reply (a framework's
    log printed around the answer is not part of it) — else the model's last reply."""
    if trace.error is not None or trace.final_step is not None:
        return
    last = observer.last_answer if observer is not None else None
    if last is not None and last.type is StepType.assistant and last.content.strip() in text:
        last.type = StepType.final
    elif text.strip():
        trace.record(StepType.final, "agent", content=text.strip())


def unread_message(unread: Sequence[str]) -> str:
    """Why a run whose model replied with something evalward does not read is an error: the
    agent may have acted on it, and what it did is then not known."""
    return (
        f"a model reply held {', '.join(unread)}, which evalward's model proxy does not read "
        "as text or tool calls: the tools this run called cannot be known"
    )


def _key(tool: str, arguments: Mapping[str, Any]) -> str:
    return json.dumps([tool, arguments], sort_keys=True, default=str)
