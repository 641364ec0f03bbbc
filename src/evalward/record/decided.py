"""What decided a blocked Eval, in the few words a headline and a counts line give it.

An Eval is blocked by one of its rules — its threshold or pass^k floor (fixed reps), its
per-fixture or pooled sequential test (adaptive reps), its pairwise judge, `failOnRegression`
— and each surface names that rule with its numbers, never a score set against a threshold
that did not decide ("1.00 < 1.00") nor an Eval's name with nothing after it. An Eval's own
evidence (a pooled test, a pairwise judge) is not in its fixtures' counts, which may all pass:
`eval_evidence` names it for the counts line.
"""

from __future__ import annotations

from evalward.resources.gate_policy import RegressionPolicy
from evalward.rundata.pairwise_record import PairCounts, PairwiseRecord
from evalward.rundata.sequential_record import POOLED_TEST, SequentialRecord
from evalward.text.counts import first_few
from evalward.text.numbers import bound_text
from evalward.verdict.blocked import falls_short, pairwise_only, policy_of
from evalward.verdict.compare import EvalComparison

PAIRWISE_WORSE = "head preferred less than base"


def decided_by(comparison: EvalComparison, regressions: RegressionPolicy) -> str:
    """What blocks a failing Eval, by the rule that decided it: never empty."""
    head = comparison.head
    said = []
    if head.pairwise is not None and head.pairwise.blocks:
        said.append(pairwise_text(head.pairwise))
    if pairwise_only(comparison):
        return "; ".join(said)
    if head.sequential is not None:
        said.insert(0, head.sequential.decided_by() or _undecided(head.sequential))
    elif head.passed:
        said.append(regression_rule(comparison, regressions))
    else:
        said.insert(0, shortfall(comparison))
    return "; ".join(said)


def regression_rule(comparison: EvalComparison, regressions: RegressionPolicy) -> str:
    """The rule that fails an Eval meeting its threshold on a regression, in words: "a
    significant regression blocks (failOnRegression: significant)"."""
    policy = policy_of(comparison, regressions)
    kind = "significant " if policy is RegressionPolicy.significant else ""
    return f"a {kind}regression blocks (failOnRegression: {policy.value})"


def shortfall(comparison: EvalComparison) -> str:
    """The fixed-reps rule a failing Eval falls short of: its threshold, else its pass^k
    floor ("score 0.62 < threshold 0.85")."""
    pass_k, reached, line = falls_short(comparison)
    return f"pass^k {reached} < {line}" if pass_k else f"score {reached} < threshold {line}"


def _undecided(record: SequentialRecord) -> str:
    """A sequential Eval that fails while none of its tests blocks (a fixture that fails
    outright, say): its fixtures' verdicts, said as such."""
    broken = [f for f in record.fixtures if f.broken]
    if broken:
        named = ", ".join(f"{f.fixture} {f.verdict}" for f in broken[:3])
        return f"{len(broken)} fixture(s) settled failing ({named})"
    return f"its sequential tests ({record.pooled}: head {record.pooled_head})"


def pairwise_text(record: PairwiseRecord, *, named: bool = True) -> str:
    """ "head preferred less than base (pairwise judge, pooled: base preferred 28 · head 6 ·
    ties 6 of 40 pairs, p ≤ 1.7e-03)"; per fixture when the fixtures' tests decided. Without
    `named`, the judge is left unsaid (the sentence already names it)."""
    judge = "pairwise judge, " if named else ""
    if record.pooled == "worse":
        return (
            f"{PAIRWISE_WORSE} ({judge}pooled: {_pairs(record.pooled_counts)}, "
            f"p ≤ {bound_text(record.pooled_p_bound)})"
        )
    blocking = [f for f in record.fixtures if f.blocks]
    if len(blocking) == 1:
        (only,) = blocking
        return (
            f"{PAIRWISE_WORSE} on {only.fixture} ({judge}{_pairs(only.counts)}, "
            f"p ≤ {bound_text(only.p_bound)})"
        )
    fixtures = first_few([f.fixture for f in blocking], 3)
    return f"{PAIRWISE_WORSE} on {len(blocking)} fixtures ({judge}{fixtures})"


def _pairs(counts: PairCounts) -> str:
    return (
        f"base preferred {counts.base} · head {counts.head} · ties {counts.ties} of "
        f"{counts.pairs} pairs"
    )


def eval_evidence(comparison: EvalComparison) -> str:
    """What blocks an Eval beside its fixtures' own results, for the counts line, which
    counts fixtures: its pooled sequential test, its pairwise judge; "" when only its
    fixtures' results (or its threshold over them) decide."""
    head = comparison.head
    said = []
    if head.sequential is not None and head.sequential.pooled_blocks:
        said.append(f"its {POOLED_TEST}: {pooled_rates(head.sequential)}")
    if head.pairwise is not None and head.pairwise.blocks:
        said.append(f"its pairwise judge: {pairwise_text(head.pairwise, named=False)}")
    if not said:
        return ""
    return f"{comparison.name} blocked by " + " and ".join(said)


def pooled_rates(record: SequentialRecord) -> str:
    """ "head's pass rate 0.62 (31/50) vs base 0.91 (41/45)"."""
    text = f"head's pass rate {_rate(record.pooled_head)}"
    if record.pooled_base:
        text += f" vs base {_rate(record.pooled_base)}"
    return text


def _rate(fraction: str) -> str:
    """ "0.62 (31/50)" of "31/50"; the fraction alone when it is not one."""
    passes, _, runs = fraction.partition("/")
    if not (passes.isdigit() and runs.isdigit() and int(runs)):
        return fraction
    return f"{int(passes) / int(runs):.2f} ({fraction})"
