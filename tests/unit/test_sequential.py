"""The sequential test and the adaptive-reps rule: error rates that hold by construction, and
reps spent only where the outcome is open."""

from __future__ import annotations

import itertools
import math

import pytest

from evalward.resources.gate_policy import GatePolicy, RepRange
from evalward.rundata.sides import Side
from evalward.stages.adaptive import SequentialTests, Verdict, judge, more_runs
from evalward.stages.sequential import Settled, Sprt


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
    names = "abcdefghij"
    tests = SequentialTests.of(GatePolicy(), RepRange(min=2, max=8), 10)
    head, base, call = _round_trip(tests, dict.fromkeys(names, True), dict.fromkeys(names, True))
    assert {len(runs) for runs in head.values()} == {2}
    assert base == {}
    assert not call.blocks
    assert {f.verdict for f in call.fixtures} == {Verdict.stable}


def test_the_pooled_test_asks_for_reps_only_once_something_failed() -> None:
    """Six passes do not rule out a 25-point drop over three fixtures, but nothing points to
    one: no more reps. One failure among them does, and every fixture gets another round."""
    tests = SequentialTests.of(GatePolicy(), RepRange(min=2, max=8), 3)
    head, _, call = _round_trip(tests, dict.fromkeys("abc", True), dict.fromkeys("abc", True))
    assert {len(runs) for runs in head.values()} == {2}
    assert call.pooled is Verdict.stable
    asked = more_runs(tests, {"a": [True, False], "b": [True, True], "c": [True, True]}, {})
    assert sorted(name for _, name in asked) == ["a", "b", "c"]


def test_a_broken_fixture_gets_reps_until_settled_and_its_base_is_read() -> None:
    tests = SequentialTests.of(GatePolicy(), RepRange(min=2, max=8), 3)
    head, base, call = _round_trip(
        tests, {"a": True, "b": False, "c": True}, dict.fromkeys("abc", True)
    )
    assert len(head["b"]) == 3  # one more after the minimum: 0/3 settles it at alpha 0.0033
    assert set(base) == {"b"}  # the base runs only where the verdict reads it
    assert call.blocks
    (blocking,) = call.blocking
    assert blocking.verdict is Verdict.regression
    assert "b regression" in call.why()[0] and "head 0/3 · base 2/2" in call.why()[0]


def test_a_fixture_failing_on_both_sides_still_fails() -> None:
    tests = SequentialTests.of(GatePolicy(), RepRange(min=2, max=8), 2)
    _, _, call = _round_trip(tests, {"a": True, "b": False}, {"a": True, "b": False})
    assert [f.verdict for f in call.fixtures] == [Verdict.stable, Verdict.failing]
    assert call.blocks


def test_an_open_fixture_at_the_maximum_is_likely_not_settled() -> None:
    tests = SequentialTests.of(GatePolicy(), RepRange(min=2, max=3), 1)
    call = judge(tests, {"a": [False, True, False]}, {})
    assert call.fixtures[0].verdict is Verdict.likely_regression
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
