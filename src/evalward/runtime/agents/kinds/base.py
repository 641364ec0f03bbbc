"""What every kind of agent runtime answers, so the runner asks its kind, never its settings.

One module per kind subclasses `AgentKind` (`declarative.py`, `command.py`, `repl.py`,
`http.py`; `ProgramKind` is what the bring-your-own kinds share), and `registry.py` maps an
Agent's spec to its kind. What the definitions alone say of a runtime (the program it starts,
the variables it asks for, what preflight refuses) is answered by its settings in
resources/agents/agent.py, below every stage that asks; a kind answers how a run of it is
carried out.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

from evalward.providers.base import ChatMessage, RunLabels
from evalward.providers.registry import Providers
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.conversation import Conversation, one_turn
from evalward.resources.models import FixtureInput
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.conversation import TurnAnswer, hold_conversation
from evalward.runtime.agents.conversation_agents import ConversationRun, ProgramTurns, converse
from evalward.runtime.agents.inputs import input_messages, input_text
from evalward.runtime.agents.process import Launch
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.agents.simulated_user import UserSimulator
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.processes.strays import RunProcesses
from evalward.runtime.proxy.model_proxy import Grant, ModelProxy
from evalward.runtime.telemetry.protocol import agent_request
from evalward.runtime.tools.tools import FixtureTools, ToolExecutor


@dataclass(frozen=True)
class FixtureRun:
    """What one run needs to know about its fixture."""

    labels: RunLabels
    fixture_input: FixtureInput | None
    tools: FixtureTools
    timeout_seconds: float
    conversation: Conversation | None = None
    user_model: str | None = None
    """The model that plays the conversation's simulated user, if it has one."""
    allowance: Allowance | None = None
    """The job's budget its simulated user's calls are metered against (None: no budget),
    and its declarative agent's past `counted_calls`."""
    counted_calls: int = 0
    """The declarative agent's calls the plan's estimate counted for the run
    (`budget_estimate`), taken from the budget before it ran."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Where the run's playground is (runtime/playground/): given to every program of the
    run and, for an http agent, in the request's `playground`."""
    processes: RunProcesses | None = None
    """What the run's programs are tracked as, to be ended with it (`Sandbox.begin_run`)."""


@dataclass(frozen=True)
class KindSetup:
    """What a kind is made with: one agent of one checkout, and what its runs reach."""

    agent: ResolvedAgent
    providers: Providers
    env: Mapping[str, str]
    kill_grace: float
    proxy: ModelProxy | None
    sandbox: Sandbox | None


@dataclass(frozen=True)
class RunPlace:
    """One run as its kind carries it out: the fixture, the trace it fills, the model proxy's
    key for its programs, and how they start."""

    run: FixtureRun
    trace: Trace
    grant: Grant | None
    launch: Launch


class AgentKind(abc.ABC):
    """One kind of agent runtime, made once per agent of a checkout by the runner."""

    name: ClassVar[str]
    """Its key in the registry: what `AgentSpec.runtime_kind` says of its agents."""
    brings_own: ClassVar[bool] = True
    """Its own program runs the loop, so its run must end in that program's final answer."""
    whole_conversation: ClassVar[bool] = False
    """Every fixture is a conversation to it: a fixture's `input` is its one turn."""
    calls_estimated: ClassVar[bool] = False
    """evalward makes its model calls, from the definition alone (its models, tools,
    `maxTurns`, `maxTokens`): a plan's estimate counts them (`plan/estimate.py`)."""

    def __init__(self, setup: KindSetup) -> None:
        self.setup = setup

    @classmethod
    @abc.abstractmethod
    def starts_programs(cls, spec: AgentSpec) -> str:
        """What an agent of this kind runs from its checkout ("" for nothing): a run that
        starts a program is given a key of the model proxy, and needs the sandbox."""

    @abc.abstractmethod
    def outer_timeout(self, timeout_seconds: float) -> float:
        """The whole run's bound, for a fixture whose runs may take `timeout_seconds`."""

    def own_timeout(self, timeout_seconds: float) -> float:
        """The time the agent's own work may take, its model calls included: the whole
        run's bound less what is kept for ending its processes (`outer_timeout`)."""
        return self.outer_timeout(timeout_seconds)

    def timeout_setting(self) -> str:
        """The setting `own_timeout` comes from, as a run that timed out names it: the one
        to raise if the agent needs longer."""
        return "spec.execution.timeoutSeconds"

    @abc.abstractmethod
    async def run(self, place: RunPlace) -> str:
        """Run the agent into `place.trace`; a bring-your-own agent's plain-text answer."""

    async def hold(
        self,
        place: RunPlace,
        talk: ConversationRun,
        executor: ToolExecutor,
        simulator: UserSimulator | None,
    ) -> None:
        """Hold `talk`'s conversation with the agent, turn by turn, into `place.trace`."""
        answer = self.answers(place, talk, executor)
        await hold_conversation(talk.conversation, place.trace, answer, simulator)

    @abc.abstractmethod
    def answers(self, place: RunPlace, talk: ConversationRun, executor: ToolExecutor) -> TurnAnswer:
        """How the agent answers each turn of `talk`."""

    def use_sandbox(self, sandbox: Sandbox) -> None:  # noqa: B027 (a hook, as `aclose`)
        """Start what it keeps between runs in `sandbox` (the agent's environment is built);
        each run's programs are given theirs by the runner."""

    async def aclose(self) -> None:  # noqa: B027 (a hook: most kinds keep nothing)
        """End what outlives one run (an agent's server)."""

    async def converse(self, place: RunPlace, executor: ToolExecutor) -> None:
        """The run of a conversation fixture (or a REPL agent's one turn)."""
        run, trace = place.run, place.trace
        conversation = run.conversation
        if conversation is None and run.fixture_input is not None:  # a REPL agent: one turn
            conversation = one_turn(input_text(input_messages(run.fixture_input)))
        if conversation is None:
            trace.add(StepType.error, content="the fixture has neither `input` nor `conversation`")
            return
        request = self.request(run, None, [])
        talk = ConversationRun(
            conversation, run.user_model, run.labels, request, run.timeout_seconds, run.allowance
        )
        await converse(talk, self.setup.providers, trace, partial(self.hold, place, talk, executor))

    def request(
        self, run: FixtureRun, fixture_input: FixtureInput | None, messages: list[ChatMessage]
    ) -> dict[str, Any]:
        """A bring-your-own agent's request for `run` (docs/agent-protocols.md)."""
        request = agent_request(
            agent=self.setup.agent.name,
            fixture=run.labels.fixture,
            eval=run.labels.eval,
            fixture_input=fixture_input,
            messages=messages,
            tools=run.tools,
        )
        if run.env:
            request = {**request, "playground": dict(run.env)}
        return request


class ProgramKind(AgentKind):
    """A bring-your-own agent: its program runs the loop, asked once per run or per turn."""

    async def run(self, place: RunPlace) -> str:
        run, trace = place.run, place.trace
        own = {t.tool_name: t for t in self.setup.agent.spec.tools if t.enabled}
        executor = ToolExecutor(tools=own, fixture=run.tools, launch=place.launch)
        if run.conversation is not None or run.fixture_input is None or self.whole_conversation:
            await self.converse(place, executor)
            return ""
        messages = input_messages(run.fixture_input)
        for message in messages:
            trace.add(StepType.input, content=message.content)
        request = self.request(run, run.fixture_input, messages)
        return await self.answer(place, request, messages)

    @abc.abstractmethod
    async def answer(
        self, place: RunPlace, request: dict[str, Any], messages: list[ChatMessage]
    ) -> str:
        """Ask the agent's program once; the text it answered that was no event."""

    @abc.abstractmethod
    def turns(self, place: RunPlace, turns: ProgramTurns) -> TurnAnswer:
        """How the agent's program answers each turn of a conversation."""

    def answers(self, place: RunPlace, talk: ConversationRun, executor: ToolExecutor) -> TurnAnswer:
        del executor  # its program runs its own tools
        return self.turns(place, self.program_turns(place, talk))

    @staticmethod
    def program_turns(place: RunPlace, talk: ConversationRun) -> ProgramTurns:
        """What the program's turns share, the conversation's deadline starting now."""
        deadline = time.monotonic() + talk.timeout_seconds
        return ProgramTurns(talk.request, place.trace, place.grant, deadline)
