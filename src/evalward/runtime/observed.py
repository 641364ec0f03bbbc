"""A bring-your-own agent's trace from its traffic: what the model proxy saw of its calls.

An agent written on a framework prints no trace events unless someone writes an adapter.
But every model call it makes goes through evalward's model proxy, which sees the model ask
for tool calls, the agent send the tools' results back in its next request, and the model's
last answer. `TrafficObserver` turns those into the run's steps as they happen — assertions,
the judge and report.html read them like any others — and `Trace.record` merges them with the
events an agent does print, so nothing is counted twice.

Only what the model asked for and the agent sent back is taken: a result for a call id no
reply of this run asked for (a conversation history the fixture gave, a made-up id) is not a
step of this run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from evalward.runtime.wire.base import SeenResult, Turn
from evalward.trace import Step, StepType, Trace

ORIGIN = "proxy"


class TrafficObserver:
    """The steps one fixture run's model calls show."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._called: dict[str, str] = {}
        """Tool name by call id, of every tool call a reply asked for."""
        self._answered: set[str] = set()
        self._last_answer: Step | None = None

    def request(self, results: Sequence[SeenResult], at: float | None = None) -> None:
        """The tool results a request sends the model, the first time each is seen."""
        for result in results:
            tool = self._called.get(result.call_id)
            if tool is None or result.call_id in self._answered:
                continue
            self._answered.add(result.call_id)
            self.trace.record(
                StepType.tool_result,
                ORIGIN,
                tool=tool,
                call_id=result.call_id,
                output=result.output,
                is_error=result.is_error,
                source="agent",
                started_at=at or time.time(),
            )

    def reply(self, turn: Turn, model: str, at: float | None = None) -> None:
        """What one reply said: its text, then the tool calls it asked for."""
        started = at or time.time()
        text = None
        if turn.text.strip():
            text = self.trace.record(
                StepType.assistant,
                ORIGIN,
                content=turn.text,
                model=model,
                stop_reason=turn.stop_reason or None,
                started_at=started,
            )
        for call in turn.calls:
            self._called.setdefault(call.id, call.name)
            self.trace.record(
                StepType.tool_call,
                ORIGIN,
                tool=call.name,
                call_id=call.id,
                arguments=call.arguments,
                model=model,
                started_at=started,
            )
        self._last_answer = None if turn.calls else text

    @property
    def last_answer(self) -> Step | None:
        """The text of the latest reply, when that reply asked for no tool."""
        return self._last_answer


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
