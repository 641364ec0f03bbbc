"""The sequential test and the adaptive-reps rule: error rates that hold by construction, and
reps spent only where the outcome is open."""

from __future__ import annotations

import itertools
import math

import pytest

from evalward.resources.gate_policy import GatePolicy, RepRange
from evalward.rundata.sequential_record import SETTLED_VERDICTS
from evalward.rundata.sides import Side
from evalward.verdict.adaptive import SequentialTests, SequentialVerdict, judge, more_runs
from evalward.verdict.sequential import Settled, Sprt

pytestmark = pytest.mark.unit


def _crossing_probability(test: Sprt, p: float, max_reps: int) -> float:
    """The exact chance that a fixture passing at rate p ever settles broken within max_reps,
    stopping at whichever line it crosses first: summed over every path."""
    total = 0.0
    states = {(0, 0): 1.0}
    for _ in range(max_reps):
        nxt: dict[tuple[int, int], float] = {}
        for (k, f), weight in states.items():
            for passed, chance in ((True, p), (False, 1 - p)):
                step = (k + passed, f + (not passed))
                settled = test.settled(*step)
                if settled is Settled.broken:
                    total += weight * chance
                elif settled is Settled.open:
                    nxt[step] = nxt.get(step, 0.0) + weight * chance
        states = nxt
    return total


@pytest.mark.parametrize("p", [0.9, 0.95, 1.0])
def test_a_working_fixture_is_called_broken_at_most_alpha_of_the_time(p: float) -> None:
    test = Sprt(good=0.9, broken=0.2, alpha=0.001, beta=0.1)
    assert _crossing_probability(test, p, 40) <= 0.001


def test_a_broken_fixture_is_called_working_at_most_beta_of_the_time() -> None:
    test = Sprt(good=0.9, broken=0.2, alpha=0.001, beta=0.1)
    flipped = Sprt(good=0.8, broken=0.1, alpha=0.1, beta=0.001)  # failing is "passing" here
    # By symmetry: a broken fixture's failures are a working fixture's passes.
    assert _crossing_probability(flipped, 0.8, 40) <= 0.1
    assert test.settled(0, 4) is Settled.broken
    assert test.settled(2, 0) is Settled.works
    assert test.settled(1, 1) is Settled.open


def test_the_bound_is_ville_s_one_over_the_ratio() -> None:
    test = Sprt(good=0.9, broken=0.2, alpha=0.01, beta=0.1)
    assert test.bound(0, 4) == pytest.approx((0.1 / 0.8) ** 4)
    assert test.bound(5, 0) == 1.0
    assert math.isinf(Sprt(good=1.0, broken=0.5, alpha=0.01, beta=0.1).llr(3, 1))


def _round_trip(tests: SequentialTests, head_p: dict[str, bool], base_p: dict[str, bool]) -> tuple:
    """Run the adaptive rule on deterministic fixtures (always pass or always fail)."""
    head: dict[str, list[bool]] = {name: [] for name in head_p}
    base: dict[str, list[bool]] = {}
    for _ in range(50):
        add = more_runs(tests, head, base, base_can_run=list(base_p))
        if not add:
            break
        for side, name in add:
            if side is Side.head:
                head[name].append(head_p[name])
            else:
                base.setdefault(name, []).append(base_p[name])
    return head, base, judge(tests, head, base)


def test_passing_fixtures_stop_at_the_minimum_and_never_run_on_the_base() -> None:
    """At the default rates one pass settles a fixture working (0.05 / 0.9 < missRate): a
    suite that passes costs one run a fixture, and nothing on the base."""
    names = "abcdefghij"
    tests = SequentialTests.of(GatePolicy(), RepRange(max=8), 10)
    head, base, call = _round_trip(tests, dict.fromkeys(names, True), dict.fromkeys(names, True))
    assert {len(runs) for runs in head.values()} == {1}
    assert base == {}
    assert not call.blocks
    assert {f.verdict for f in call.fixtures} == {SequentialVerdict.stable}
    assert tests.fixture.settled(1, 0) is Settled.works


def test_the_pooled_test_asks_for_just_the_reps_that_could_settle_it() -> None:
    """Nothing failed: no pooled reps. One failure among ten first reps leaves the pooled test
    open: once the failed fixture's own test is done, the pooled test asks for as many reps as
    would settle it working if all passed, from the fixtures with the fewest reps."""
    tests = SequentialTests.of(GatePolicy(), RepRange(max=8), 10)
    names = [f"f{i}" for i in range(10)]
    assert more_runs(tests, {n: [True] for n in names}, {}) == []
    head = {n: [True] for n in names} | {"f3": [False]}
    # the failed fixture's own test is open: it runs alone first
    assert more_runs(tests, head, {}) == [(Side.head, "f3")]
    head["f3"] = [False, True, True]  # its own test settles working (noise)
    asked = more_runs(tests, head, {})
    pooled = tests.pooled
    needed = math.ceil((pooled.llr(11, 1) - pooled.lower) / -pooled.llr(1, 0))
    assert [name for _, name in asked] == [n for n in names if n != "f3"][:needed]
    for _, name in asked:
        head[name].append(True)
    assert more_runs(tests, head, {}) == []  # all passed: the pooled test settled working
    assert judge(tests, head, {}).pooled is SequentialVerdict.noise


def test_a_broken_fixture_gets_reps_until_settled_and_its_base_is_read() -> None:
    tests = SequentialTests.of(GatePolicy(), RepRange(max=8), 3)
    head, base, call = _round_trip(
        tests, {"a": True, "b": False, "c": True}, dict.fromkeys("abc", True)
    )
    assert len(head["b"]) == 3  # 0/3 settles it at alpha 0.02 / 2 / 3 fixtures
    assert [len(head[n]) for n in "ac"] == [1, 1]
    assert base == {"b": [True]}  # the base runs only where the verdict reads it
    assert call.blocks
    (blocking,) = call.blocking
    assert blocking.verdict is SequentialVerdict.regression
    (why,) = call.why()
    assert why.startswith("b regression by its per-fixture sequential test: head 0/3, base 1/1")
    assert "within its share of the false-block rate 3.3e-03 (falseBlockRate 0.02 / 2 / 3" in why


def test_a_fixture_failing_on_both_sides_still_fails() -> None:
    tests = SequentialTests.of(GatePolicy(), RepRange(max=8), 2)
    _, _, call = _round_trip(tests, {"a": True, "b": False}, {"a": True, "b": False})
    assert [f.verdict for f in call.fixtures] == [
        SequentialVerdict.stable,
        SequentialVerdict.still_failing,
    ]
    assert call.blocks


def test_a_settled_failure_with_no_base_is_failing() -> None:
    tests = SequentialTests.of(GatePolicy(), RepRange(max=8), 1)
    call = judge(tests, {"a": [False] * 4}, {})
    assert call.fixtures[0].verdict is SequentialVerdict.failing and call.blocks


def test_an_open_fixture_at_the_maximum_is_likely_not_settled() -> None:
    tests = SequentialTests.of(GatePolicy(), RepRange(min=2, max=3), 1)
    call = judge(tests, {"a": [False, True, False]}, {})
    assert call.fixtures[0].verdict is SequentialVerdict.likely_regression
    assert not call.blocks


def test_unreliable_baseline_needs_a_base_whose_own_runs_lean_broken() -> None:
    """A base that passed its few runs is no unreliable baseline, however few they were; a
    base that failed as often is."""
    tests = SequentialTests.of(GatePolicy(), RepRange(min=2, max=3), 1)
    leaning = {"a": [False, True, False]}
    assert judge(tests, leaning, {"a": [True, True]}).fixtures[0].verdict is (
        SequentialVerdict.likely_regression
    )
    assert judge(tests, leaning, {"a": [False, True, False]}).fixtures[0].verdict is (
        SequentialVerdict.unreliable_baseline
    )
    # the pooled test: head leaning broken, its base 2/2 (open, not unreliable)
    pooled = SequentialTests.of(GatePolicy(), RepRange(min=1, max=3), 2)
    call = judge(pooled, {"a": [True, False, True], "b": [False, True, True]}, {"a": [True] * 2})
    assert call.pooled is not SequentialVerdict.unreliable_baseline


def test_a_test_that_ends_open_leaning_working_is_not_settled() -> None:
    tests = SequentialTests.of(GatePolicy(), RepRange(min=1, max=2), 1)
    call = judge(tests, {"a": [False, True]}, {})
    assert call.fixtures[0].verdict is SequentialVerdict.not_settled
    assert not call.blocks


def test_every_path_of_four_fixtures_stays_within_the_false_block_rate() -> None:
    """Exhaustively over every outcome of four fixtures at good_pass_rate, at two reps (the
    pooled test's paths are too many to sum; this checks the fixture tests' share)."""
    tests = SequentialTests.of(GatePolicy(false_block_rate=0.02), RepRange(min=2, max=2), 4)
    blocked = 0.0
    for outcome in itertools.product([True, False], repeat=8):
        head = {f"f{i}": list(outcome[2 * i : 2 * i + 2]) for i in range(4)}
        chance = math.prod(0.9 if r else 0.1 for r in outcome)
        blocked += chance * judge(tests, head, {}).blocks
    assert blocked <= 0.02


P, F = True, False
CONDITIONS = [
    # (head runs, base runs or None, verdict): one line per row of docs/github.md's table
    ([F] * 4, [P], SequentialVerdict.regression),
    ([F] * 4, [F], SequentialVerdict.still_failing),  # the base's own runs lean broken
    ([F] * 4, [F] * 4, SequentialVerdict.still_failing),  # the base settled broken
    ([F] * 4, None, SequentialVerdict.failing),  # the base did not run
    ([P], [F] * 4, SequentialVerdict.improvement),
    ([P], None, SequentialVerdict.stable),
    ([F, P, P], None, SequentialVerdict.noise),
    ([F, P, F], None, SequentialVerdict.likely_regression),
    ([F, P, F], [P, P], SequentialVerdict.likely_regression),  # a base that passed is reliable
    ([F, P, F], [F, P, F], SequentialVerdict.unreliable_baseline),
    ([F, P], None, SequentialVerdict.not_settled),  # at the maximum, leaning working
    ([], None, SequentialVerdict.not_enough_data),
]


@pytest.mark.parametrize(("head", "base", "verdict"), CONDITIONS)
def test_each_verdict_word_means_its_condition(
    head: list[bool], base: list[bool] | None, verdict: SequentialVerdict
) -> None:
    """Each verdict as docs/github.md ("Noise") states its condition, at the default rates
    (one fixture: its line to settle broken is 1 / 0.01, which three failures cross), whether it
    is settled, and whether it blocks."""
    tests = SequentialTests.of(GatePolicy(), RepRange(min=1, max=3), 1)
    call = judge(tests, {"a": head}, {"a": base} if base is not None else {})
    (fixture,) = call.fixtures
    assert fixture.verdict is verdict
    assert fixture.blocks is (
        verdict
        in (
            SequentialVerdict.regression,
            SequentialVerdict.still_failing,
            SequentialVerdict.failing,
        )
    )
    settled = verdict in SETTLED_VERDICTS
    state = tests.state(tests.fixture, fixture.head)
    assert settled is (head != [] and state is not Settled.open)


def test_the_why_lines_name_the_share_of_the_rate_the_tests_spend() -> None:
    """Beside a pairwise judge the pass-rate tests spend half of `falseBlockRate`: the "why"
    says that half, not the Eval's whole rate as if it were theirs."""
    head = {f"f{i}": [True] * 8 for i in range(9)} | {"broken": [False] * 8}
    base = {"broken": [True] * 8}
    whole = judge(SequentialTests.of(GatePolicy(), RepRange(max=8), 10), head, base)
    half = judge(SequentialTests.of(GatePolicy(), RepRange(max=8), 10, 0.5), head, base)
    (line,) = [w for w in whole.why() if w.startswith("broken")]
    (halved,) = [w for w in half.why() if w.startswith("broken")]
    assert "(falseBlockRate 0.02 / 2 / 10 fixtures)" in line
    assert "(falseBlockRate 0.02 × 0.5 beside the pairwise judge / 2 / 10 fixtures)" in halved
