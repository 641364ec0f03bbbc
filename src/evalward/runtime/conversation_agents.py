"""How each agent kind answers one turn of a conversation.

- declarative: evalward's own tool loop, on the whole history (its tool calls and results
  too), so the model sees the conversation as it happened;
- command: the program is started once per turn with the conversation so far: `messages`
  (and `conversation: {id, turn}`) in its JSON request, and, for a program that reads one
  prompt (`{input}`, `stdin: text`), the conversation as one text (`transcript`);
- http: one request per turn with the same request and the conversation's `id`, so a server
  that keeps its own sessions can find this one.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from evalward.providers.base import ChatMessage, RunLabels
from evalward.providers.registry import Providers
from evalward.resources.agent_runtime import CommandRuntime
from evalward.resources.conversation import Conversation, EndReason
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.command import run_command_agent
from evalward.runtime.command_repl import ReplSession
from evalward.runtime.conversation import TurnAnswer, hold_conversation, transcript
from evalward.runtime.declarative import DeclarativeAgent, continue_declarative, opening_messages
from evalward.runtime.http_agent import HttpAgentServer
from evalward.runtime.model_proxy import Grant
from evalward.runtime.observed import TrafficObserver
from evalward.runtime.process import Launch
from evalward.runtime.simulated_user import UserSimulator
from evalward.runtime.tools import ToolExecutor


def declarative_turns(
    agent: DeclarativeAgent,
    providers: Providers,
    labels: RunLabels,
    trace: Trace,
    executor: ToolExecutor,
) -> TurnAnswer:
    """The declarative agent's turns: one history, extended by every turn's tool loop."""
    messages = opening_messages(agent)

    async def answer(history: list[ChatMessage], turn: int) -> str:
        if turn == 1:  # the conversation's own opening instructions, if it has them
            messages.extend(m for m in history[:-1] if m.role == "system")
        messages.append(history[-1])
        await continue_declarative(agent, messages, providers, labels, trace, executor)
        return _turn_final(trace, turn)

    return answer


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

    def left(self) -> float:
        return max(self.deadline - time.monotonic(), 0.001)


def command_turns(runtime: CommandRuntime, launch: Launch, turns: ProgramTurns) -> TurnAnswer:
    """A command agent started once per turn, with the conversation so far."""
    conversation_id = uuid.uuid4().hex

    async def answer(history: list[ChatMessage], turn: int) -> str:
        text = await run_command_agent(
            runtime,
            turns.turn_request(history, turn, conversation_id),
            turns.trace,
            launch,
            timeout_seconds=min(runtime.timeout_seconds or turns.left(), turns.left()),
            input_text=transcript(history),
        )
        return settle_turn(turns.trace, turn, text, _observer(turns.grant))

    return answer


def repl_turns(session: ReplSession, turns: ProgramTurns) -> TurnAnswer:
    """A REPL agent kept running: one stdin line per turn."""
    conversation_id = uuid.uuid4().hex

    async def answer(history: list[ChatMessage], turn: int) -> str:
        request = turns.turn_request(history, turn, conversation_id)
        text = await session.turn(history[-1].content, request, turns.left())
        return settle_turn(turns.trace, turn, text, _observer(turns.grant))

    return answer


def http_turns(server: HttpAgentServer, turns: ProgramTurns) -> TurnAnswer:
    """An http agent asked once per turn, every request naming the same conversation."""
    conversation_id = uuid.uuid4().hex

    async def answer(history: list[ChatMessage], turn: int) -> str:
        text = await server.run(
            turns.turn_request(history, turn, conversation_id),
            turns.trace,
            timeout_seconds=turns.left(),
            grant=turns.grant,
        )
        return settle_turn(turns.trace, turn, text, _observer(turns.grant))

    return answer


def _observer(grant: Grant | None) -> TrafficObserver | None:
    return grant.observer if grant is not None else None


def settle_turn(trace: Trace, turn: int, text: str, observer: TrafficObserver | None) -> str:
    """The agent's reply to `turn`: its `final` event, else its plain output (or the model's
    last reply the proxy saw, when the output holds it), as `settle_answer` does for a run.
    A turn with no reply at all ends the conversation as an error."""
    if trace.error is not None:
        return ""
    reply = _turn_final(trace, turn)
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


def _turn_final(trace: Trace, turn: int) -> str:
    for step in reversed(trace.steps):
        if step.turn == turn and step.type is StepType.final:
            return step.content
    return ""


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


@dataclass(frozen=True)
class AgentReach:
    """How one run reaches its agent: its definition, the providers evalward's own tool loop
    calls, an http agent's server, how its programs start, and how its tools run."""

    agent: DeclarativeAgent
    providers: Providers
    server: HttpAgentServer | None
    launch: Launch
    executor: ToolExecutor


async def converse(
    reach: AgentReach, run: ConversationRun, trace: Trace, grant: Grant | None
) -> None:
    """Hold the conversation with the agent, whatever its kind."""
    agent, providers, server = reach.agent, reach.providers, reach.server
    launch, executor = reach.launch, reach.executor
    simulator = None
    user = run.conversation.user
    if user is not None:
        if run.user_model is None:
            trace.add(
                StepType.error,
                content="no model plays the simulated user: set the fixture's "
                "`conversation.user.model`, the Eval's `simulatedUser.model` or its `judge.model`",
            )
            trace.end_reason = EndReason.error.value
            return
        simulator = UserSimulator(user, run.user_model, providers, run.labels, run.allowance)
    runtime = agent.spec.runtime
    answer: TurnAnswer
    if runtime is None:
        answer = declarative_turns(agent, providers, run.labels, trace, executor)
    else:
        deadline = time.monotonic() + run.timeout_seconds
        turns = ProgramTurns(run.request, trace, grant, deadline)
        if runtime.command is not None and runtime.command.repl is not None:
            await _with_repl(runtime.command, launch, turns, run.conversation, simulator)
            return
        if runtime.command is not None:
            answer = command_turns(runtime.command, launch, turns)
        elif server is not None:
            answer = http_turns(server, turns)
        else:
            return
    await hold_conversation(run.conversation, trace, answer, simulator)


async def _with_repl(
    runtime: CommandRuntime,
    launch: Launch,
    turns: ProgramTurns,
    conversation: Conversation,
    simulator: UserSimulator | None,
) -> None:
    """Hold the conversation with one REPL process, stopped when it ends, whatever happened."""
    session = ReplSession(runtime, launch, turns.trace)
    try:
        problem = await session.start(turns.left())
        if problem:
            turns.trace.add(StepType.error, content=problem)
            turns.trace.end_reason = EndReason.error.value
            return
        await hold_conversation(conversation, turns.trace, repl_turns(session, turns), simulator)
    finally:
        await session.close()
