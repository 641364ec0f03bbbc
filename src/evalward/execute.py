"""Run every planned (Eval, fixture, rep, side) with bounded concurrency and score it.

Concurrency is bounded twice: once for the whole run (`parallel`) and once per Eval
(`execution.parallel`). Each fixture run has the Eval's `timeoutSeconds`; a run that times out
keeps the steps it made and ends with an `error` step.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalward.errors import ConfigError
from evalward.plan import Plan, PlannedRun, Side
from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.resources import ResourceSet
from evalward.resources.models import Agent, FixtureInput
from evalward.results import EvalResult, FixtureResult
from evalward.runtime.declarative import DeclarativeAgent, run_declarative
from evalward.runtime.inputs import input_messages
from evalward.runtime.trace import StepType, Trace
from evalward.scoring.panel import JudgePanel
from evalward.scoring.scores import score_eval, score_fixture


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
) -> list[FixtureResult]:
    """Run the plan; results come back in plan order whatever order runs finish in."""
    run_limit = asyncio.Semaphore(max(1, parallel))
    eval_limits: dict[tuple[Side, str], asyncio.Semaphore] = {}
    agents: dict[tuple[Side, str], DeclarativeAgent] = {}
    judges = JudgePanel(providers)

    for run in plan.runs:
        checkout = checkouts[run.side]
        evaluation = checkout.resources.evals[run.eval].resource
        key = (run.side, run.eval)
        if key not in eval_limits:
            eval_limits[key] = asyncio.Semaphore(evaluation.spec.execution.parallel)
        agent_key = (run.side, evaluation.spec.target_agent)
        if agent_key not in agents:
            located = checkout.resources.agents[evaluation.spec.target_agent]
            agents[agent_key] = resolve_agent(located.resource, located.file, checkout.root)

    async def one(run: PlannedRun) -> FixtureResult:
        checkout = checkouts[run.side]
        located_eval = checkout.resources.evals[run.eval]
        spec = located_eval.resource.spec
        agent = agents[(run.side, spec.target_agent)]
        fixture = checkout.resources.fixtures[run.fixture]
        async with run_limit, eval_limits[(run.side, run.eval)]:
            trace = await run_agent(
                agent,
                fixture.resource.spec.input,
                providers,
                RunLabels(agent=agent.name, fixture=run.fixture, eval=run.eval, rep=run.rep),
                timeout_seconds=spec.execution.timeout_seconds,
            )
        judge = await judges.for_eval(located_eval, checkout.resources, run.side.value)
        result = await score_fixture(
            run.eval, run.side.value, run.rep, fixture, trace, spec.scoring, judge
        )
        if on_result is not None:
            on_result(result)
        return result

    return list(await asyncio.gather(*(one(run) for run in plan.runs)))


async def run_agent(
    agent: DeclarativeAgent,
    fixture_input: FixtureInput,
    providers: Providers,
    labels: RunLabels,
    *,
    timeout_seconds: float,
) -> Trace:
    trace = Trace()
    started = time.monotonic()
    try:
        await asyncio.wait_for(
            run_declarative(agent, input_messages(fixture_input), providers, labels, trace),
            timeout=timeout_seconds,
        )
    except TimeoutError:
        trace.add(
            StepType.error,
            content=f"the run timed out after {timeout_seconds:g} s (execution.timeoutSeconds)",
        )
    trace.duration_ms = (time.monotonic() - started) * 1000
    return trace


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
    return DeclarativeAgent(name=agent.metadata.name, spec=spec, system_prompt=system)


def resolve_repo_path(root: Path, defined_in: str, reference: str) -> Path:
    """A file reference relative to the resource file (or `/` = repository root), inside root."""
    base = root if reference.startswith("/") else (root / defined_in).parent
    candidate = (base / reference.lstrip("/")).resolve()
    real_root = root.resolve()
    if candidate != real_root and real_root not in candidate.parents:
        raise ConfigError(
            f"{defined_in}: the file reference {reference!r} leaves the repository; "
            "reference files inside it"
        )
    return candidate


def score_evals(
    plan: Plan, checkouts: dict[Side, Checkout], results: list[FixtureResult]
) -> list[EvalResult]:
    """One EvalResult per (side, Eval) that the plan ran, in plan order."""
    out: list[EvalResult] = []
    for side in (Side.head, Side.base):
        checkout = checkouts.get(side)
        if checkout is None:
            continue
        for name in plan.evals:
            runs = [r for r in results if r.side == side.value and r.eval == name]
            if side is Side.base and not runs and name in plan.skipped_base:
                continue
            located = checkout.resources.evals.get(name)
            if located is not None:
                out.append(score_eval(located, side.value, runs))
    return out
