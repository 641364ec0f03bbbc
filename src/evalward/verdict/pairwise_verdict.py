"""An Eval's pairwise verdict, from its judged pairs: the preference tests (`preference`) at the
Eval's rates, kept on the head's EvalResult (`pairwise`).

A head worse by the margin fails the Eval, whatever else is said of the judge: significant
evidence is never set aside. A judge that cannot decide (uncalibrated, below its calibration's
floors, or shown inconsistent across orders in this run, which is what a head answer that sways
it by position does) leaves an Eval its own rules pass *inconclusive*: it does not pass, and
says why and what to do. A judge whose calibration is too small to tell is left out: its
record says why, and the Eval is what its own rules make it. A judge that could not answer
leaves the Eval without a verdict (`incomplete`, `unavailable` for an outage), never a pass."""

from __future__ import annotations

from evalward.resources import Located
from evalward.resources.models import Eval
from evalward.rundata.pairwise_record import SETTLED_PREFERENCES, PairwiseRecord
from evalward.rundata.results import EvalResult
from evalward.scoring.judges.consistency import (
    CONSISTENCY_ALPHA,
    binomial_upper_bound,
    consistency_below,
)
from evalward.scoring.judges.pairwise_panel import CONFIDENCE, Judged, PairwiseJudge
from evalward.text.numbers import score_text, threshold_text
from evalward.verdict.preference import (
    PreferenceTests,
    as_judged,
    base_win_set_aside,
    decide,
    preference_share,
    swapped,
)
from evalward.verdict.undecided import (
    failed_by_evidence,
    pairwise_undecided,
    withheld_by_pairwise,
)


def settle_pairwise(result: EvalResult, located: Located[Eval], judged: Judged) -> EvalResult:
    """The head result with its pairwise record: failing when the head is worse, inconclusive
    when its judge cannot decide an Eval that would otherwise pass."""
    spec = located.resource.spec
    judge = judged.judge
    tests = PreferenceTests.of(spec.scoring.gate, judge.margin, preference_share(spec))
    gating = [o.name for o in result.fixture_results if o.gates and o.name in judged.fixtures]
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
    if judge.left_out_reason:  # too few pairs to tell: it decides nothing, the rest does
        left_out = {"left_out_reason": judge.left_out_reason, "blocks": False, "why": []}
        return result.model_copy(update={"pairwise": record.model_copy(update=left_out)})
    record = _cannot_decide(record, judge, length_undecided(record, tests, gating))
    record = _unavailable(record, judge.unscored_reason, judge.unscored_outage, gating)
    update: dict[str, object] = {"pairwise": record}
    if record.blocks:  # evidence that fails it: the absolute judge's state no longer matters
        update |= failed_by_evidence()
    elif record.unavailable_reason:
        update["passed"] = False
        own = result.incomplete_reason or result.provider_unavailable or result.inconclusive_reason
        update["pairwise"] = record.model_copy(update={"withholds": not own})
        update["incomplete_reason"] = result.incomplete_reason or record.unavailable_reason
        update["provider_unavailable"] = result.provider_unavailable or record.outage
    elif record.inconclusive_reason and result.passed:
        update |= withheld_by_pairwise(judge.model, record.inconclusive_reason)
        update["pairwise"] = record.model_copy(update={"withholds": True})
    return result.model_copy(update=update)


def _cannot_decide(record: PairwiseRecord, judge: PairwiseJudge, length: str) -> PairwiseRecord:
    """The judge's reason it cannot decide: its calibration's, this run's pairs judged alike
    in both orders so seldom that even the share's upper confidence bound is below the
    consistency floor, or length control setting aside the preferences that would block
    (`length`). Evidence that blocks still blocks, and says what is known of the judge."""
    reason = (
        judge.inconclusive_reason or run_inconsistency(record, judge.consistency_floor) or length
    )
    return pairwise_undecided(record, reason) if reason else record


def length_undecided(record: PairwiseRecord, tests: PreferenceTests, gating: list[str]) -> str:
    """Why length control leaves the judge unable to decide, or "": the pairs whose preference
    for the base's longer answer it counted as ties would, counted as the judge gave them,
    find the head worse. Whether the judge preferred the base for its content or its length
    cannot be told, and the head chooses its own length: a head made terse would otherwise
    turn every pair it loses into a tie and pass. A tie for a longer head stays a tie (a
    head does not win by length)."""
    longer_base = [p for p in record.pairs if base_win_set_aside(p)]
    if record.blocks or not longer_base:
        return ""
    restored = as_judged(record.pairs)
    if not decide(tests, restored, gating, model=record.model, margin=record.margin).blocks:
        return ""
    return (
        f"length control counted {len(longer_base)} of its {len(record.pairs)} pairs, each "
        "judged in both orders to go to the base's longer answer, as ties; counted as the "
        "judge gave them, the head is worse, and whether for its content or its length cannot "
        "be told (turn `lengthControlled` off to let the judge's preference count)"
    )


def run_inconsistency(record: PairwiseRecord, floor: float) -> str:
    """Why this run's own pairs show the judge inconsistent across orders, or "". Which side
    was shown first decides nothing of a pair, so a judge swayed by position (as a head answer
    that tells it to prefer whatever it reads first makes it) shows here: it is a finding of
    the run, not a judge to set aside."""
    judged = swapped(record.pairs)
    consistent = sum(p.consistent for p in judged)
    if not judged or not consistency_below(consistent, len(judged), floor):
        return ""
    upper = binomial_upper_bound(consistent, len(judged), CONSISTENCY_ALPHA)
    swayed = _swayed(record)
    return (
        f"position sway in this run: {consistent} of its {len(judged)} pairs asked in both "
        f"orders judged alike (at most {score_text(upper, floor, passed=False)} at "
        f"{CONFIDENCE}), below the consistency floor {threshold_text(floor)}{swayed}; the "
        "answers it compared, the head's among them, sway it"
    )


def _swayed(record: PairwiseRecord) -> str:
    """Which way the disagreeing pairs lean: toward the run shown first, or second."""
    first = second = 0
    for pair in record.pairs:
        if pair.consistent or len(pair.orders) != 2:
            continue
        answers = {o.shown_first: o.answer for o in pair.orders}
        if answers.get("base") == answers.get("head") == "A":
            first += 1
        elif answers.get("base") == answers.get("head") == "B":
            second += 1
    if not first and not second:
        return ""
    return f" ({first} preferred the run shown first in both orders, {second} the second)"


def _unavailable(
    record: PairwiseRecord, unscored: str, outage: bool, gating: list[str]
) -> PairwiseRecord:
    """Why the judge gives no verdict: its calibration could not be computed, or pairs got no
    answer and a test they belong to is not settled: the pooled test, or the test of a gating
    fixture (what they would have said could decide it). A pooled test the other fixtures
    settle says nothing of a fixture whose own pairs went unanswered: a head whose answers on
    the fixture it breaks are too large for the judge's provider would otherwise pass on the
    pairs it wins elsewhere."""
    if unscored:
        return record.model_copy(
            update={"unavailable_reason": unscored, "outage": outage, "blocks": False, "why": []}
        )
    counts = record.pooled_counts
    if not counts.unavailable or record.blocks:
        return record
    open_fixtures = [
        v.fixture
        for v in record.fixtures
        if v.fixture in gating and v.counts.unavailable and v.verdict not in SETTLED_PREFERENCES
    ]
    if record.pooled in SETTLED_PREFERENCES and not open_fixtures:
        return record
    unsettled = (
        "its test is not settled"
        if record.pooled not in SETTLED_PREFERENCES
        else f"the test of {', '.join(open_fixtures)}, whose pairs they are, is not settled"
    )
    lost = [p for p in record.pairs if p.preferred == "unavailable"]
    errors = [o.error for p in lost for o in p.orders if o.error]
    return record.model_copy(
        update={
            "unavailable_reason": (
                f"the pairwise judge gave no answer on {counts.unavailable} of {counts.pairs} "
                f"pairs ({errors[0] if errors else 'no reason given'}) and {unsettled}"
            ),
            "outage": all(p.outage for p in lost),
        }
    )
