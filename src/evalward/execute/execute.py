"""Run every planned (Eval, fixture, rep, side) with bounded concurrency and score it.

This module schedules: what each run needs (its agent's runner, its fixture's tools, the
model proxy, the judges) is built by the runtime and scoring packages; it decides what runs
when, reuses cached results, and hands each trace to scoring as soon as it is done.

Concurrency is bounded for the whole run (`parallel`), per Eval (`execution.parallel`
workers, never more than the run's) and per model provider; runs that get ahead of their
scoring wait for it (`UNSCORED_PER_SLOT`), so unscored traces never pile up in memory.

The sides take turns (`Sandbox.turn`, runtime/isolation/apart.py): every base run, scored,
before the head's first program starts, so nothing a pull request's program does reaches what
a base run reads; and each run's programs are ended with it, escaped or not. The head's runs
of the base's fixtures whose scoring runs code are scored by the base's scorers, as the
base's user, in a base turn of their own after the head's (`_gate_turn`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field

from evalward.errors import ConfigError
from evalward.plan.estimate import budget_estimate
from evalward.plan.plan import PlannedRun
from evalward.plan.playgrounds import source_of
from evalward.plan.preflight.tool_refs import (
    RemovedTool,
    agent_tools,
    named_tools,
    unoffered_tools,
)
from evalward.plan.run_context import RunContext
from evalward.providers.base import RunLabels
from evalward.resources.checks.code_scorer_files import code_sources
from evalward.resources.conversation import simulator_model
from evalward.resources.reading.locate import place_of
from evalward.resources.resource_set import user_files
from evalward.rundata.playground_state import PlaygroundRun
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spending import Allowance
from evalward.rundata.spool import TraceSpool
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.resolved_agent import resolve_agent
from evalward.runtime.agents.runner import AgentRunner, FixtureRun
from evalward.runtime.environments.environment_limits import EnvironmentLimits, side_limits
from evalward.runtime.playground.base import Templates
from evalward.runtime.playground.service_environment import ServiceEnvironments
from evalward.runtime.processes.strays import RunProcesses
from evalward.runtime.proxy.model_proxy import ModelProxy, agent_environment, provider_key_names
from evalward.runtime.tools.tools import FixtureTools
from evalward.scoring.code.code_scorer import CodeScorers
from evalward.scoring.code.scorer_environments import ScorerEnvironments
from evalward.scoring.judges.panel import JudgePanel
from evalward.scoring.scores import score_fixture
from evalward.text.escaping import printable

UNSCORED_PER_SLOT = 4
SIDES_IN_TURN = (Side.base, Side.head)  # the base's turn first: the module's docstring says why


@dataclass(frozen=True)
class Execution:
    """Where a plan's results go and what its agents' own calls may spend; what runs, with
    what concurrency, cache, sandbox and environment, is its `RunContext`."""

    on_result: Callable[[FixtureResult], None] | None = None
    traces: TraceSpool | None = None
    """Where each result's trace moves once it is scored and cached, before `on_result`."""
    allowance: Allowance | None = None
    """What agents' own calls may spend past the plan's estimate: through the model proxy
    (which holds each run to its share without one), and a declarative agent's past those
    its run's estimate counted."""
    defers: Callable[[PlannedRun], bool] | None = None
    """The runs scored first without their judge assertions (`base_judging.BaseJudging`): a
    cached result is served to such a run only, or to any run once it is judged."""

    base_offered: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """By (Eval, fixture), the tools the base's runs of it offered their model, every round's
    together (`Trace.offered_tools`): what a head run's guard of a renamed tool is held to
    (`_Run.unoffered`)."""

    def defers_judge(self, run: PlannedRun) -> bool:
        return self.defers is not None and self.defers(run)


async def execute(context: RunContext, how: Execution) -> list[FixtureResult]:
    """Run the context's plan; results come back in plan order whatever order runs finish in.
    A run whose determining material the result cache has seen (`RunOptions.cache`) is not
    run again.

    What the definitions alone refuse was refused before (`preflight.refuse_plan`); what
    the machine refuses is checked here before the first run: programs from a checkout when
    the `sandbox` they must run in is unavailable.
    """
    run = _Run(context, how)
    try:
        run.prepare()
        return await run.all()
    finally:
        await run.aclose()


class _Run:
    """One plan's execution: its queues, agents, fixtures' tools, model proxy and judges."""

    def __init__(self, context: RunContext, how: Execution) -> None:
        self.plan, self.checkouts, self.how = context.plan, context.checkouts, how
        self.resources = context.resources
        self.providers, options = context.providers, context.options
        self.sandbox, self.cache = options.sandbox, options.cache
        self.keys = context.keys
        key_names = provider_key_names(self.providers)
        self.env, real_keys = agent_environment(dict(context.env), key_names)
        # With no budget, the proxy still holds each run to its share of calls (`Allowance`).
        allowance = how.allowance if how.allowance is not None else Allowance()
        self.proxy = ModelProxy(self.providers, allowance, real_keys, key_names)
        self.templates = Templates()  # each SQLite seed loaded once, each run's a copy
        self.service_environments = ServiceEnvironments()  # each built once per side
        self.parallel = max(1, options.parallel)
        self.run_limit = asyncio.Semaphore(self.parallel)
        # Traces waiting to be scored, at most a few per run slot: when runs outpace their
        # scoring (slow judges, or an agent whose calls never wait, such as a mock script,
        # which would run a worker's whole queue before any scoring began), the workers wait
        # instead of holding every trace and its pending task in memory (about 5 KB a run).
        self.unscored = asyncio.Semaphore(UNSCORED_PER_SLOT * self.parallel)
        self.queues: dict[tuple[Side, str], deque[int]] = {}
        self.workers_of: dict[tuple[Side, str], int] = {}
        self.runners: dict[tuple[Side, str], AgentRunner] = {}
        self.unrunnable: dict[tuple[Side, str], str] = {}
        """Agents whose definition cannot be run on a side, and why: each of their runs is
        an error saying so, and every other run goes on."""
        self.tools: dict[tuple[Side, str, str], FixtureTools] = {}
        self.judges = JudgePanel(self.providers)
        # Code scorers run as each side's agent user, with no secret (`limited_env`).
        self.scorers = {side: self._scorers(side) for side in Side}
        # The head side's scorers of the base branch's fixtures run as the base side's user:
        # no program of the pull request runs as it, to stop them or plant their packages;
        # and in a base turn after the head's (`_gate_turn`), to read nothing the head left.
        self.gate_scorers = self._scorers(Side.base)
        self.results: list[FixtureResult | None] = [None] * len(self.plan.runs)
        self.gate_graded: list[tuple[int, PlannedRun, Trace, PlaygroundRun | None]] = []
        """The head's runs of the base's fixtures, run and not yet scored (`_gate_turn`)."""
        self.reachable: set[int] = set()
        """The base runs a head program could have reached: a head agent user's process
        was alive as they started or ended, or something a head user wrote was where every
        user may write (`Apart.head_alive`). Their results are not kept in the cache."""

    def _scorers(self, user: Side) -> CodeScorers:
        """Code scorers run as `user`'s agent user (whichever side's runs they score)."""
        sandbox = self.sandbox.for_side(user.value) if self.sandbox else None
        checkout = self.checkouts.get(user)  # the base's scorers: its commit's files
        environments = ScorerEnvironments(
            self.env,
            sandbox,
            checkout.root if checkout else None,
            checkout.sha if checkout else "",
        )
        return CodeScorers(self.env, sandbox, environments=environments)

    def prepare(self) -> None:
        """Each run into its (side, Eval) queue, with its agent's runner and its tools."""
        if self.sandbox is not None:
            self.sandbox.hide(user_files(c.resources for c in self.checkouts.values()))
        for index, run in enumerate(self.plan.runs):
            checkout = self.checkouts[run.side]
            spec = checkout.resources.evals[run.eval].resource.spec
            key = (run.side, run.eval)
            if key not in self.queues:
                self.queues[key] = deque()
                self.workers_of[key] = min(spec.execution.parallel or self.parallel, self.parallel)
            agent_key = (run.side, spec.target_agent)
            if agent_key not in self.runners and agent_key not in self.unrunnable:
                runner = self._runner(run.side, spec.target_agent)
                if isinstance(runner, str):
                    self.unrunnable[agent_key] = runner
                else:
                    self.runners[agent_key] = runner
            tools_key = (run.side, run.fixture, spec.target_agent)
            if tools_key not in self.tools:
                fixture = checkout.resources.fixtures[run.fixture].resource.spec
                self.tools[tools_key] = FixtureTools(
                    fixture.tool_replay or [], frozenset(fixture.shadow_tools or [])
                )
            self.queues[key].append(index)

    def _runner(self, side: Side, name: str) -> AgentRunner | str:
        """The runner of one side's agent, or why its definition cannot run on that side (a
        file it names is not in its commit, say: the other runs go on). What the machine
        refuses (no sandbox, no Node.js) refuses the whole run. A head agent's `env:` list is
        the pull request's, so its programs see only what the sandbox permits
        (`Sandbox.permitted_env`)."""
        checkout, sandbox = self.checkouts[side], self.sandbox
        located = checkout.resources.agents[name]
        try:
            agent = resolve_agent(located.resource, located.file, checkout.root, checkout.files)
        except ConfigError as exc:
            return f"the {side.value} side's agent cannot run: {exc}"
        own_env = self.env
        if sandbox is not None and side is Side.head:
            base = self.checkouts.get(Side.base)
            before = base.resources.agents.get(agent.name) if base else None
            own_env = sandbox.permitted_env(
                self.env, located.resource, before.resource if before else None
            )
        runner = AgentRunner(
            agent,
            self.providers,
            own_env,
            proxy=self.proxy,
            sandbox=sandbox.for_side(side.value).for_agent(name) if sandbox else None,
            environment_limits=self._environment_limits(side, name),
        )
        if sandbox is not None and sandbox.unavailable and runner.starts_programs:
            raise ConfigError(
                f"agent {agent.name!r} ({side.value}) runs {runner.starts_programs} "
                f"from the checkout, and {sandbox.unavailable}"
            )
        return runner

    def _environment_limits(self, side: Side, name: str) -> EnvironmentLimits | None:
        """The bounds of an agent's environment on `side`: a pull request's head is bounded
        by the base's definition of the agent (`environment_limits.side_limits`)."""
        store = self.sandbox.environments if self.sandbox is not None else None
        resources = self.checkouts[side].resources
        own = resources.agents[name].resource.spec.environment
        if store is None or own is None:
            return None
        base = self.checkouts.get(Side.base)
        judged = side is Side.head and (base is not None or store.untrusted_head)
        before = base.resources.agents.get(name) if base is not None else None
        gate = before.resource.spec.environment if before is not None else None
        gate_at = ""
        if base is not None and before is not None and gate is not None:
            # A definition the change left as it was is the head's own, read from its file.
            unchanged = before is resources.agents[name]
            where = resources if unchanged else base.resources
            gate_at = place_of(where, before, ("spec", "environment"))
        return side_limits(
            name,
            own,
            gate,
            judged=judged,
            inputs=store.limits,
            own_at=place_of(resources, resources.agents[name], ("spec", "environment")),
            gate_at=gate_at,
        )

    async def all(self) -> list[FixtureResult]:
        """A few workers per (side, Eval), never more than its `execution.parallel`, instead
        of a task per run: 20,000 waiting tasks cost memory and scheduling that a run does
        not need. In a task group, a failure (or the run being cancelled) stops every other
        worker."""
        cached = self.cache.holds(self.keys) if self.cache is not None else None
        # The judges' calibrations first, before any agent's calls share the provider's
        # limits.
        await self.judges.replay(
            (
                run.side.value,
                self.checkouts[run.side].resources.evals[run.eval],
                self.checkouts[run.side].resources,
            )
            for run in self.plan.runs
            if (cached is None or not cached(run)) and not self.how.defers_judge(run)
        )
        for side in SIDES_IN_TURN:
            if self._left_to_run(side):
                await self._side(side)
        if self.gate_graded:
            await self._gate_turn()
        done = [result for result in self.results if result is not None]
        assert len(done) == len(self.results), "every run is scored before the task group ends"
        return done

    def _left_to_run(self, side: Side) -> bool:
        """Serve the side's runs the result cache holds, and say whether any is left to run.
        A side whose every run is cached takes no turn: no program of it starts, so there is
        nothing to keep apart or sweep, and a rerun of an unchanged gate (a label added, a
        dispatch) neither waits for the machine's turns nor walks its shared folders. Asked
        once the turns before it have stored their runs (the base's, for a head run of an
        unchanged agent); no run of a side has another's key (it holds the rep)."""
        left = False
        for key, queue in self.queues.items():
            if key[0] is not side:
                continue
            uncached: deque[int] = deque()
            for index in queue:
                cached = self._from_cache(self.plan.runs[index])
                if cached is None:
                    uncached.append(index)
                else:
                    self.results[index] = cached
            self.queues[key] = uncached
            left = left or bool(uncached)
        return left

    async def _side(self, side: Side) -> None:
        """Every run of one side, scored, in the side's turn (`Sandbox.turn`): no program of
        the other side runs meanwhile, and none of this side's outlives it; its agents'
        servers are stopped before the turn ends."""
        sandbox = self.sandbox
        turn = sandbox.turn(side.value, self.checkouts[side].sha) if sandbox else nullcontext()
        async with turn:
            await self._services_built_first(side)
            try:
                async with asyncio.TaskGroup() as group:
                    for key, queue in self.queues.items():
                        if key[0] is side:
                            for _ in range(min(self.workers_of[key], len(queue))):
                                group.create_task(self._worker(queue, group))
            except BaseExceptionGroup as failed:
                raise failed.exceptions[0] from None
            finally:
                ended = [key for key in self.runners if key[0] is side]
                await asyncio.gather(
                    *(self.runners.pop(key).aclose() for key in ended), return_exceptions=True
                )

    async def _services_built_first(self, side: Side) -> None:
        """Build the environments of the side's playground services as its turn begins,
        before any of its programs starts: the build runs as the side's user, which a run's
        agent beside it shares, and could write into what the service then imports. A build
        that fails is said by each run that needs it."""
        if self.sandbox is None:
            return
        checkout = self.checkouts[side]
        sources = {
            (source.name, source.world, source.spec.model_dump_json()): source
            for (of, _), queue in self.queues.items()
            if of is side
            for index in queue
            if (source := source_of(checkout, self.plan.runs[index])) is not None
            and source.spec.service is not None
            and source.spec.service.environment is not None
        }
        if not sources:
            return
        # lazy: provisioning and reading playgrounds, only for a side whose service has one
        from evalward.runtime.playground.service import service_sandbox

        sandbox = self.sandbox.for_side(side.value)
        built = (
            service_sandbox(source, sandbox, self.service_environments, self.env)
            for source in sources.values()
        )
        await asyncio.gather(*built, return_exceptions=True)  # each run says its failure

    async def _gate_turn(self) -> None:
        """Score the head's runs of the base's fixtures with the base's scorers, as the base's
        user, in a base turn of their own once the head's has ended (`Sandbox.turn`): every
        head program is gone and what the head's users left where every user may write is
        removed before a base program (a code scorer, a transform, an install of their
        packages) runs and reads what it finds."""
        assert self.sandbox is not None, "held back only with a sandbox"
        graded, self.gate_graded = self.gate_graded, []
        base = self.checkouts.get(Side.base)
        async with self.sandbox.turn(Side.base.value, base.sha if base is not None else ""):
            try:
                async with asyncio.TaskGroup() as group:
                    for index, run, trace, playground in graded:
                        await self.unscored.acquire()
                        group.create_task(self._score(index, run, trace, playground))
            except BaseExceptionGroup as failed:
                raise failed.exceptions[0] from None

    def _gate_graded(self, run: PlannedRun) -> bool:
        """Whether the base's scorers score this run (a head run of a base fixture) in a turn
        of their own where the sides take turns (a user switch): when its scoring runs code (a
        code scorer, a transform). Scoring that runs no program reads nothing a head program
        could leave, and needs no turn."""
        checkout = self.checkouts[run.side]
        return (
            run.side is Side.head
            and run.fixture in checkout.gate_fixtures
            and self.sandbox is not None
            and self.sandbox.user is not None
            and bool(code_sources(checkout.resources.fixtures[run.fixture].resource))
        )

    async def aclose(self) -> None:
        await asyncio.gather(*(r.aclose() for r in self.runners.values()), return_exceptions=True)
        await self.proxy.aclose()
        await asyncio.to_thread(self.templates.close)
        self.service_environments.close()
        for scorers in [*self.scorers.values(), self.gate_scorers]:
            scorers.close()

    async def _worker(self, queue: deque[int], group: asyncio.TaskGroup) -> None:
        """Takes its Eval's runs in turn. Judging and scoring a run is a task of its own, so
        the worker's next run overlaps it, as the Eval's `execution.parallel` bounds agent
        runs, not judges."""
        while queue:
            index = queue.popleft()
            run = self.plan.runs[index]  # not in the result cache (`_left_to_run`)
            trace, playground = await self._run_agent(run, index)
            if self._gate_graded(run):  # scored after the head's turn (`_gate_turn`)
                self.gate_graded.append((index, run, trace, playground))
                continue
            await self.unscored.acquire()
            if _cancelling():
                # The group is stopping: a cancellation that arrived as the run ended may have
                # been swallowed on the way, and the group refuses new tasks. The run is left
                # out, as every unfinished one is.
                raise asyncio.CancelledError
            group.create_task(self._score(index, run, trace, playground))

    def _finished(self, result: FixtureResult) -> FixtureResult:
        trace = result.trace  # what the base's run offered, before the spool takes it
        if result.side == Side.base.value and trace is not None and trace.offered_tools is not None:
            offered = self.how.base_offered.setdefault((result.eval, result.fixture), [])
            offered += [name for name in trace.offered_tools if name not in offered]
        if self.how.traces is not None:
            result = self.how.traces.keep(result)
        if self.how.on_result is not None:
            self.how.on_result(result)
        return result

    def _from_cache(self, run: PlannedRun) -> FixtureResult | None:
        cache, keys = self.cache, self.keys
        if cache is None or not cache.reads:
            return None  # its key is made when its result is stored, after the run's calls
        key = next((k for k in keys.read(run) if cache.contains(k)), keys.of(run))
        if (hit := cache.get(key)) is None:
            return None
        if hit.not_judged and not self.how.defers_judge(run):
            return None  # stored before its judge was asked: no verdict to serve
        if not self._offered_read(run, hit):
            return None  # run again: what its agent offered decides a base guard
        fixture = self.checkouts[run.side].resources.fixtures[run.fixture]
        update = {
            "eval": run.eval,
            "side": run.side.value,
            "rep": run.rep,
            "file": printable(fixture.file),
            "line": fixture.line,
            "cached": True,
        }
        return self._finished(hit.model_copy(update=update))

    async def _run_agent(self, run: PlannedRun, index: int) -> tuple[Trace, PlaygroundRun | None]:
        """The run, in a playground of its own when its fixture (or Eval) names one; every
        program it started is ended before its worker takes the next run (`Sandbox.end_run`,
        once its run slot is free for the programs of others). A base run is watched
        (`_watch`)."""
        if run.side is not Side.base or self.sandbox is None or self.sandbox.user is None:
            return await self._run_agent_alone(run)
        await self._watch(run, index, "as it started")
        try:
            return await self._run_agent_alone(run)
        finally:
            await self._watch(run, index, "as it ended")

    async def _watch(self, run: PlannedRun, index: int, when: str) -> None:
        """A base run's result is kept only if no process of any head agent user was alive
        on the machine while it ran: none as it started (no head program starts in a base
        turn, so none can begin but from one alive then) and none once its programs ended;
        and only if no turn before it was unclean (a head user's files where every user may
        write, swept or not: `Apart.head_alive`)."""
        assert self.sandbox is not None
        during = f"the base run of {run.eval}/{run.fixture} (rep {run.rep}), {when}"
        if await asyncio.to_thread(self.sandbox.head_alive, during):
            self.reachable.add(index)

    async def _run_agent_alone(self, run: PlannedRun) -> tuple[Trace, PlaygroundRun | None]:
        checkout = self.checkouts[run.side]
        target = checkout.resources.evals[run.eval].resource.spec.target_agent
        removed = checkout.removed_tools.get((run.eval, run.fixture), ())
        stood_in = next((r.message for r in removed if r.stand_in), None)
        if (why := self.unrunnable.get((run.side, target)) or stood_in) is not None:
            trace = Trace()
            trace.add(StepType.error, content=why)
            return trace, None
        source = source_of(checkout, run)
        fixture = checkout.resources.fixtures[run.fixture].resource.spec
        sandbox = self.sandbox.for_side(run.side.value) if self.sandbox else None
        processes = world = None
        try:
            async with self.run_limit:
                processes = sandbox.begin_run() if sandbox is not None else None
                if source is None:
                    return await self._run_in(run, {}, processes), None
                # lazy: provisioning and reading playgrounds (SQLite, services, files: eight
                # modules) only for a run that has one
                from evalward.runtime.playground.provision import PlaygroundSetting
                from evalward.runtime.playground.run import StateNeeds, run_in_playground

                # the playground's programs (a service, the dump of its state) are a run of
                # their own, which outlives the agent's: see `_ended_as_it_returns`
                world = sandbox.begin_run() if sandbox is not None else None
                setting = PlaygroundSetting(
                    self.env,
                    sandbox.in_run(world) if sandbox else None,
                    templates=self.templates,
                    environments=self.service_environments,
                )
                return await run_in_playground(
                    source,
                    StateNeeds.of(fixture.leaf_assertions),
                    lambda e: self._ended_as_it_returns(run, e, processes),
                    setting,
                )
        finally:
            for each in (processes, world):
                if self.sandbox is not None and each is not None:  # escaped or not
                    await self.sandbox.end_run(each)

    async def _ended_as_it_returns(
        self, run: PlannedRun, env: Mapping[str, str], processes: RunProcesses | None
    ) -> Trace:
        """The agent's run in its playground, every process it started (or left, in a
        session of its own) ended as it returns: the state it leaves the playground in is
        read after, with nothing of the agent's left to answer in the service's place or to
        stop or kill it while its state is read (they run as the same user)."""
        try:
            return await self._run_in(run, env, processes)
        finally:
            if self.sandbox is not None and processes is not None:
                await self.sandbox.end_run(processes)

    async def _run_in(
        self, run: PlannedRun, env: Mapping[str, str], processes: RunProcesses | None
    ) -> Trace:
        checkout = self.checkouts[run.side]
        spec = checkout.resources.evals[run.eval].resource.spec
        runner = self.runners[(run.side, spec.target_agent)]
        labels = RunLabels(
            agent=runner.agent.name,
            fixture=run.fixture,
            eval=run.eval,
            rep=run.rep,
            side=run.side.value,
            sha=checkout.sha,
            compared=run.side is Side.head and Side.base in self.checkouts,
        )
        fixture = checkout.resources.fixtures[run.fixture].resource.spec
        return await runner.run(
            FixtureRun(
                labels=labels,
                fixture_input=fixture.input,
                tools=self.tools[(run.side, run.fixture, spec.target_agent)],
                timeout_seconds=spec.execution.timeout_seconds,
                env=env,
                conversation=fixture.conversation,
                user_model=simulator_model(
                    fixture.conversation, spec.simulated_user.model, spec.judge.model
                ),
                allowance=self.how.allowance,
                counted_calls=self._counted_calls(run, runner),
                processes=processes,
            )
        )

    def _counted_calls(self, run: PlannedRun, runner: AgentRunner) -> int:
        """The agent's calls the budget counted for `run` when it was kept (`budget_estimate`:
        a head run of a fixture the base gates with, by the base's agent): a declarative
        agent makes those before its calls draw from the allowance. 0 without a budget."""
        if self.how.allowance is None or not runner.kind.calls_estimated:
            return 0
        prices = self.providers.prices
        return budget_estimate(run, self.plan, self.resources, prices).agent_calls

    def _offers_at_run(self, side: Side, eval_name: str) -> bool:
        """Whether what the Eval's agent on `side` offers its model is known only from its
        runs (they record it): a bring-your-own agent's, or a declarative one's whose MCP
        servers list their tools with no `tools.allow`."""
        resources = self.checkouts[side].resources
        target = resources.evals[eval_name].resource.spec.target_agent
        return agent_tools(resources.agents[target].resource.spec) is None

    def unoffered(self, run: PlannedRun, trace: Trace) -> tuple[RemovedTool, ...]:
        """A head run of a fixture the base gates with, where the Eval's agent is a
        bring-your-own one on either side, or the base's declarative one's MCP servers list
        their tools with no `tools.allow`: the base's guards of tools the base side offers
        and this run offered in none of its calls (`tool_refs.unoffered_tools`; a head offers
        what its run recorded, else what its definition names). The base's runs of the
        fixture are done by then: each round's base turn comes first."""
        checkout, base = self.checkouts[run.side], self.checkouts.get(Side.base)
        if run.side is not Side.head or base is None or run.fixture not in checkout.gate_fixtures:
            return ()
        if run.eval not in base.resources.evals:
            return ()
        target = base.resources.evals[run.eval].resource.spec.target_agent
        head_target = checkout.resources.evals[run.eval].resource.spec.target_agent
        if target not in base.resources.agents or head_target not in checkout.resources.agents:
            return ()
        spec = base.resources.agents[target].resource.spec
        head_spec = checkout.resources.agents[head_target].resource.spec
        known = agent_tools(spec)
        listed = known is not None
        if listed and head_spec.runtime is None:
            return ()  # two definitions: `tool_refs.removed_tools`, before the runs
        offered = known if listed else self.how.base_offered.get((run.eval, run.fixture))
        head_offered = (
            trace.offered_tools
            if trace.offered_tools is not None
            else []
            if head_spec.runtime is not None
            else named_tools(head_spec)
        )
        fixture = checkout.resources.fixtures[run.fixture].resource.spec
        return unoffered_tools(target, fixture, (offered, listed), head_offered)

    def _offered_read(self, run: PlannedRun, hit: FixtureResult) -> bool:
        """Whether a cached result may answer `run` for what its agent offered its model: a
        base run of a bring-your-own agent kept before its runs recorded it is not (its
        head's guards of a renamed tool would read nothing), nor a head run the base's guard
        of a renamed tool fails (kept where no base was compared, or another base was)."""
        if hit.trace is None:
            return True
        if run.side is Side.base:
            return hit.trace.offered_tools is not None or not self._offers_at_run(
                run.side, run.eval
            )
        return not self.unoffered(run, hit.trace)

    async def _score(
        self, index: int, run: PlannedRun, trace: Trace, playground: PlaygroundRun | None
    ) -> None:
        try:
            checkout = self.checkouts[run.side]
            located_eval = checkout.resources.evals[run.eval]
            if self.how.defers_judge(run):
                judge = self.judges.deferred(located_eval)
            else:
                judge = await self.judges.for_eval(located_eval, checkout.resources, run.side.value)
            result = await score_fixture(
                checkout.resources.fixtures[run.fixture],
                trace,
                located_eval.resource.spec.scoring,
                judge,
                run=RunLabels(eval=run.eval, rep=run.rep, side=run.side.value, sha=checkout.sha),
                playground=playground,
                scorers=self.gate_scorers
                if run.side is Side.head and run.fixture in checkout.gate_fixtures
                else self.scorers[run.side],
                removed_tools={
                    removed.name: removed.message
                    for removed in (
                        *checkout.removed_tools.get((run.eval, run.fixture), ()),
                        *self.unoffered(run, trace),
                    )
                    if not removed.stand_in
                },
            )
            # A model call that failed under an agent's own code may have been worked around
            # or not: like an error, such a run is tried again next time rather than reused. A
            # base run a head program could have reached is never kept (`_watch`).
            reachable = self.reachable
            if self.cache is not None and not trace.failed_proxy_calls and index not in reachable:
                self.cache.put(self.keys.of(run), result)
            self.results[index] = self._finished(result)
        finally:
            self.unscored.release()


def _cancelling() -> bool:
    """Whether the running task has been asked to cancel, whether or not it saw it."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
