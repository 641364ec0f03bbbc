"""The one rule that an Eval that cannot be decided is never a pass.

Scoring says what each check found (`scoring/`: a judge below its calibration floor marks
its assertion `cannot_decide`) and what the Eval's own rules give (`score_eval`: its
threshold, its pass^k floor). Here, and nowhere else, that becomes a verdict: an Eval one of
whose gating judges cannot decide is *inconclusive* — it does not pass, and is not advisory —
unless its other evidence already fails it (a run that failed or timed out, the rest of its
assertions below its threshold), since that evidence needs no judge. `settle` applies it to
every Eval's result on both sides, before the sequential and preference tests, which keep to
it: their verdicts pass an Eval only where no judge it reads is undecided.
"""

from __future__ import annotations

from collections.abc import Iterable

from evalward.rundata.results import EvalResult, FixtureResult
from evalward.scoring.pairwise_panel import WHAT_TO_DO


def cannot_decide(fixtures: Iterable[FixtureResult]) -> str:
    """Why a judge of these runs cannot decide (the first said), or "" when every judge may."""
    return next((a.cannot_decide for f in fixtures for a in f.assertions if a.cannot_decide), "")


def inconclusive_reason(undecided: str) -> str:
    """An Eval's reason it has no verdict, from why its judge cannot decide: and what to do."""
    return f"{undecided}; {WHAT_TO_DO}"


def withheld(result: EvalResult) -> EvalResult:
    """The result as scored by its own rules, inconclusive (not passing) when a judge of its
    gating fixtures cannot decide and no other evidence fails it. An incomplete result (its
    judge could not be calibrated, an outage) already has no verdict and says why."""
    if result.incomplete_reason:
        return result
    undecided = cannot_decide(f for f in result.fixtures if f.fixture not in result.pending)
    decided = result.passing + result.failing > 0
    evidence_fails = not result.passed and (decided or result.timed_out > 0)
    if not undecided or evidence_fails:
        return result
    reason = inconclusive_reason(undecided)
    return result.model_copy(update={"inconclusive_reason": reason, "passed": False})
