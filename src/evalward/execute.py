"""Run every planned (Eval, fixture, rep, side) with bounded concurrency and score it.

Concurrency is bounded three times: once for the whole run (`parallel`), once per Eval
(`execution.parallel`, the number of workers that take its runs in turn) and once per model
provider. Each fixture run has the Eval's `timeoutSeconds`; a run that times out keeps the
steps it made and ends with an `error` step. Bring-your-own http agents are started on first
use and stopped when the run ends, also when it fails; so is the model proxy their programs
(and command tools) call models through, which holds the only copy of the provider keys.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalward.budget import Allowance
from evalward.errors import ConfigError
from evalward.fingerprint import FileIndex, agent_fingerprint
from evalward.plan import Plan, PlannedRun, Side
from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.resources import Located, ResourceSet
from evalward.resources.models import Agent, Eval
from evalward.resources.paths import OutsideRepository, repo_path
from evalward.result_cache import ResultCache, run_key
from evalward.results import EvalResult, FixtureResult
from evalward.runtime.declarative import DeclarativeAgent
from evalward.runtime.model_proxy import ModelProxy, agent_environment, provider_key_names
from evalward.runtime.process import DEFAULT_KILL_GRACE
from evalward.runtime.runner import AgentRunner, FixtureRun
from evalward.runtime.sandbox import Sandbox
from evalward.runtime.tools import FixtureTools, check_side_effects
from evalward.runtime.trace import Trace
from evalward.scoring.panel import JudgePanel
from evalward.scoring.scores import score_eval, score_fixture
from evalward.spool import TraceSpool


@dataclass(frozen=True)
class Checkout:
    """One side of the comparison: a tree on disk and the resources loaded from it."""

    side: Side
    root: Path
    resources: ResourceSet


ProgressCallback = Callable[[FixtureResult], None]


async def execute(
    plan: Plan,
    checkouts: dict[Side, Checkout],
    providers: Providers,
    *,
    parallel: int,
    on_result: ProgressCallback | None = None,
    env: Mapping[str, str] | None = None,
    kill_grace: float = DEFAULT_KILL_GRACE,
    cache: ResultCache | None = None,
    keys: CacheKeys | None = None,
    traces: TraceSpool | None = None,
    allowance: Allowance | None = None,
    sandbox: Sandbox | None = None,
) -> list[FixtureResult]:
    """Run the plan; results come back in plan order whatever order runs finish in.

    Everything that can be refused is checked before the first run: unknown providers in
    `models`, side-effecting command tools a fixture neither shadows nor replays, and programs
    from a checkout when the `sandbox` they must run in is unavailable.
    `env` is what command tools and bring-your-own agents may see (through their allow-list),
    less the provider keys: they get the model proxy's instead, and the proxy refuses calls
    past `allowance`. With a `cache`, a run whose determining material was seen before is
    not run again. With `traces`, each result's trace moves there once it is scored and
    cached, before `on_result` sees the result.
    """
    key_names = provider_key_names(providers)
    env, real_keys = agent_environment(dict(os.environ if env is None else env), key_names)
    proxy = ModelProxy(providers, allowance, real_keys, key_names)
    run_limit = asyncio.Semaphore(max(1, parallel))
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
            evaluation = checkout.resources.evals[run.eval].resource
            key = (run.side, run.eval)
            if key not in queues:
                queues[key] = deque()
                workers_of[key] = min(evaluation.spec.execution.parallel, max(1, parallel))
            agent_key = (run.side, evaluation.spec.target_agent)
            if agent_key not in runners:
                located = checkout.resources.agents[evaluation.spec.target_agent]
                agent = resolve_agent(located.resource, located.file, checkout.root)
                for model_id in agent.spec.models:
                    providers.resolve(model_id)
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
            fixture_key = (run.side, run.fixture, evaluation.spec.target_agent)
            if fixture_key not in fixture_tools:
                fixture = checkout.resources.fixtures[run.fixture].resource.spec
                tools = FixtureTools.parse(run.fixture, fixture.tool_replay, fixture.shadow_tools)
                agent = runners[agent_key].agent
                check_side_effects(agent.name, agent.spec.tools, run.fixture, tools)
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
                    "file": fixture.file,
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
                        agent=runner.agent.name, fixture=run.fixture, eval=run.eval, rep=run.rep
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
            run.eval, run.side.value, run.rep, fixture, trace, spec.scoring, judge
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
            group.create_task(score(index, run, trace))

    # A few workers per (side, Eval), never more than its `execution.parallel`, instead of a
    # task per run: 20,000 waiting tasks cost memory and scheduling that a run does not need.
    # In a task group, a failure (or the run being cancelled) stops every other worker.
    try:
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


class CacheKeys:
    """Result-cache keys: a hash of everything that determines a run's result (see
    `evalward.result_cache`). Agent fingerprints are computed once per side and agent, and
    each run's key once, however many stages ask for it."""

    def __init__(self, checkouts: dict[Side, Checkout], providers: Providers) -> None:
        self._checkouts = checkouts
        self._providers = providers
        self._indexes = {side: FileIndex(c.root) for side, c in checkouts.items()}
        self._agents: dict[tuple[Side, str], dict[str, Any]] = {}
        self._keys: dict[PlannedRun, str] = {}

    def of(self, run: PlannedRun) -> str:
        if run not in self._keys:
            self._keys[run] = self._key(run)
        return self._keys[run]

    def _key(self, run: PlannedRun) -> str:
        resources = self._checkouts[run.side].resources
        evaluation = resources.evals[run.eval].resource
        agent_name = evaluation.spec.target_agent
        if (run.side, agent_name) not in self._agents:
            self._agents[(run.side, agent_name)] = agent_fingerprint(
                resources.agents[agent_name], self._indexes[run.side]
            )
        calibration = resources.calibrations.get(evaluation.spec.judge.calibration or "")
        # Where the agent's and the judge's replies come from. An agent that calls models
        # itself (bring-your-own) names none: every provider's endpoint counts then.
        models = list(resources.agents[agent_name].resource.spec.models)
        if not models:
            models = list(self._providers.endpoints)
        models += evaluation.spec.judge.models
        material = {
            "providers": self._providers.identity_of(models),
            "agent": self._agents[(run.side, agent_name)],
            "fixture": _dump(resources.fixtures[run.fixture].resource),
            "scoring": _dump(evaluation.spec.scoring),
            "judge": _dump(evaluation.spec.judge),
            "calibration": _dump(calibration.resource) if calibration else None,
        }
        return run_key(material, run.rep)


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True)


def resolve_agent(agent: Agent, defined_in: str, root: Path) -> DeclarativeAgent:
    """Read `systemFile` from the agent's own checkout, refusing paths that leave it."""
    spec = agent.spec
    system = spec.system or ""
    if spec.system_file:
        path = resolve_repo_path(root, defined_in, spec.system_file)
        try:
            system = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"{defined_in}: spec.systemFile: cannot read {spec.system_file!r} ({exc.strerror})"
            ) from None
    return DeclarativeAgent(name=agent.metadata.name, spec=spec, system_prompt=system, root=root)


def resolve_repo_path(root: Path, defined_in: str, reference: str) -> Path:
    """A file reference relative to the resource file (or `/` = repository root), inside root."""
    try:
        return repo_path(root, reference, Path(defined_in).parent)
    except OutsideRepository:
        raise ConfigError(
            f"{defined_in}: the file reference {reference!r} leaves the repository; "
            "reference files inside it"
        ) from None


EvalsBySide = Mapping[Side, Mapping[str, Located[Eval]]]
"""Each side's Eval definitions: all that scoring needs of a checkout."""


def score_evals(plan: Plan, evals: EvalsBySide, results: list[FixtureResult]) -> list[EvalResult]:
    """One EvalResult per (side, Eval) that the plan ran, in plan order."""
    runs_of: dict[tuple[str, str], list[FixtureResult]] = {}
    for result in results:
        runs_of.setdefault((result.side, result.eval), []).append(result)
    out: list[EvalResult] = []
    for side in (Side.head, Side.base):
        definitions = evals.get(side)
        if definitions is None:
            continue
        for name in plan.evals:
            runs = runs_of.get((side.value, name), [])
            if side is Side.base and not runs and name in plan.skipped_base:
                continue
            located = definitions.get(name)
            if located is not None:
                pending = plan.pending.get(name, []) if side is Side.head else []
                out.append(score_eval(located, side.value, runs, pending))
    return out
