"""One agent of one checkout, ready to run fixtures: declarative, command or http.

The runner dispatches on the Agent's kind, applies the run's overall timeout, and owns what
must be cleaned up (an http agent's server) until `aclose()`. Every run of an agent whose own
code runs (a bring-your-own agent, command tools) gets a key of the model proxy for as long
as it lasts, so the calls that code makes land in that run's trace. In the action, an agent
that names an `environment` has it built (or found) before its first run, outside the run's
timeout; its programs then run with it (runtime/environment.py), and an install that fails
is an error of every run of that agent on that side.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from evalward.errors import AgentRunError, ConfigError
from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.resources.conversation import Conversation, one_turn
from evalward.resources.models import FixtureInput
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.command import run_command_agent
from evalward.runtime.conversation import end_reason_after
from evalward.runtime.conversation_agents import AgentReach, ConversationRun, converse
from evalward.runtime.declarative import DeclarativeAgent, run_declarative
from evalward.runtime.environment import EnvironmentRequest, installer_env_names
from evalward.runtime.environment_limits import EnvironmentLimits
from evalward.runtime.http_agent import HttpAgentServer
from evalward.runtime.inputs import input_messages, input_text
from evalward.runtime.model_proxy import Grant, ModelProxy
from evalward.runtime.observed import settle_answer
from evalward.runtime.process import DEFAULT_KILL_GRACE, Launch, limited_env
from evalward.runtime.protocol import agent_request
from evalward.runtime.sandbox import Sandbox, listed_in
from evalward.runtime.tools import FixtureTools, ToolExecutor


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
    """The job's budget its simulated user's calls are metered against (None: no budget)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Where the run's playground is (runtime/playground.py): given to every program of the
    run and, for an http agent, in the request's `playground`."""


class AgentRunner:
    def __init__(
        self,
        agent: DeclarativeAgent,
        providers: Providers,
        env: Mapping[str, str],
        *,
        kill_grace: float = DEFAULT_KILL_GRACE,
        proxy: ModelProxy | None = None,
        sandbox: Sandbox | None = None,
        environment_limits: EnvironmentLimits | None = None,
    ) -> None:
        """Keyword parameters past the agent, its providers and env, each with a default, so
        a caller names only the limits it changes; a parameter object would only rename them."""
        self.agent = agent
        self.environment_limits = environment_limits
        self.providers = providers
        self.env = env
        self.kill_grace = kill_grace
        self.sandbox = sandbox
        runtime = agent.spec.runtime
        self.proxy = proxy if self.starts_programs else None
        self._environment = asyncio.Lock()
        self._environment_failure: str | None = None
        store = sandbox.environments if sandbox is not None else None
        self._environment_pending = agent.spec.environment is not None and store is not None
        if agent.spec.environment is not None and store is not None:
            try:
                store.check(agent.spec.environment, env)
            except ConfigError as exc:
                raise ConfigError(f"agent {agent.name!r}: {exc}") from None
        self.server: HttpAgentServer | None = None
        if runtime is not None and runtime.http is not None:
            self.server = HttpAgentServer(
                runtime.http,
                name=agent.name,
                root=agent.root,
                env=env,
                kill_grace=kill_grace,
                proxy=self.proxy,
                sandbox=sandbox,
            )

    @property
    def starts_programs(self) -> str:
        """What this agent runs from its checkout, if anything ("" for nothing)."""
        runtime = self.agent.spec.runtime
        if runtime is not None and runtime.command is not None:
            return "runtime.command"
        if runtime is not None and runtime.http is not None:
            return "runtime.http"
        commands = [t.tool_name for t in self.agent.spec.tools if t.enabled and t.command]
        return f"the command tool {commands[0]!r}" if commands else ""

    @property
    def brings_own(self) -> bool:
        """A bring-your-own agent: its own program runs the loop (`runtime`)."""
        return self.agent.spec.runtime is not None

    async def prepare_environment(self) -> str | None:
        """Build or find the agent's environment once, before its first run (and outside
        that run's timeout); None when it is ready or there is none, else why it is not."""
        async with self._environment:
            spec, sandbox = self.agent.spec.environment, self.sandbox
            if not self._environment_pending or spec is None or sandbox is None:
                return self._environment_failure
            store = sandbox.environments
            assert store is not None, "pending only with a store"
            names = installer_env_names(listed_in(self.agent.spec))
            try:
                request = EnvironmentRequest(
                    agent=self.agent.name,
                    side=sandbox.side,
                    spec=spec,
                    checkout=self.agent.root,
                    source=sandbox.working_copy(self.agent.root),
                    not_copied=sandbox.not_copied,
                    user=sandbox.user,
                    env=limited_env(self.env, names, sandbox=sandbox),
                    limits=self.environment_limits,
                )
                packages = await store.provide(request)
            except (AgentRunError, OSError) as exc:
                self._environment_failure = f"the agent's environment could not be built: {exc}"
            else:
                self.sandbox = sandbox.with_packages(packages)
                if self.server is not None:
                    self.server.sandbox = self.sandbox
            self._environment_pending = False
            return self._environment_failure

    async def run(self, run: FixtureRun) -> Trace:
        trace = Trace()
        started = time.monotonic()
        failure = await self.prepare_environment()
        if failure is not None:
            trace.add(StepType.error, content=failure)
            return trace
        scope: contextlib.AbstractContextManager[Grant | None] = contextlib.nullcontext()
        if self.proxy is not None:
            await self.proxy.ensure_started()
            scope = self.proxy.granted(run.labels, trace, observe=self.brings_own)
        with scope as grant:
            text = ""
            begun = time.monotonic()
            launch = Launch(
                root=self.agent.root,
                env=self.env,
                extra_env={**(grant.env if grant is not None else {}), **run.env},
                sandbox=self.sandbox,
                kill_grace=self.kill_grace,
            )
            try:
                async with asyncio.timeout(self._outer_timeout(run)):
                    text = await self._run(run, trace, grant, launch)
            except TimeoutError:
                trace.time_out(
                    f"the run timed out after {run.timeout_seconds:g} s (execution.timeoutSeconds)"
                )
            if grant is not None:
                left = self._outer_timeout(run) - (time.monotonic() - begun)
                await grant.end_calls(within=0 if trace.timed_out else left)
                grant.finish()
            if run.conversation is not None or self._repl:
                trace.end_reason = end_reason_after(trace)
            else:
                settle_answer(trace, text, grant.observer if grant is not None else None)
            if launch.left_behind and trace.error is None:
                trace.add(StepType.error, content=launch.left_behind[0])
        if (
            self.brings_own
            and run.conversation is None
            and not self._repl
            and trace.error is None
            and trace.final_step is None
        ):
            trace.add(
                StepType.error,
                content="the agent ended without a final answer: print it on stdout, or "
                "write a `final` event" + trace.proxy_failure_note(),
            )
        trace.duration_ms = (time.monotonic() - started) * 1000
        return trace

    def _outer_timeout(self, run: FixtureRun) -> float:
        """A command agent enforces its own timeout (and kills its group); allow for that."""
        runtime = self.agent.spec.runtime
        if runtime is not None and runtime.command is not None:
            own = runtime.command.timeout_seconds or run.timeout_seconds
            return own + self.kill_grace + 5
        if runtime is not None and runtime.http is not None:
            return (
                runtime.http.ready_timeout_seconds
                + (runtime.http.timeout_seconds or run.timeout_seconds)
                + self.kill_grace
            )
        return run.timeout_seconds

    async def _run(self, run: FixtureRun, trace: Trace, grant: Grant | None, launch: Launch) -> str:
        """Run the agent into `trace`; a bring-your-own agent's plain-text answer."""
        runtime = self.agent.spec.runtime
        executor = ToolExecutor(
            tools={t.tool_name: t for t in self.agent.spec.tools if t.enabled},
            fixture=run.tools,
            launch=launch,
        )
        if run.conversation is not None or run.fixture_input is None or self._repl:
            await self._converse(run, trace, grant, launch, executor)
            return ""
        messages = input_messages(run.fixture_input)
        if runtime is None:
            await run_declarative(self.agent, messages, self.providers, run.labels, trace, executor)
            return ""
        for message in messages:
            trace.add(StepType.input, content=message.content)
        request = agent_request(
            agent=self.agent.name,
            fixture=run.labels.fixture,
            eval=run.labels.eval,
            fixture_input=run.fixture_input,
            messages=messages,
            tools=run.tools,
        )
        if run.env:
            request = {**request, "playground": dict(run.env)}
        if runtime.command is not None:
            return await run_command_agent(
                runtime.command,
                request,
                trace,
                launch,
                timeout_seconds=run.timeout_seconds,
                input_text=input_text(messages),
            )
        if self.server is not None:
            return await self.server.run(
                request, trace, timeout_seconds=run.timeout_seconds, grant=grant
            )
        return ""

    @property
    def _repl(self) -> bool:
        """A command agent kept running for a conversation: any fixture is one for it."""
        runtime = self.agent.spec.runtime
        return (
            runtime is not None and runtime.command is not None and runtime.command.repl is not None
        )

    async def _converse(
        self,
        run: FixtureRun,
        trace: Trace,
        grant: Grant | None,
        launch: Launch,
        executor: ToolExecutor,
    ) -> None:
        conversation = run.conversation
        if conversation is None and run.fixture_input is not None:  # a REPL agent: one turn
            conversation = one_turn(input_text(input_messages(run.fixture_input)))
        if conversation is None:
            trace.add(StepType.error, content="the fixture has neither `input` nor `conversation`")
            return
        request = agent_request(
            agent=self.agent.name,
            fixture=run.labels.fixture,
            eval=run.labels.eval,
            fixture_input=None,
            messages=[],
            tools=run.tools,
        )
        if run.env:
            request = {**request, "playground": dict(run.env)}
        held = ConversationRun(
            conversation, run.user_model, run.labels, request, run.timeout_seconds, run.allowance
        )
        reach = AgentReach(self.agent, self.providers, self.server, launch, executor)
        await converse(reach, held, trace, grant)

    async def aclose(self) -> None:
        if self.server is not None:
            await self.server.stop()
