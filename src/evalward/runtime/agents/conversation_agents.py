"""What every agent kind's conversation shares: its run as the runner hands it over, the
simulated user found before the first turn, a bring-your-own agent's request per turn, and
how a turn's reply is settled. How each kind answers a turn is its module's
(runtime/agents/kinds/: `answers`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from evalward.providers.base import ChatMessage, RunLabels
from evalward.providers.registry import Providers
from evalward.resources.conversation import Conversation, EndReason
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.conversation import TurnAnswer
from evalward.runtime.agents.simulated_user import UserSimulator
from evalward.runtime.proxy.model_proxy import Grant
from evalward.runtime.proxy.observed import TrafficObserver


@dataclass(frozen=True)
class ProgramTurns:
    """What a bring-your-own agent's turns share: its request, launch and deadline."""

    request: dict[str, Any]
    trace: Trace
    grant: Grant | None
    deadline: float
    """`time.monotonic()` by which the whole conversation must be done."""

    def turn_request(
        self, history: list[ChatMessage], turn: int, conversation_id: str
    ) -> dict[str, Any]:
        body = dict(self.request)
        body["messages"] = [{"role": m.role, "content": m.content} for m in history]
        body["conversation"] = {"id": conversation_id, "turn": turn}
        return body

    def left(self, own: float | None = None) -> float:
        """The conversation's time left, at most `own` (the agent's own timeoutSeconds)."""
        left = max(self.deadline - time.monotonic(), 0.001)
        return min(own or left, left)

    def answering(
        self, ask: Callable[[list[ChatMessage], dict[str, Any]], Awaitable[str]]
    ) -> TurnAnswer:
        """Each turn asked of the program with `ask` (the history so far and the turn's
        request, to the text it answered), every request naming the same conversation `id`,
        and its reply settled (`settle_turn`)."""
        conversation_id = uuid.uuid4().hex

        async def answer(history: list[ChatMessage], turn: int) -> str:
            text = await ask(history, self.turn_request(history, turn, conversation_id))
            return settle_turn(self.trace, turn, text, self.observer)

        return answer

    @property
    def observer(self) -> TrafficObserver | None:
        """What the model proxy saw of the run's calls (None: its code calls no model)."""
        return self.grant.observer if self.grant is not None else None


def settle_turn(trace: Trace, turn: int, text: str, observer: TrafficObserver | None) -> str:
    """The agent's reply to `turn`: its `final` event, else its plain output (or the model's
    last reply the proxy saw, when the output holds it), as `settle_answer` does for a run.
    A turn with no reply at all ends the conversation as an error."""
    if trace.error is not None:
        return ""
    reply = turn_final(trace, turn)
    if reply or any(s.turn == turn and s.type is StepType.final for s in trace.steps):
        return reply
    last = observer.last_answer if observer is not None else None
    if (
        last is not None
        and last.turn == turn
        and last.type is StepType.assistant
        and last.content.strip() in text
    ):
        last.type = StepType.final
        return last.content
    if text.strip():
        trace.record(StepType.final, "agent", content=text.strip())
        return text.strip()
    trace.add(
        StepType.error,
        content=f"the agent gave no reply to turn {turn}: print it on stdout, or write a "
        "`final` event" + trace.proxy_failure_note(),
    )
    return ""


def turn_final(trace: Trace, turn: int) -> str:
    """The content of `turn`'s `final` step ("" when it has none)."""
    finals = (s for s in reversed(trace.steps) if s.turn == turn and s.type is StepType.final)
    return next((step.content for step in finals), "")


@dataclass(frozen=True)
class ConversationRun:
    """One run of a conversation fixture, as the runner hands it over."""

    conversation: Conversation
    user_model: str | None
    labels: RunLabels
    request: dict[str, Any]
    """The bring-your-own agent's request, without its messages."""
    timeout_seconds: float
    allowance: Allowance | None = None
    """The job's budget the simulated user's calls are metered against."""


Hold = Callable[[UserSimulator | None], Awaitable[None]]
"""A kind's way to hold one conversation, given its simulated user (if it has one)."""


async def converse(run: ConversationRun, providers: Providers, trace: Trace, hold: Hold) -> None:
    """Hold the conversation once its simulated user, if it has one, is found."""
    simulator = None
    user = run.conversation.user
    if user is not None:
        if run.user_model is None:
            trace.add(
                StepType.error,
                content="no model plays the simulated user: set the fixture's "
                "`conversation.user.model`, the Eval's `simulatedUser.model` or its `judge.model`",
            )
            trace.end(EndReason.error)
            return
        simulator = UserSimulator(user, run.user_model, providers, run.labels, run.allowance)
    await hold(simulator)
