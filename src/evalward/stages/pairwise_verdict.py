"""An Eval's pairwise verdict, from its judged pairs: the preference tests (`preference`) at the
Eval's rates, kept on the head's EvalResult (`pairwise`). A head worse by the margin fails the
Eval; an advisory judge (uncalibrated, below its floors, or inconsistent in this run) blocks
nothing and says why; a judge that could not answer leaves the Eval without a verdict
(`incomplete`, `unavailable` for an outage), never a pass."""

from __future__ import annotations

from evalward.resources import Located
from evalward.resources.models import Eval
from evalward.rundata.pairwise_record import SETTLED_PREFERENCES, PairwiseRecord
from evalward.rundata.results import EvalResult
from evalward.scoring.pairwise_panel import Judged
from evalward.stages.preference import PreferenceTests, decide, preference_share

MIN_PAIRS_FOR_CONSISTENCY = 4
"""A run's own position consistency is read once it has this many judged pairs."""


def settle_pairwise(result: EvalResult, located: Located[Eval], judged: Judged) -> EvalResult:
    """The head result with its pairwise record, failing when the head is worse."""
    spec = located.resource.spec
    judge = judged.judge
    gating = [o.name for o in result.fixture_results if o.gates and o.name in judged.fixtures]
    tests = PreferenceTests.of(spec.scoring.gate, judge.margin, len(gating), preference_share(spec))
    record = decide(
        tests,
        judged.pairs,
        gating,
        model=judge.model,
        margin=judge.margin,
        length_controlled=judge.length_controlled,
    ).model_copy(
        update={
            "agreement": judge.agreement,
            "calibration_consistency": judge.consistency,
        }
    )
    record = _advisory(record, judge.advisory_reason, judge.consistency_floor)
    record = _unavailable(record, judge.unscored_reason, judge.unscored_outage)
    update: dict[str, object] = {"pairwise": record}
    if record.blocks:
        update["passed"] = False
    elif record.unavailable_reason and not record.advisory:
        update["passed"] = False
        update["incomplete_reason"] = result.incomplete_reason or record.unavailable_reason
        update["provider_unavailable"] = result.provider_unavailable or record.outage
    return result.model_copy(update=update)


def _advisory(record: PairwiseRecord, reason: str, floor: float) -> PairwiseRecord:
    """Advisory when its calibration says so, or when this run's pairs were judged alike in
    both orders less often than the consistency floor: it then blocks nothing."""
    judged = record.pooled_counts.judged
    consistency = record.run_consistency
    read = judged >= MIN_PAIRS_FOR_CONSISTENCY and consistency is not None
    if not reason and read and consistency is not None and consistency < floor:
        reason = (
            f"inconsistent in this run: {100 * consistency:.0f} % of its {judged} pairs "
            f"judged alike in both orders, below the consistency floor {floor:.2f}"
        )
    if not reason:
        return record
    return record.model_copy(
        update={"advisory": True, "advisory_reason": reason, "blocks": False, "why": []}
    )


def _unavailable(record: PairwiseRecord, unscored: str, outage: bool) -> PairwiseRecord:
    """Why the judge gives no verdict: its calibration could not be computed, or pairs got no
    answer and its test is not settled (what they would have said could decide it)."""
    if unscored:
        return record.model_copy(
            update={"unavailable_reason": unscored, "outage": outage, "blocks": False, "why": []}
        )
    counts = record.pooled_counts
    if not counts.unavailable or record.blocks or record.pooled in SETTLED_PREFERENCES:
        return record
    lost = [p for p in record.pairs if p.preferred == "unavailable"]
    errors = [o.error for p in lost for o in p.orders if o.error]
    return record.model_copy(
        update={
            "unavailable_reason": (
                f"the pairwise judge gave no answer on {counts.unavailable} of {counts.pairs} "
                f"pairs ({errors[0] if errors else 'no reason given'}) and its test is not "
                "settled"
            ),
            "outage": all(p.outage for p in lost),
        }
    )
