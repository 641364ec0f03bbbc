"""The one rule that an Eval that cannot be decided is never a pass.

Scoring says what each check found (`scoring/`: a judge below its calibration floor marks
its assertion `cannot_decide`) and what the Eval's own rules give (`score_eval`: its
threshold, its pass^k floor). Here, and nowhere else, that becomes a verdict: an Eval one of
whose gating judges cannot decide is *inconclusive* — it does not pass, and is not advisory —
unless its other evidence already fails it (a run that failed or timed out, the rest of its
assertions below its threshold), since that evidence needs no judge. `settle` applies it to
every Eval's result on both sides, before the sequential and preference tests, which keep to
it: their verdicts pass an Eval only where no judge it reads is undecided (`tested`), and
no outage left a gating fixture unsettled (`unsettled_by_outage`).
"""

from __future__ import annotations

from collections import Counter

from evalward.rundata.pairwise_record import PairwiseRecord
from evalward.rundata.results import EvalResult
from evalward.rundata.sequential_record import SequentialRecord
from evalward.scoring.judges.pairwise_panel import WHAT_TO_DO


def inconclusive_reason(undecided: str) -> str:
    """An Eval's reason it has no verdict, from why its judge cannot decide: and what to do."""
    return f"{undecided}; {WHAT_TO_DO}"


def withheld(result: EvalResult) -> EvalResult:
    """The result as scored by its own rules, inconclusive (not passing) when a judge of its
    gating fixtures cannot decide and no other evidence fails it. An incomplete result (its
    judge could not be calibrated, an outage) already has no verdict and says why."""
    if result.incomplete_reason:
        return result
    undecided = _of_gating(result)
    decided = result.passing + result.failing > 0
    evidence_fails = not result.passed and (decided or result.timed_out > 0)
    if not undecided or evidence_fails:
        return result
    reason = inconclusive_reason(undecided)
    return result.model_copy(update={"inconclusive_reason": reason, "passed": False})


def tested(result: EvalResult, *, blocks: bool) -> EvalResult:
    """The result whose verdict its sequential tests give: inconclusive where a judge of its
    gating fixtures cannot decide, unless the tests already block it (they are the evidence
    that needs no judge) or it is incomplete (it has no verdict and says why). The tests pass
    it only where this leaves no `inconclusive_reason`."""
    undecided = "" if blocks or result.incomplete_reason else _of_gating(result)
    reason = inconclusive_reason(undecided) if undecided else ""
    return result.model_copy(update={"inconclusive_reason": reason})


def unsettled_by_outage(
    result: EvalResult, sequential: SequentialRecord, *, blocks: bool
) -> EvalResult:
    """The adaptive result with no verdict where an outage kept a gating fixture unsettled:
    a head run whose providers failed through their retries says nothing, and the runs it
    took the place of might have settled the fixture broken (an agent that makes its failing
    runs outages, a request too large for the provider, must not pass by them). Unavailable,
    as an Eval whose every run was an outage is, unless the tests already block it."""
    if blocks or result.incomplete_reason:
        return result
    outages = Counter(
        run.fixture
        for run in result.fixtures
        if run.provider_unavailable and run.fixture not in result.pending
    )
    open_ = [
        (name, count)
        for name, count in outages.items()
        if (call := sequential.of(name)) is not None and not call.settled
    ]
    if not open_:
        return result
    said = ", ".join(f"{name} ({count} of its head reps)" for name, count in sorted(open_))
    reason = (
        f"its model providers failed through their retries, or refused the API key, on "
        f"fixture(s) {said}, which the other reps do not settle"
    )
    return result.model_copy(
        update={"passed": False, "provider_unavailable": True, "incomplete_reason": reason}
    )


def failed_by_evidence() -> dict[str, object]:
    """What an Eval becomes when evidence that needs no judge fails it (the pairwise
    preference tests block): not passing, and no longer inconclusive, whatever a judge
    could not decide."""
    return {"passed": False, "inconclusive_reason": ""}


def pairwise_undecided(record: PairwiseRecord, reason: str) -> PairwiseRecord:
    """The pairwise record of a judge that cannot decide (`reason`): evidence that blocks
    still blocks, and each of its lines says what is known of the judge."""
    why = [f"{line} (the judge otherwise cannot decide: {reason})" for line in record.why]
    return record.model_copy(update={"inconclusive_reason": reason, "why": why})


def withheld_by_pairwise(model: str, reason: str) -> dict[str, object]:
    """What an Eval that would otherwise pass becomes when its pairwise judge `model` cannot
    decide (`reason`): not passing, and why, with what to do."""
    said = f"its pairwise judge {model} cannot decide: {reason}"
    return {"passed": False, "inconclusive_reason": inconclusive_reason(said)}


def _of_gating(result: EvalResult) -> str:
    """Why a judge of the result's gating fixtures (not the pending ones) cannot decide (the
    first said), or "" when every judge may."""
    gating = (f for f in result.fixtures if f.fixture not in result.pending)
    return next((a.cannot_decide for f in gating for a in f.assertions if a.cannot_decide), "")
