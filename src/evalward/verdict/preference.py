"""The pairwise judge's sequential tests: is the head worse than the base by the Eval's margin?

Each pair (a fixture's base and head runs of one rep, judged in both orders) comes to a head
preference, a base preference, a tie, or nothing (unavailable). Ties and unavailable pairs are
left out (a sign test); among the others let q be the chance that the base is preferred. Under
H0, *not worse*, q <= 1/2 (on a pull request that changes nothing the two runs of a pair are
alike in law, so q is exactly 1/2). Two tests read the pairs, each a non-negative
supermartingale under H0, so by Ville's inequality each crosses its line 1 / alpha with chance
at most its alpha however ties, fixtures and reps fall and whenever the rounds stop (Wald 1945;
Ville 1939). Pairs are independent given the runs: each is a fresh pair of runs, judged once.

- **Pooled**, over every gating fixture's pairs: Wald's test (`verdict.sequential`, `Sprt`) of
  H0 against H1, *worse*, q >= 1/2 + margin, with a head preference as a pass. Each decided pair
  multiplies the ratio by (1/2 + margin) / (1/2) or (1/2 - margin) / (1/2), a tie by 1. It finds
  a drop spread over the fixtures; its lower line calls the head not worse, missing a head
  worse by the margin at most beta of the time.
- **Per fixture, over the fixtures that lean worse.** Split over every fixture (Bonferroni), a
  fixture's line is out of reach: at 10 fixtures, even a fixture the base wins 8 pairs of 8
  is as likely as 10 / 256 somewhere on an unchanged pull request. So a fixture's *first* pair
  decides whether it leans worse (the base won it), the fixture share of alpha is split only
  over the K fixtures that do, and each is tested on its *later* pairs only: fresh data, whose
  chance under H0 does not depend on the selection, so the false-block rate holds (the K first
  pairs are independent of each fixture's later ones: a union bound over the leaning fixtures
  given K). The test is the exact sign test of a fixture the base wins every later decided pair
  of: its ratio 2^b after b such pairs (p = 2^-b, the chance a fair coin gives b in a row), 0
  once the head wins one. It is the most evidence b pairs can hold (a ratio for any alternative
  q is at most (2q)^b), so at init's reps (8) the seven later pairs of the one fixture that
  leans worse reach 128, past its line 1 / 0.01; a test at the margin's alternative would reach
  1.4^7 ≈ 10.5. A fixture the judge is less sure of is the pooled test's; a fixture that leans
  worse and whose line is still reachable gets another pair, up to `reps.max`.

A fixture's **not worse** verdict is the margin's test on all its pairs (its lower line, at
beta): it stops asking for pairs, and blocks nothing.

The tests spend the Eval's `scoring.gate` rates as docs/assertions.md ("The test") says:
`PREFERENCE_SHARE` of `falseBlockRate` beside adaptive reps, all of it with fixed reps, of
which the pooled test spends `POOLED_PART`.
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
from evalward.rundata.sides import Side
from evalward.text.cuts import cap_chars
from evalward.text.numbers import bound_text
from evalward.verdict.sequential import Settled, Sprt

ABOUT_AS_LONG = 0.1
"""Final outputs within 10 % of each other's length are "about as long"."""


def preference_share(spec: EvalSpec) -> float:
    """The share of `falseBlockRate` the preference tests spend."""
    rate = spec.scoring.gate.false_block_rate
    return rate * PREFERENCE_SHARE if spec.execution.reps is not None else rate


POOLED_ASKS_TOWARD = 0.5
"""How far toward its lower line (not worse) the pairs an open pooled test leaning worse asks
for at once could take it, were the head to win each: half-way. All the way asked for pairs
past the point where a pull request that changed nothing leans worse no more, and detected
no more drops (docs/benchmarks.md, "The pairwise judge's power through the product")."""
PREFERENCE_SHARE = 0.75
"""Under adaptive reps, the preference tests' share of `falseBlockRate`; the pass-rate tests
keep the rest."""
POOLED_PART = 1 / 3
"""The pooled preference test's part of the preference tests' share; the fixtures that lean
worse split the rest."""


def pass_rate_share(spec: EvalSpec, pairwise: bool) -> float:
    """The share of the Eval's false-block rate its pass-rate tests spend: a quarter with a
    pairwise judge beside them under adaptive reps (the preference tests spend the rest),
    else all of it."""
    return 1 - PREFERENCE_SHARE if pairwise and spec.execution.reps is not None else 1.0


@dataclass(frozen=True)
class PreferenceTests:
    """An Eval's preference tests: the margin's test (the pooled test's, and a fixture's
    lower line), the pooled test, and the share the fixtures that lean worse split."""

    fixture: Sprt
    """The margin's test on one fixture's pairs: its lower line says not worse. Its alpha is
    the part of alpha split over the fixtures that lean worse."""
    pooled: Sprt
    share: float

    @classmethod
    def of(cls, policy: GatePolicy, margin: float, share: float) -> PreferenceTests:
        low = 0.5 - margin
        pooled_alpha = share * POOLED_PART
        return cls(
            fixture=Sprt(0.5, low, share - pooled_alpha, policy.miss_rate),
            pooled=Sprt(0.5, low, pooled_alpha, policy.miss_rate),
            share=share,
        )

    def consistent(self, leaning: int) -> Sprt:
        """The sign test of a fixture the base wins every later pair of, at its part of the
        alpha the `leaning` fixtures split (H1 q = 1: a head preference ends it)."""
        return Sprt(0.5, 0.0, self.fixture.alpha / max(leaning, 1), self.fixture.beta)

    def verdict(self, test: Sprt, counts: PairCounts) -> str:
        if counts.head + counts.base + counts.ties == 0:
            return NO_PAIRS
        state = test.settled(counts.head, counts.base)
        if state is Settled.broken:
            return WORSE
        if state is Settled.works:
            return NOT_WORSE
        return LEANING_WORSE if test.llr(counts.head, counts.base) > 0 else OPEN

    def fixture_verdict(self, pairs: list[PairRecord], leaning: int) -> tuple[str, float]:
        """One fixture's verdict and its p bound: worse when it leans worse and its later
        pairs cross its line; else the margin's test on all its pairs, which never blocks."""
        later = PairCounts.of(pairs[1:])
        test = self.consistent(leaning)
        bound = test.bound(later.head, later.base) if leans_worse(pairs) else 1.0
        if leans_worse(pairs) and test.settled(later.head, later.base) is Settled.broken:
            return WORSE, bound
        verdict = self.verdict(self.fixture, PairCounts.of(pairs))
        return (OPEN if verdict == WORSE else verdict), bound

    def reachable(self, pairs: list[PairRecord], leaning: int, most: int) -> bool:
        """Whether a fixture that leans worse could still cross its line within `most`
        pairs: no later pair went to the head, and the base winning every pair left would
        do."""
        if not leans_worse(pairs):
            return False
        later = PairCounts.of(pairs[1:])
        test = self.consistent(leaning)
        if later.head or test.settled(later.head, later.base) is Settled.broken:
            return False
        return test.llr(0, later.base + max(most - len(pairs), 0)) >= test.upper


def base_win_set_aside(pair: PairRecord) -> bool:
    """Whether length control counted as a tie a pair the judge gave the base's longer
    answer in both orders."""
    return pair.length_tie and pair.base_chars > pair.head_chars


def as_judged(pairs: Sequence[PairRecord]) -> list[PairRecord]:
    """The pairs with each length tie that set aside the base's win (the judge preferred the
    base's longer answer in both orders) counted as the judge gave it. The head chooses its own
    length, so what a terse head lost is weighed, never hidden: the adaptive rounds ask for
    pairs by it, and the verdict finds the judge unable to decide where it would block
    (`pairwise_verdict.length_undecided`). A tie for a longer head stays a tie."""
    return [
        p.model_copy(update={"preferred": "base"}) if base_win_set_aside(p) else p for p in pairs
    ]


def leans_worse(pairs: Sequence[PairRecord]) -> bool:
    """Whether a fixture's first pair (its pairs in rep order) went to the base."""
    return bool(pairs) and pairs[0].preferred == "base"


def by_fixture(pairs: Sequence[PairRecord]) -> dict[str, list[PairRecord]]:
    """Each fixture's pairs, in rep order."""
    found: dict[str, list[PairRecord]] = {}
    for pair in sorted(pairs, key=lambda p: (p.fixture, p.rep)):
        found.setdefault(pair.fixture, []).append(pair)
    return found


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
    grouped = by_fixture(pairs)
    leaning = sum(leans_worse(grouped[name]) for name in grouped if name in gating)
    verdicts = []
    for name in sorted(grouped):
        verdict, bound = tests.fixture_verdict(grouped[name], leaning)
        verdicts.append(
            PreferenceVerdict(
                fixture=name,
                verdict=verdict,
                counts=PairCounts.of(grouped[name]),
                p_bound=bound,
                blocks=verdict == WORSE and name in gating,
            )
        )
    pooled_counts = PairCounts.of([p for p in pairs if p.fixture in gating])
    pooled = tests.verdict(tests.pooled, pooled_counts)
    judged = swapped(pairs)
    consistent = [p for p in judged if p.consistent]
    record = PairwiseRecord(
        model=model,
        margin=margin,
        alpha=tests.share,
        beta=tests.fixture.beta,
        fixture_alpha=tests.consistent(leaning).alpha,
        pooled_alpha=tests.pooled.alpha,
        fixtures=verdicts,
        pooled=pooled,
        pooled_counts=pooled_counts,
        pooled_p_bound=tests.pooled.bound(pooled_counts.head, pooled_counts.base),
        length_controlled=length_controlled,
        length_bias=length_bias(pairs),
        pairs=sorted(pairs, key=lambda p: (p.fixture, p.rep)),
        blocks=pooled == WORSE or any(v.blocks for v in verdicts),
        run_consistency=len(consistent) / len(judged) if judged else None,
    )
    return record.model_copy(update={"why": why(record, leaning)}) if record.blocks else record


def swapped(pairs: Sequence[PairRecord]) -> list[PairRecord]:
    """The pairs that say how consistent the judge is across orders: those asked and answered
    in both (a run asks the swap only to confirm a first order's preference)."""
    return [p for p in pairs if p.both_orders and p.preferred != "unavailable"]


def length_bias(pairs: Sequence[PairRecord]) -> list[LengthBucket]:
    """The head's win rate among decided pairs, by how the length of its words the judge read
    (its final output under `view: final`) compares with the base's: what a judge that likes
    length would show as a rising rate."""
    buckets: dict[str, list[bool]] = {"head shorter": [], "about as long": [], "head longer": []}
    for pair in pairs:
        if pair.preferred not in ("head", "base"):
            continue
        difference = (pair.head_chars - pair.base_chars) / max(pair.head_chars, pair.base_chars, 1)
        name = "head longer" if difference > 0 else "head shorter"
        if abs(difference) <= ABOUT_AS_LONG:
            name = "about as long"
        buckets[name].append(pair.preferred == "head")
    return [
        LengthBucket(bucket=name, decided=len(wins), head_wins=sum(wins))
        for name, wins in buckets.items()
    ]


def why(record: PairwiseRecord, leaning: int) -> list[str]:
    """One line per thing that blocks: the test, the fixtures, the counts of both orders,
    the bound against its share of the false-block rate, and the steps the judge cited on
    each side."""
    said = [
        f"{verdict.fixture} worse by the pairwise judge ({PAIR_FIXTURE_TEST}): "
        f"{verdict.counts.text()}; the base won its first pair ({leaning} of the Eval's "
        f"fixtures leaned worse so) and every later decided one, {verdict.counts.base - 1}: "
        f"p ≤ {bound_text(verdict.p_bound)}, within its share of the false-block rate "
        f"{bound_text(record.fixture_alpha)}{cited(record.pairs_of(verdict.fixture))}"
        for verdict in record.fixtures
        if verdict.blocks
    ]
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
    firsts = (next((e for e in steps if e.side == side), None) for side in ("base", "head"))
    shown = [_quote(step) for step in firsts if step is not None]
    return f"; the judge cites (rep {pair.rep}) " + " against ".join(shown) if shown else ""


def _quote(step: CitedStep) -> str:
    quote = " ".join(step.quote.split())
    quote = cap_chars(quote, 118)
    return f"{step.side} step {step.step} “{quote}”"


def more_pairs(
    tests: PreferenceTests,
    pairs: Sequence[PairRecord],
    runs: dict[Side, dict[str, int]],
    reps: RepRange,
    fixtures: Collection[str],
) -> list[tuple[Side, str]]:
    """The runs that would make the next pairs where the preference is still open and could
    block: a side behind the other catches up first (a pair waits on its other run); nothing
    once a test blocks; then a head and a base rep for each fixture that leans worse and whose
    own line is still reachable within `reps.max` pairs; then, once none is, for the pooled
    test when it is open leaning worse, just the pairs that could take it half-way to not
    worse (`POOLED_ASKS_TOWARD`; it asks again if it still leans worse), to the fixtures with
    the fewest pairs (not to one whose two or more pairs were all ties: it
    tells the pooled test nothing). A fixture at `reps.max` pairs gets none, nor one whose
    judge answers nothing."""
    asked: list[tuple[Side, str]] = []
    grouped = by_fixture([p for p in pairs if p.fixture in fixtures])
    leaning = sum(leans_worse(found) for found in grouped.values())
    pooled = PairCounts.of([p for p in pairs if p.fixture in fixtures])
    if tests.verdict(tests.pooled, pooled) == WORSE or any(
        tests.fixture_verdict(found, leaning)[0] == WORSE for found in grouped.values()
    ):
        return asked
    candidates: list[str] = []
    for name in sorted(fixtures):
        head, base = runs[Side.head].get(name, 0), runs[Side.base].get(name, 0)
        if head != base:
            side = Side.base if base < head else Side.head
            asked += [(side, name)] * abs(head - base)
            continue
        mine = grouped.get(name, [])
        counts = PairCounts.of(mine)
        if head >= reps.max or (counts.unavailable and counts.judged == 0):
            continue  # a judge that answers nothing gets no more pairs to leave unanswered
        if len(mine) < 2 or counts.head + counts.base:
            candidates.append(name)
        if tests.reachable(mine, leaning, reps.max):
            asked += [(Side.head, name), (Side.base, name)]
    if asked or tests.verdict(tests.pooled, pooled) != LEANING_WORSE:
        return asked
    step = -tests.pooled.llr(1, 0)  # a head preference's move toward not worse
    toward = POOLED_ASKS_TOWARD * tests.pooled.lower
    needed = math.ceil((tests.pooled.llr(pooled.head, pooled.base) - toward) / step)
    ranked = sorted(candidates, key=lambda n: (len(grouped.get(n, [])), n))
    for name in ranked[: max(needed, 0)]:
        asked += [(Side.head, name), (Side.base, name)]
    return asked
