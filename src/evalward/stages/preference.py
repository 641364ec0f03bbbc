"""The pairwise judge's sequential tests: is the head worse than the base by the Eval's margin?

Each pair (a fixture's base and head runs of one rep, judged in both orders) comes to a head
preference, a base preference, a tie, or nothing (unavailable). Ties and unavailable pairs are
left out (a sign test); among the others let q be the chance that the base is preferred:

- H0, *not worse*: q <= 1/2;
- H1, *worse*: q >= 1/2 + margin.

This is Wald's test of `stages.sequential` (`Sprt`) with a head preference as a pass: good =
1/2, broken = 1/2 - margin. Each decided pair multiplies the likelihood ratio by (1/2 + margin)
/ (1/2) or (1/2 - margin) / (1/2), whose mean is at most 1 whenever q <= 1/2; a tie multiplies
it by 1. So under H0 the ratio is a non-negative supermartingale however ties, fixtures and
reps fall and whenever the rounds stop, and by Ville's inequality it reaches 1 / alpha with
chance at most alpha; symmetrically a head worse by the margin is called not worse with chance
at most beta. Pairs are independent given the runs: each is a fresh pair of runs, judged once.

The tests spend the Eval's `scoring.gate` rates: under adaptive reps half of `falseBlockRate`
(the pass-rate tests keep the other half, so the Eval's false-block rate stays within it),
under fixed reps all of it (no other rule there spends it). That share is split as the
pass-rate tests split theirs: half pooled over the Eval's pairs, half among the fixtures.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from evalward.resources.gate_policy import GatePolicy, RepRange
from evalward.resources.models import EvalSpec
from evalward.rundata.pairwise_record import (
    LEANING_WORSE,
    NO_PAIRS,
    NOT_WORSE,
    OPEN,
    PAIR_FIXTURE_TEST,
    PAIR_POOLED_TEST,
    WORSE,
    CitedStep,
    LengthBucket,
    PairCounts,
    PairRecord,
    PairwiseRecord,
    PreferenceVerdict,
)
from evalward.rundata.sequential_record import bound_text
from evalward.rundata.sides import Side
from evalward.stages.sequential import Settled, Sprt

ABOUT_AS_LONG = 0.1
"""Final outputs within 10 % of each other's length are "about as long"."""


def judged_pairwise(spec: EvalSpec, fixture_asks: bool) -> bool:
    """Whether a fixture of this Eval is judged pairwise: the Eval asks, or the fixture does."""
    return spec.judge.pairwise is not None or fixture_asks


def preference_share(spec: EvalSpec) -> float:
    """The share of `falseBlockRate` the preference tests spend."""
    rate = spec.scoring.gate.false_block_rate
    return rate / 2 if spec.execution.reps is not None else rate


def pass_rate_share(spec: EvalSpec, pairwise: bool) -> float:
    """The share of the Eval's false-block rate its pass-rate tests spend: half with a
    pairwise judge beside them under adaptive reps (the preference tests spend the other
    half), else all of it."""
    return 0.5 if pairwise and spec.execution.reps is not None else 1.0


@dataclass(frozen=True)
class PreferenceTests:
    fixture: Sprt
    pooled: Sprt
    share: float

    @classmethod
    def of(cls, policy: GatePolicy, margin: float, fixtures: int, share: float) -> PreferenceTests:
        low = 0.5 - margin
        return cls(
            fixture=Sprt(0.5, low, share / 2 / max(fixtures, 1), policy.miss_rate),
            pooled=Sprt(0.5, low, share / 2, policy.miss_rate),
            share=share,
        )

    def verdict(self, test: Sprt, counts: PairCounts) -> str:
        if counts.head + counts.base + counts.ties == 0:
            return NO_PAIRS
        state = test.settled(counts.head, counts.base)
        if state is Settled.broken:
            return WORSE
        if state is Settled.works:
            return NOT_WORSE
        return LEANING_WORSE if test.llr(counts.head, counts.base) > 0 else OPEN


def decide(
    tests: PreferenceTests,
    pairs: Sequence[PairRecord],
    gating: Collection[str],
    *,
    model: str,
    margin: float,
    length_controlled: bool = False,
) -> PairwiseRecord:
    """Each gating fixture's verdict, the pooled one, the length bias and why it blocks."""
    by_fixture: dict[str, list[PairRecord]] = {}
    for pair in sorted(pairs, key=lambda p: (p.fixture, p.rep)):
        by_fixture.setdefault(pair.fixture, []).append(pair)
    verdicts = []
    for name in sorted(by_fixture):
        counts = PairCounts.of(by_fixture[name])
        verdict = tests.verdict(tests.fixture, counts)
        verdicts.append(
            PreferenceVerdict(
                fixture=name,
                verdict=verdict,
                counts=counts,
                p_bound=tests.fixture.bound(counts.head, counts.base),
                blocks=verdict == WORSE and name in gating,
            )
        )
    counted = [p for p in pairs if p.fixture in gating]
    pooled_counts = PairCounts.of(counted)
    pooled = tests.verdict(tests.pooled, pooled_counts)
    record = PairwiseRecord(
        model=model,
        margin=margin,
        alpha=tests.share,
        beta=tests.fixture.beta,
        fixture_alpha=tests.fixture.alpha,
        pooled_alpha=tests.pooled.alpha,
        fixtures=verdicts,
        pooled=pooled,
        pooled_counts=pooled_counts,
        pooled_p_bound=tests.pooled.bound(pooled_counts.head, pooled_counts.base),
        length_controlled=length_controlled,
        length_bias=length_bias(pairs),
        pairs=sorted(pairs, key=lambda p: (p.fixture, p.rep)),
    )
    judged = [p for p in pairs if p.preferred != "unavailable"]
    consistent = [p for p in judged if p.consistent]
    blocks = pooled == WORSE or any(v.blocks for v in verdicts)
    record = record.model_copy(
        update={
            "blocks": blocks,
            "run_consistency": len(consistent) / len(judged) if judged else None,
        }
    )
    return record.model_copy(update={"why": why(record)}) if blocks else record


def length_bias(pairs: Sequence[PairRecord]) -> list[LengthBucket]:
    """The head's win rate among decided pairs, by how its final output's length compares
    with the base's: what a judge that likes length would show as a rising rate."""
    buckets: dict[str, list[bool]] = {"head shorter": [], "about as long": [], "head longer": []}
    for pair in pairs:
        if pair.preferred not in ("head", "base"):
            continue
        longest = max(pair.head_chars, pair.base_chars, 1)
        difference = (pair.head_chars - pair.base_chars) / longest
        name = (
            "about as long"
            if abs(difference) <= ABOUT_AS_LONG
            else "head longer"
            if difference > 0
            else "head shorter"
        )
        buckets[name].append(pair.preferred == "head")
    return [
        LengthBucket(bucket=name, decided=len(wins), head_wins=sum(wins))
        for name, wins in buckets.items()
    ]


def why(record: PairwiseRecord) -> list[str]:
    """One line per thing that blocks: the test, the fixtures, the counts of both orders,
    the bound against its share of the false-block rate, and the steps the judge cited on
    each side."""
    said = []
    for verdict in record.fixtures:
        if not verdict.blocks:
            continue
        said.append(
            f"{verdict.fixture} worse by the pairwise judge ({PAIR_FIXTURE_TEST}, margin "
            f"{record.margin:g}): {verdict.counts.text()}; p ≤ {bound_text(verdict.p_bound)}, "
            f"within its share of the false-block rate {bound_text(record.fixture_alpha)}"
            f"{cited(record.pairs_of(verdict.fixture))}"
        )
    if record.pooled == WORSE:
        drivers = [
            f"{v.fixture} (base {v.counts.base}, head {v.counts.head})"
            for v in sorted(record.fixtures, key=lambda v: v.counts.head - v.counts.base)
            if v.counts.base > v.counts.head
        ]
        worst = drivers[0].split(" (")[0] if drivers else ""
        said.append(
            f"the head is worse by the pairwise judge ({PAIR_POOLED_TEST}, margin "
            f"{record.margin:g}): {record.pooled_counts.text()}; p ≤ "
            f"{bound_text(record.pooled_p_bound)}, within its share of the false-block rate "
            f"{bound_text(record.pooled_alpha)}; driven by {', '.join(drivers[:5]) or 'no fixture'}"
            f"{cited(record.pairs_of(worst)) if worst else ''}"
        )
    return said


def cited(pairs: Sequence[PairRecord]) -> str:
    """The steps the judge cited on each side in the first pair the base won: a quote from
    the base's run and one from the head's."""
    pair = next((p for p in pairs if p.preferred == "base"), None)
    if pair is None or pair.private:
        return ""
    steps = [e for order in pair.orders for e in order.evidence if e.supported]
    shown = [
        _quote(step)
        for step in (
            next((e for e in steps if e.side == "base"), None),
            next((e for e in steps if e.side == "head"), None),
        )
        if step is not None
    ]
    return f"; the judge cites (rep {pair.rep}) " + " against ".join(shown) if shown else ""


def _quote(step: CitedStep) -> str:
    quote = " ".join(step.quote.split())
    quote = quote if len(quote) <= 120 else quote[:117] + "…"
    return f"{step.side} step {step.step} “{quote}”"


def more_pairs(
    tests: PreferenceTests,
    pairs: Sequence[PairRecord],
    runs: dict[Side, dict[str, int]],
    reps: RepRange,
    fixtures: Collection[str],
) -> list[tuple[Side, str]]:
    """The runs that would make the next pairs where the preference is still open and could
    block: a side behind the other catches up first (a pair waits on its other run); then a
    head and a base rep for each fixture whose own test is open leaning worse; then, once
    none is, for the pooled test when it is open leaning worse, just the pairs that could
    settle it not worse, to the fixtures with the fewest pairs. A fixture at `reps.max`
    pairs gets none, and nothing is asked where no pair points to a worse head."""
    asked: list[tuple[Side, str]] = []
    by_fixture = {name: [p for p in pairs if p.fixture == name] for name in fixtures}
    candidates: list[str] = []
    for name in sorted(fixtures):
        head, base = runs[Side.head].get(name, 0), runs[Side.base].get(name, 0)
        if head != base:
            side = Side.base if base < head else Side.head
            asked += [(side, name)] * abs(head - base)
            continue
        counts = PairCounts.of(by_fixture[name])
        if head >= reps.max or (counts.unavailable and counts.judged == 0):
            continue  # a judge that answers nothing gets no more pairs to leave unanswered
        candidates.append(name)
        if tests.verdict(tests.fixture, counts) == LEANING_WORSE:
            asked += [(Side.head, name), (Side.base, name)]
    if asked:
        return asked
    pooled = PairCounts.of([p for p in pairs if p.fixture in fixtures])
    if tests.verdict(tests.pooled, pooled) != LEANING_WORSE:
        return asked
    step = -tests.pooled.llr(1, 0)
    needed = math.ceil((tests.pooled.llr(pooled.head, pooled.base) - tests.pooled.lower) / step)
    ranked = sorted(candidates, key=lambda n: (len(by_fixture[n]), n))
    for name in ranked[: max(needed, 0)]:
        asked += [(Side.head, name), (Side.base, name)]
    return asked
