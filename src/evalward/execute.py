"""Run every planned (Eval, fixture, rep, side) with bounded concurrency and score it.

This module schedules: what each run needs (its agent's runner, its fixture's tools, the
model proxy, the judges) is built by the runtime and scoring packages; it decides what runs
when, reuses cached results, and hands each trace to scoring as soon as it is done.

Concurrency is bounded three times: once for the whole run (`parallel`), once per Eval
(`execution.parallel`, the number of workers that take its runs in turn, never more than the
run's; an Eval that does not set it is bounded by the run's alone) and once per model
provider. Each fixture run has the Eval's `timeoutSeconds`; a run that times out keeps the
steps it made and ends with an `error` step. Bring-your-own http agents are started on first
use and stopped when the run ends, also when it fails; so is the model proxy their programs
(and command tools) call models through, which holds the only copy of the provider keys.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping

from evalward.errors import ConfigError
from evalward.escaping import printable
from evalward.plan import Checkout, Plan, PlannedRun
from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.result_cache import CacheKeys, ResultCache
from evalward.results import FixtureResult
from evalward.runtime.declarative import resolve_agent
from evalward.runtime.model_proxy import ModelProxy, agent_environment, provider_key_names
from evalward.runtime.process import DEFAULT_KILL_GRACE
from evalward.runtime.runner import AgentRunner, FixtureRun
from evalward.runtime.sandbox import Sandbox
from evalward.runtime.tools import FixtureTools
from evalward.scoring.panel import JudgePanel
from evalward.scoring.scores import score_fixture
from evalward.sides import Side
from evalward.spending import Allowance
from evalward.spool import TraceSpool
from evalward.trace import Trace

ProgressCallback = Callable[[FixtureResult], None]


async def execute(
    plan: Plan,
    checkouts: dict[Side, Checkout],
    providers: Providers,
    *,
    parallel: int,
    env: Mapping[str, str],
    on_result: ProgressCallback | None = None,
    kill_grace: float = DEFAULT_KILL_GRACE,
    cache: ResultCache | None = None,
    keys: CacheKeys | None = None,
    traces: TraceSpool | None = None,
    allowance: Allowance | None = None,
    sandbox: Sandbox | None = None,
) -> list[FixtureResult]:
    """Run the plan; results come back in plan order whatever order runs finish in.

    What the definitions alone refuse was refused before (`preflight.refuse_plan`); what
    the machine refuses is checked here before the first run: programs from a checkout when
    the `sandbox` they must run in is unavailable.
    `env` is what command tools and bring-your-own agents may see (through their allow-list),
    less the provider keys: they get the model proxy's instead, and the proxy refuses calls
    past `allowance`. With a `cache`, a run whose determining material was seen before is
    not run again. With `traces`, each result's trace moves there once it is scored and
    cached, before `on_result` sees the result.
    """
    key_names = provider_key_names(providers)
    env, real_keys = agent_environment(dict(env), key_names)
    # With no budget, the proxy still holds each run to its share of calls (`Allowance`).
    proxy = ModelProxy(
        providers, allowance if allowance is not None else Allowance(), real_keys, key_names
    )
    parallel = max(1, parallel)
    run_limit = asyncio.Semaphore(parallel)
    queues: dict[tuple[Side, str], deque[int]] = {}
    workers_of: dict[tuple[Side, str], int] = {}
    runners: dict[tuple[Side, str], AgentRunner] = {}
    fixture_tools: dict[tuple[Side, str, str], FixtureTools] = {}
    judges = JudgePanel(providers)
    if cache is not None and keys is None:
        keys = CacheKeys(checkouts, providers)

    try:
        for index, run in enumerate(plan.runs):
            checkout = checkouts[run.side]
            eval_def = checkout.resources.evals[run.eval].resource
            key = (run.side, run.eval)
            if key not in queues:
                queues[key] = deque()
                workers_of[key] = min(eval_def.spec.execution.parallel or parallel, parallel)
            agent_key = (run.side, eval_def.spec.target_agent)
            if agent_key not in runners:
                located = checkout.resources.agents[eval_def.spec.target_agent]
                agent = resolve_agent(located.resource, located.file, checkout.root)
                own_env = env
                if sandbox is not None and run.side is Side.head:
                    base = checkouts.get(Side.base)
                    before = base.resources.agents.get(agent.name) if base else None
                    own_env = sandbox.permitted_env(
                        env, located.resource, before.resource if before else None
                    )
                runner = AgentRunner(
                    agent,
                    providers,
                    own_env,
                    kill_grace=kill_grace,
                    proxy=proxy,
                    sandbox=sandbox.for_side(run.side.value) if sandbox else None,
                )
                if sandbox is not None and sandbox.unavailable and runner.starts_programs:
                    raise ConfigError(
                        f"agent {agent.name!r} ({run.side.value}) runs {runner.starts_programs} "
                        f"from the checkout, and {sandbox.unavailable}"
                    )
                runners[agent_key] = runner
            fixture_key = (run.side, run.fixture, eval_def.spec.target_agent)
            if fixture_key not in fixture_tools:
                fixture = checkout.resources.fixtures[run.fixture].resource.spec
                tools = FixtureTools.parse(run.fixture, fixture.tool_replay, fixture.shadow_tools)
                fixture_tools[fixture_key] = tools
            queues[key].append(index)
    except BaseException:
        await asyncio.gather(*(r.aclose() for r in runners.values()), return_exceptions=True)
        await proxy.aclose()
        raise

    def finished(result: FixtureResult) -> FixtureResult:
        if traces is not None:
            result = traces.keep(result)
        if on_result is not None:
            on_result(result)
        return result

    def from_cache(run: PlannedRun) -> FixtureResult | None:
        if cache is None or keys is None or (hit := cache.get(keys.of(run))) is None:
            return None
        fixture = checkouts[run.side].resources.fixtures[run.fixture]
        return finished(
            hit.model_copy(
                update={
                    "eval": run.eval,
                    "side": run.side.value,
                    "rep": run.rep,
                    "file": printable(fixture.file),
                    "line": fixture.line,
                    "cached": True,
                }
            )
        )

    async def run_agent(run: PlannedRun) -> Trace:
        resources = checkouts[run.side].resources
        spec = resources.evals[run.eval].resource.spec
        runner = runners[(run.side, spec.target_agent)]
        async with run_limit:
            return await runner.run(
                FixtureRun(
                    labels=RunLabels(
                        agent=runner.agent.name,
                        fixture=run.fixture,
                        eval=run.eval,
                        rep=run.rep,
                        side=run.side.value,
                        sha=checkouts[run.side].sha,
                    ),
                    fixture_input=resources.fixtures[run.fixture].resource.spec.input,
                    tools=fixture_tools[(run.side, run.fixture, spec.target_agent)],
                    timeout_seconds=spec.execution.timeout_seconds,
                )
            )

    async def score(index: int, run: PlannedRun, trace: Trace) -> None:
        checkout = checkouts[run.side]
        located_eval = checkout.resources.evals[run.eval]
        spec = located_eval.resource.spec
        judge = await judges.for_eval(located_eval, checkout.resources, run.side.value)
        fixture = checkout.resources.fixtures[run.fixture]
        result = await score_fixture(
            run.eval, run.side.value, run.rep, fixture, trace, spec.scoring, judge, sha=checkout.sha
        )
        # A model call that failed under an agent's own code may have been worked around
        # or not: like an error, such a run is tried again next time rather than reused.
        if cache is not None and keys is not None and not trace.failed_proxy_calls:
            cache.put(keys.of(run), result)
        results[index] = finished(result)

    results: list[FixtureResult | None] = [None] * len(plan.runs)

    async def worker(queue: deque[int], group: asyncio.TaskGroup) -> None:
        """Takes its Eval's runs in turn. Judging and scoring a run is a task of its own, so
        the worker's next run overlaps it, as the Eval's `execution.parallel` bounds agent
        runs, not judges."""
        while queue:
            index = queue.popleft()
            run = plan.runs[index]
            if (cached := from_cache(run)) is not None:
                results[index] = cached
                continue
            trace = await run_agent(run)
            if _cancelling():
                # The group is stopping: a cancellation that arrived as the run ended may have
                # been swallowed below (`asyncio.wait_for` does so on Python 3.11), and the
                # group refuses new tasks. The run is left out, as every unfinished one is.
                raise asyncio.CancelledError
            group.create_task(score(index, run, trace))

    # A few workers per (side, Eval), never more than its `execution.parallel`, instead of a
    # task per run: 20,000 waiting tasks cost memory and scheduling that a run does not need.
    # In a task group, a failure (or the run being cancelled) stops every other worker.
    try:
        # The judges' calibrations first, before any agent's calls share the provider's limits.
        await judges.replay(
            (
                run.side.value,
                checkouts[run.side].resources.evals[run.eval],
                checkouts[run.side].resources,
            )
            for run in plan.runs
            if cache is None or keys is None or not cache.contains(keys.of(run))
        )
        async with asyncio.TaskGroup() as group:
            for key, queue in queues.items():
                for _ in range(min(workers_of[key], len(queue))):
                    group.create_task(worker(queue, group))
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
    finally:
        await asyncio.gather(*(r.aclose() for r in runners.values()), return_exceptions=True)
        await proxy.aclose()
    done = [result for result in results if result is not None]
    assert len(done) == len(results), "every run is scored before the task group ends"
    return done


def _cancelling() -> bool:
    """Whether the running task has been asked to cancel, whether or not it saw it."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
