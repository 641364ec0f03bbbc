"""Adaptive reps: which fixtures get another rep, and what an Eval's runs settle.

An Eval with `execution.reps: {min, max}` is decided by sequential tests
(`evalward.verdict.sequential`) at its `scoring.gate` error rates:

- one per fixture, H0 "passes at least `goodPassRate`" against H1 "at most `brokenPassRate`",
  each at alpha / 2 / (number of fixtures);
- one pooled over the Eval's head runs, H0 the same against H1 "every fixture `drop` lower",
  at alpha / 2.

Whatever the number of fixtures and however the reps were spent, a pull request that changed
nothing is blocked at most alpha of the time (Ville's inequality, Bonferroni over the tests).

Which head runs come next is docs/github.md's ("Noise": a fixture's own open test first, then
the pooled test's). The base side runs a fixture only when the head's verdict reads it: its
head test settled broken, or ended open leaning broken, or the pooled test settled (or ended
leaning) broken and the fixture failed on the head. The base's runs then say whether the
head's failure is a regression, was failing already, or is noise in an unreliable baseline.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from evalward.resources.gate_policy import FlakyOnMain, GatePolicy, RepRange
from evalward.rundata.sequential_record import (
    BLOCKING_VERDICTS,
    FIXTURE_TEST,
    POOLED_TEST,
    FixtureVerdictRecord,
    SequentialRecord,
)
from evalward.rundata.sides import Side
from evalward.text.numbers import bound_text
from evalward.verdict.sequential import Settled, Sprt

Outcomes = Mapping[str, Sequence[bool]]
"""Per fixture, whether each of its reps passed."""


class SequentialVerdict(StrEnum):
    """A test's verdict, head against base. Each word has one condition (docs/github.md)."""

    regression = "regression"
    """Settled broken on head; the base ran and leans working (or settled working): blocks."""
    still_failing = "still failing"
    """Settled broken on head, and the base's own runs lean broken (or settled broken): blocks."""
    failing = "failing"
    """Settled broken on head, and the base did not run (a new fixture, an outage, the budget):
    blocks."""
    improvement = "improvement"
    """Settled working on head, and settled broken on base."""
    stable = "stable"
    """Settled working on head, every head rep passed."""
    noise = "noise"
    """Settled working on head, though a head rep failed."""
    likely_regression = "likely regression"
    """Not settled at the end, leaning broken on head; the base's runs do not lean broken (or
    it did not run): shown, does not block."""
    unreliable_baseline = "unreliable baseline"
    """Not settled at the end, leaning broken on head, and the base's own runs lean broken
    too: shown, does not block."""
    not_settled = "not settled"
    """Not settled at the end, leaning working on head: does not block."""
    not_enough_data = "not enough data"
    """Fewer than the minimum reps ran (a budget, an outage, a cancelled run)."""


@dataclass(frozen=True)
class Tally:
    passes: int
    runs: int

    @property
    def fails(self) -> int:
        return self.runs - self.passes

    def __str__(self) -> str:
        return f"{self.passes}/{self.runs}"


def tally(outcomes: Sequence[bool]) -> Tally:
    return Tally(sum(outcomes), len(outcomes))


@dataclass(frozen=True)
class SequentialTests:
    """An Eval's sequential tests, from its gate policy and its number of fixtures."""

    fixture: Sprt
    pooled: Sprt
    reps: RepRange
    budget: str
    """Where the tests' false-block rate comes from, as the "why" lines say it."""

    @classmethod
    def of(
        cls, policy: GatePolicy, reps: RepRange, fixtures: int, share: float = 1.0
    ) -> SequentialTests:
        """The tests at `share` of the policy's false-block rate (the rest is another test's:
        a pairwise judge's beside them)."""
        alpha = policy.false_block_rate * share
        good = policy.good_pass_rate
        budget = f"falseBlockRate {policy.false_block_rate:g}"
        if share != 1.0:
            budget += f" × {share:g} beside the pairwise judge"
        return cls(
            fixture=Sprt(
                good, policy.broken_pass_rate, alpha / 2 / max(fixtures, 1), policy.miss_rate
            ),
            pooled=Sprt(good, max(0.0, good - policy.drop), alpha / 2, policy.miss_rate),
            reps=reps,
            budget=budget,
        )

    def state(self, test: Sprt, runs: Tally) -> Settled:
        return test.settled(runs.passes, runs.fails)


@dataclass(frozen=True)
class FixtureCall:
    """One fixture's verdict and the numbers behind it."""

    fixture: str
    verdict: SequentialVerdict
    head: Tally
    base: Tally | None
    bound: float
    """Ville's bound on seeing head runs this bad from a working fixture."""
    flaky: float | None = None
    """Its base's pass rate on the default branch, when that flips (flaky on main)."""
    blocks: bool = False


@dataclass(frozen=True)
class EvalCall:
    """What an Eval's runs settle: each fixture's verdict, and the pooled test's."""

    fixtures: list[FixtureCall]
    pooled: SequentialVerdict
    pooled_head: Tally
    pooled_base: Tally | None
    pooled_bound: float
    tests: SequentialTests
    """The tests that settled it: each fixture's test's share of alpha (alpha / 2 /
    `gating`), the pooled test's (alpha / 2), and where alpha comes from (`budget`)."""
    drivers: list[str] = field(default_factory=list)
    """The fixtures that failed on the head: what drove the pooled test."""
    gating: int = 0
    """The fixtures that gate, among which the fixtures' half of alpha is shared."""

    @property
    def blocking(self) -> list[FixtureCall]:
        return [f for f in self.fixtures if f.blocks]

    @property
    def pooled_blocks(self) -> bool:
        return self.pooled in BLOCKING_VERDICTS

    @property
    def blocks(self) -> bool:
        return bool(self.blocking) or self.pooled_blocks

    def why(self) -> list[str]:
        """One line per thing that blocks: the test, the fixtures and their numbers, and the
        line its bound had to reach (its share of `falseBlockRate`), so a reviewer can check it."""
        said = []
        for f in self.blocking:
            base = f"base {f.base}" if f.base is not None else "base not run"
            flaky = (
                f"; flaky on main ({100 * f.flaky:.0f} % pass there), it blocks beside another"
                if f.flaky is not None
                else ""
            )
            said.append(
                f"{f.fixture} {f.verdict.value} by its {FIXTURE_TEST}: head {f.head}, "
                f"{base}; p ≤ {bound_text(f.bound)}, within its share of the false-block rate "
                f"{bound_text(self.tests.fixture.alpha)} ({self.tests.budget} / 2 / "
                f"{self.gating} fixtures){flaky}"
            )
        if self.pooled_blocks:
            base = f", base {self.pooled_base}" if self.pooled_base is not None else ""
            rate = self.pooled_head.passes / max(self.pooled_head.runs, 1)
            said.append(
                f"pass rate over the Eval {self.pooled.value} by the {POOLED_TEST}: head "
                f"{self.pooled_head} ({100 * rate:.0f} %){base}; p ≤ "
                f"{bound_text(self.pooled_bound)}, within its share of the false-block rate "
                f"{bound_text(self.tests.pooled.alpha)} ({self.tests.budget} / 2); driven by "
                f"{', '.join(self.drivers) or 'every fixture'}"
            )
        return said


def judge(
    tests: SequentialTests,
    head: Outcomes,
    base: Outcomes,
    *,
    gating: Collection[str] | None = None,
    flaky: Mapping[str, float] | None = None,
    policy: GatePolicy | None = None,
) -> EvalCall:
    """Each fixture's verdict, and the pooled test's, from the runs so far."""
    flaky = flaky or {}
    gating = set(head) if gating is None else set(gating)
    not_alone = policy is not None and policy.flaky_on_main is FlakyOnMain.not_alone
    calls = []
    for name in sorted(head):
        runs = tally(head[name])
        base_runs = tally(base[name]) if name in base else None
        verdict = _verdict(tests, tests.fixture, runs, base_runs)
        calls.append(
            FixtureCall(
                name,
                verdict,
                runs,
                base_runs,
                tests.fixture.bound(runs.passes, runs.fails),
                flaky.get(name),
                blocks=verdict in BLOCKING_VERDICTS and name in gating,
            )
        )
    # A fixture flaky on main that may not block alone is left out of the pooled test too (a
    # choice made from the history before this run, so the test's error rate holds).
    counted = [n for n in head if n in gating and not (not_alone and n in flaky)]
    pooled = tally([r for n in counted for r in head[n]])
    base_counted = [n for n in counted if n in base]
    pooled_base = tally([r for n in base_counted for r in base[n]]) if base_counted else None
    verdict = _verdict(tests, tests.pooled, pooled, pooled_base)
    if not_alone and flaky:  # a flaky-on-main fixture blocks only beside another that blocks
        others = any(c.blocks and c.flaky is None for c in calls)
        calls = [c if c.flaky is None else replace(c, blocks=c.blocks and others) for c in calls]
    return EvalCall(
        calls,
        verdict,
        pooled,
        pooled_base,
        tests.pooled.bound(pooled.passes, pooled.fails),
        tests,
        sorted(n for n in counted if not all(head[n])),
        gating=len(gating),
    )


def _verdict(
    tests: SequentialTests, test: Sprt, head: Tally, base: Tally | None
) -> SequentialVerdict:
    """The verdict of one test, head against base (`SequentialVerdict` says each one's
    condition)."""
    if head.runs == 0 or (test is tests.fixture and head.runs < tests.reps.min):
        return SequentialVerdict.not_enough_data
    state = tests.state(test, head)
    ran = base if base is not None and base.runs > 0 else None
    base_leans_broken = ran is not None and test.llr(ran.passes, ran.fails) > 0
    if state is Settled.broken:
        if ran is None:
            return SequentialVerdict.failing
        return (
            SequentialVerdict.still_failing if base_leans_broken else SequentialVerdict.regression
        )
    if state is Settled.works:
        if ran is not None and tests.state(test, ran) is Settled.broken:
            return SequentialVerdict.improvement
        return SequentialVerdict.stable if head.fails == 0 else SequentialVerdict.noise
    if test.llr(head.passes, head.fails) > 0:
        return (
            SequentialVerdict.unreliable_baseline
            if base_leans_broken
            else SequentialVerdict.likely_regression
        )
    return SequentialVerdict.not_settled


def more_runs(
    tests: SequentialTests,
    head: Outcomes,
    base: Outcomes,
    *,
    gating: Collection[str] | None = None,
    base_can_run: Collection[str] = (),
    flaky: Collection[str] = (),
    more_reps_when_flaky: bool = False,
) -> list[tuple[Side, str]]:
    """The next round's runs: (side, fixture) once per rep to add; none when all is settled.

    Stopping early never raises a test's error rate, so which fixture runs next is free: a
    fixture's own open test first, then (once none is open) the pooled test's reps. The
    pooled test is asked of the `gating` fixtures (None: every one), as `judge` pools them: a
    fixture the pull request adds (it gates once merged) neither settles it working by
    passing nor ends its reps by failing."""
    minimum, maximum = tests.reps.min, tests.reps.max
    gate = set(head) if gating is None else set(gating)
    left_out = () if more_reps_when_flaky else flaky
    counted = {name: runs for name, runs in head.items() if name in gate}
    pooled = tally([r for name, runs in counted.items() if name not in left_out for r in runs])
    pooled_state = _pooled_state(tests, counted, pooled)
    runs: list[tuple[Side, str]] = []
    settled_working: list[str] = []
    for name in sorted(head):
        mine = tally(head[name])
        if mine.runs < minimum:
            runs += [(Side.head, name)] * (minimum - mine.runs)
            continue
        if mine.runs >= maximum:
            continue
        state = tests.state(tests.fixture, mine)
        if state is Settled.open or (more_reps_when_flaky and name in flaky):
            runs.append((Side.head, name))
        elif state is Settled.works and name in gate:
            settled_working.append(name)
    if not runs and pooled_state is Settled.open:
        chosen = _for_the_pooled_test(tests, pooled, head, settled_working)
        runs += [(Side.head, name) for name in chosen]
    head_done = not runs
    for name in sorted(head):
        if name not in base_can_run or not _reads_base(
            tests, head[name], counted, pooled_state, head_done
        ):
            continue
        theirs = tally(base.get(name, ()))
        if theirs.runs < minimum:
            runs += [(Side.base, name)] * (minimum - theirs.runs)
        elif theirs.runs < maximum and tests.state(tests.fixture, theirs) is Settled.open:
            runs.append((Side.base, name))
    return runs


def _pooled_state(tests: SequentialTests, head: Outcomes, pooled: Tally) -> Settled:
    """The pooled test's state as far as reps go: it asks for none while nothing failed
    (nothing points to a drop) or once a fixture settled broken (that blocks the Eval whatever
    the pooled test says). `pooled` leaves out what the verdict leaves out of the pooled test
    (fixtures flaky on main that may not block alone)."""
    if not pooled.fails or any(
        tests.state(tests.fixture, tally(r)) is Settled.broken for r in head.values()
    ):
        return Settled.works
    return tests.state(tests.pooled, pooled)


def _for_the_pooled_test(
    tests: SequentialTests, pooled: Tally, head: Outcomes, candidates: list[str]
) -> list[str]:
    """Just the reps that would settle the open pooled test working if every one passed, one
    per fixture, to the fixtures settled working with the fewest reps (then fewest failures):
    a pull request that changed nothing pays a few reps for a failed one, and a drop spread
    over every fixture keeps drawing reps until the test settles or every fixture is at max."""
    step = -tests.pooled.llr(1, 0)  # > 0: Sprt holds broken < good
    needed = math.ceil((tests.pooled.llr(pooled.passes, pooled.fails) - tests.pooled.lower) / step)
    ranked = sorted(candidates, key=lambda n: (len(head[n]), tally(head[n]).fails, n))
    return ranked[: max(needed, 0)]


def _reads_base(
    tests: SequentialTests, runs: Sequence[bool], head: Outcomes, pooled: Settled, head_done: bool
) -> bool:
    """Whether the verdict reads a fixture's base (`runs`: its head's outcomes): its head looks
    broken on its own, or the Eval's pooled test (over `head`, the gating fixtures) does and
    the fixture failed on the head."""
    mine = tally(runs)
    state = tests.state(tests.fixture, mine)
    if state is Settled.broken:
        return True
    at_max = mine.runs >= tests.reps.max
    if state is Settled.open and at_max and tests.fixture.llr(mine.passes, mine.fails) > 0:
        return True
    if not mine.fails:
        return False
    pooled_head = tally([r for runs in head.values() for r in runs])
    leaning = tests.pooled.llr(pooled_head.passes, pooled_head.fails) > 0
    return pooled is Settled.broken or (head_done and pooled is Settled.open and leaning)


def record(call: EvalCall) -> SequentialRecord:
    """The call as results.json and the reports keep it."""
    tests = call.tests
    return SequentialRecord(
        alpha=tests.pooled.alpha * 2,
        beta=tests.fixture.beta,
        min_reps=tests.reps.min,
        max_reps=tests.reps.max,
        fixtures=[
            FixtureVerdictRecord(
                fixture=f.fixture,
                verdict=f.verdict.value,
                head_passes=f.head.passes,
                head_runs=f.head.runs,
                base_passes=None if f.base is None else f.base.passes,
                base_runs=None if f.base is None else f.base.runs,
                p_bound=f.bound,
                blocks=f.blocks,
                flaky_on_main=f.flaky,
            )
            for f in call.fixtures
        ],
        pooled=call.pooled.value,
        pooled_head=str(call.pooled_head),
        pooled_base=None if call.pooled_base is None else str(call.pooled_base),
        pooled_p_bound=call.pooled_bound,
        blocks=call.blocks,
        why=call.why(),
        drivers=call.drivers,
        fixture_alpha=tests.fixture.alpha,
        pooled_alpha=tests.pooled.alpha,
    )
