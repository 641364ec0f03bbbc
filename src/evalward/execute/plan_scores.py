"""The score stage: each (side, Eval) the plan ran, scored over its fixture results.

A fixture is scored as soon as its run ends (`execute`, so judging overlaps the next runs);
an Eval only once all its fixtures are in. `scoring/` holds the arithmetic of both (seed 003's
rules); this stage applies it to a whole plan, in plan order, the same way for a run
(`pipeline`) and for merged shards (`shard.merge`).
"""

from __future__ import annotations

from collections.abc import Mapping

from evalward.plan.plan import Plan
from evalward.resources import Located
from evalward.resources.models import Eval
from evalward.rundata.held import held
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.rundata.sides import Side
from evalward.scoring.scores import score_eval

EvalsBySide = Mapping[Side, Mapping[str, Located[Eval]]]
"""Each side's Eval definitions: all that scoring needs of a checkout."""


def score_evals(plan: Plan, evals: EvalsBySide, results: list[FixtureResult]) -> list[EvalResult]:
    """One EvalResult per (side, Eval) that the plan ran, in plan order."""
    runs_of: dict[tuple[str, str], list[FixtureResult]] = {}
    for result in results:
        runs_of.setdefault((result.side, result.eval), []).append(result)
    out: list[EvalResult] = []
    unrun = (plan.skipped_base, plan.adaptive, plan.base_when_failing)  # on the base side
    for side in (Side.head, Side.base):
        definitions = evals.get(side)
        if definitions is None:
            continue
        for name in plan.evals:
            runs = runs_of.get((side.value, name), [])
            if side is Side.base and not runs and any(name in found for found in unrun):
                continue
            located = definitions.get(name)
            if located is not None:
                pending = plan.pending.get(name, []) if side is Side.head else []
                scored = _scored(located, side, runs, pending)
                if side is Side.head and name in plan.base_when_failing:
                    base_runs = runs_of.get((Side.base.value, name), [])
                    scored.base_not_needed = _not_needed(plan, name, base_runs)
                out.append(held(scored))
    return out


def _scored(
    located: Located[Eval], side: Side, runs: list[FixtureResult], pending: list[str]
) -> EvalResult:
    """An Eval scored over its judged runs: a base run whose judge was not asked
    (`base_judging`) is kept among its runs and counted in `not_judged`, but scores nothing,
    as a fixture the base did not run."""
    judged = [r for r in runs if not r.not_judged]
    scored = score_eval(located, side.value, judged, pending)
    if len(judged) == len(runs):
        return scored
    every = sorted(runs, key=lambda r: (r.fixture, r.rep))
    return scored.model_copy(update={"fixtures": every, "not_judged": len(runs) - len(judged)})


def _not_needed(plan: Plan, name: str, base_runs: list[FixtureResult]) -> list[str]:
    """The held-back base fixtures of `name` that did not run (`base_runs`: the base runs of
    `name`): the head passed them."""
    ran = {r.fixture for r in base_runs}
    return sorted({r.fixture for r in plan.base_when_failing[name]} - ran)
