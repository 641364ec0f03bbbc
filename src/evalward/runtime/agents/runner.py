"""One agent of one checkout, ready to run fixtures, whatever its kind.

The runner asks the Agent's kind (runtime/agents/kinds/) to carry each run out, applies the
run's overall timeout, and owns what must be cleaned up (an http agent's server, held by its
kind) until `aclose()`. Every run of an agent whose own code runs (a bring-your-own agent,
command tools) gets a key of the model proxy for as long as it lasts, so the calls that code
makes land in that run's trace. In the action, an agent's `environment` is built before its
first run (`prepare_environment`); an install that fails is an error of every run of that
agent on that side.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping

from evalward.errors import AgentRunError, ConfigError
from evalward.providers.registry import Providers
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.conversation import end_cut_short
from evalward.runtime.agents.kinds.base import FixtureRun as FixtureRun
from evalward.runtime.agents.kinds.base import KindSetup, RunPlace
from evalward.runtime.agents.kinds.registry import kind_of
from evalward.runtime.agents.process import DEFAULT_KILL_GRACE, Launch, limited_env, logins_withheld
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.environments.environment import EnvironmentRequest, installer_env_names
from evalward.runtime.environments.environment_limits import EnvironmentLimits
from evalward.runtime.isolation.sandbox import Sandbox, listed_in
from evalward.runtime.processes.key_holders import KeyHolders
from evalward.runtime.proxy.model_proxy import Grant, ModelProxy
from evalward.runtime.proxy.observed import settle_answer


class AgentRunner:
    def __init__(
        self,
        agent: ResolvedAgent,
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
        self.env = env
        self.kill_grace = kill_grace
        self.sandbox = sandbox
        kind = kind_of(agent.spec)
        self.proxy = proxy if kind.starts_programs(agent.spec) else None
        self._environment = asyncio.Lock()
        self._environment_failure: str | None = None
        store = sandbox.environments if sandbox is not None else None
        self._environment_pending = agent.spec.environment is not None and store is not None
        if agent.spec.environment is not None and store is not None:
            try:
                store.check(agent.spec.environment, env)
            except ConfigError as exc:
                raise ConfigError(f"agent {agent.name!r}: {exc}") from None
        self.kind = kind(KindSetup(agent, providers, env, kill_grace, self.proxy, sandbox))

    @property
    def starts_programs(self) -> str:
        """What this agent runs from its checkout, if anything ("" for nothing)."""
        return self.kind.starts_programs(self.agent.spec)

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
                    logins_withheld=logins_withheld(self.env, names, sandbox=sandbox),
                    limits=self.environment_limits,
                    files=sandbox.files_of(self.agent.root),
                )
                packages = await store.provide(request)
            except (AgentRunError, OSError) as exc:
                self._environment_failure = f"the agent's environment could not be built: {exc}"
            else:
                self.sandbox = sandbox.with_packages(packages)
                self.kind.use_sandbox(self.sandbox)
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
            scope = self.proxy.granted(run.labels, trace, observe=self.kind.brings_own)
        with scope as grant:
            if grant is not None and run.processes is not None and self.sandbox is not None:
                grant.holders = KeyHolders(run.processes, self.sandbox.sessions)
            text = ""
            begun = time.monotonic()
            launch = Launch(
                root=self.agent.root,
                env=self.env,
                extra_env={**(grant.env if grant is not None else {}), **run.env},
                sandbox=self.sandbox.in_run(run.processes) if self.sandbox is not None else None,
                kill_grace=self.kill_grace,
            )
            try:
                async with asyncio.timeout(self.kind.outer_timeout(run.timeout_seconds)):
                    text = await self.kind.run(RunPlace(run, trace, grant, launch))
            except TimeoutError:
                own = self.kind.own_timeout(run.timeout_seconds)
                trace.time_out(f"the run timed out after {own:g} s ({self.kind.timeout_setting()})")
            if grant is not None:
                # the calls it left in flight (a stream it hung up on, read on for its usage)
                # get the rest of the agent's own time, not the grace kept for its processes
                left = self.kind.own_timeout(run.timeout_seconds) - (time.monotonic() - begun)
                await grant.end_calls(within=0 if trace.timed_out else left)
                grant.finish()
            if run.conversation is not None or self.kind.whole_conversation:
                end_cut_short(trace)
            else:
                settle_answer(trace, text, grant.observer if grant is not None else None)
            if launch.left_behind and trace.error is None:
                trace.add(StepType.error, content=launch.left_behind[0])
        if (
            self.kind.brings_own
            and run.conversation is None
            and not self.kind.whole_conversation
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

    async def aclose(self) -> None:
        await self.kind.aclose()
