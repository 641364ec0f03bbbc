"""The pairwise judge's preference tests (`verdict/preference.py`): a fixture that leans worse on
its first pair is tested on its later pairs at the alpha the leaning fixtures split, so one
consistently worse fixture of ten blocks within init's 8 reps; the false-block rate holds on
unchanged pull requests whose pairs are coin flips, driven round by round by `more_pairs`."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from evalward.resources.gate_policy import GatePolicy, RepRange
from evalward.rundata.pairwise_record import NOT_WORSE, WORSE, PairRecord
from evalward.rundata.sides import Side
from evalward.verdict.preference import PreferenceTests, decide, more_pairs

pytestmark = pytest.mark.unit

FIXTURES = [f"f{i}" for i in range(10)]
REPS = RepRange(min=1, max=8)
ADAPTIVE_SHARE = 0.02 * 0.75
"""init's defaults: falseBlockRate 0.02, three quarters of it the preference tests'."""


def preference_tests(share: float = ADAPTIVE_SHARE) -> PreferenceTests:
    return PreferenceTests.of(GatePolicy(), 0.2, share)


def pair(fixture: str, rep: int, preferred: str) -> PairRecord:
    return PairRecord(fixture=fixture, rep=rep, preferred=preferred)  # type: ignore[arg-type]


Judge = Callable[[str, int], str]


def gate(judge: Judge, preference: PreferenceTests | None = None) -> tuple[bool, int]:
    """One adaptive run of the preference tests: each fixture's first pair, then the pairs
    `more_pairs` asks for, round by round; whether it blocks, and the pairs it judged."""
    chosen = preference or preference_tests()
    pairs = [pair(name, 0, judge(name, 0)) for name in FIXTURES]
    while True:
        counts = {name: sum(p.fixture == name for p in pairs) for name in FIXTURES}
        runs = {Side.head: dict(counts), Side.base: dict(counts)}
        asked = more_pairs(chosen, pairs, runs, REPS, FIXTURES)
        if not asked:
            break
        for side, name in asked:
            if side is Side.head:
                pairs.append(pair(name, counts[name], judge(name, counts[name])))
    record = decide(chosen, pairs, FIXTURES, model="judge", margin=0.2)
    return record.blocks, len(pairs)


def test_one_fixture_the_base_wins_every_pair_of_blocks_within_eight_reps() -> None:
    blocked, judged = gate(lambda name, _: "base" if name == "f3" else "tie")
    assert blocked
    assert judged == 10 + 7  # its seven later pairs; the ties get no more


def test_the_blocking_line_names_the_fixture_its_counts_and_its_share() -> None:
    pairs = [pair("f3", rep, "base") for rep in range(8)]
    pairs += [pair(name, 0, "tie") for name in FIXTURES if name != "f3"]
    record = decide(preference_tests(), pairs, FIXTURES, model="judge", margin=0.2)
    (verdict,) = [v for v in record.fixtures if v.blocks]
    assert verdict.fixture == "f3" and verdict.verdict == WORSE
    assert verdict.p_bound == pytest.approx(2.0**-7)  # the exact chance of 7 base wins in a row
    assert record.fixture_alpha == pytest.approx(ADAPTIVE_SHARE * 2 / 3)
    (line,) = record.why
    assert line.startswith("f3 worse by the pairwise judge (per-fixture preference test)")
    assert "(1 of the Eval's fixtures leaned worse so) and every later decided one, 7" in line


def test_seven_base_wins_without_the_first_do_not_block() -> None:
    # the first pair a tie: the fixture never leans worse, and its later pairs are not tested
    pairs = [pair("f3", 0, "tie")] + [pair("f3", rep, "base") for rep in range(1, 8)]
    record = decide(preference_tests(), pairs, ["f3"], model="judge", margin=0.2)
    assert record.fixtures[0].verdict != WORSE


def test_the_leaning_fixtures_split_their_alpha() -> None:
    # two fixtures lean worse: each is tested at half the share, which 7 later wins miss
    pairs = [pair("f3", rep, "base") for rep in range(8)]
    pairs += [pair("f4", 0, "base"), pair("f4", 1, "head")]
    record = decide(preference_tests(), pairs, ["f3", "f4"], model="judge", margin=0.2)
    assert record.fixture_alpha == pytest.approx(ADAPTIVE_SHARE * 2 / 3 / 2)
    assert not any(v.blocks for v in record.fixtures)


def test_a_head_preference_after_the_first_pair_ends_the_fixtures_own_test() -> None:
    leaning = [pair("f3", 0, "base"), pair("f3", 1, "base")]
    assert preference_tests().reachable(leaning, 1, REPS.max)
    ended = [*leaning, pair("f3", 2, "head")]
    assert not preference_tests().reachable(ended, 1, REPS.max)
    # nor while the pairs left cannot reach the line: two ties, five to go, 2^5 < 100
    wide = [pair("f3", 0, "base"), pair("f3", 1, "tie"), pair("f3", 2, "tie")]
    assert not preference_tests().reachable(wide, 1, REPS.max)


def test_no_pair_is_asked_once_a_test_blocks() -> None:
    pairs = [pair("f3", rep, "base") for rep in range(8)]
    pairs += [pair("f4", 0, "tie")]
    runs = {Side.head: {"f3": 8, "f4": 1}, Side.base: {"f3": 8, "f4": 1}}
    wide = RepRange(min=1, max=20)
    assert decide(preference_tests(), pairs, ["f3", "f4"], model="judge", margin=0.2).blocks
    assert more_pairs(preference_tests(), pairs, runs, wide, ["f3", "f4"]) == []


def test_a_fixture_the_head_wins_is_settled_not_worse() -> None:
    pairs = [pair("f3", rep, "head") for rep in range(6)]
    record = decide(preference_tests(), pairs, ["f3"], model="judge", margin=0.2)
    assert record.fixtures[0].verdict == NOT_WORSE and not record.blocks


def test_unchanged_pull_requests_are_blocked_within_the_preference_share() -> None:
    """Coin-flip pairs (no ties: the hardest null for a sign test) on 4,000 seeded unchanged
    pull requests: the tests block at most their share, 0.015, with room for the sampling
    error (the standard error at 0.015 and 4,000 trials is 0.0019)."""
    rng = random.Random(71)
    blocked = sum(
        gate(lambda _n, _r: "base" if rng.random() < 0.5 else "head")[0] for _ in range(4000)
    )
    assert blocked / 4000 <= ADAPTIVE_SHARE + 3 * 0.0019


def test_a_fixed_split_over_every_fixture_could_never_block_it() -> None:
    """What the split over the leaning fixtures is for: split over all ten, the fixture test
    at this share needs 2^b >= 10 / 0.01, more than 8 reps can give."""
    per_fixture = ADAPTIVE_SHARE * 2 / 3 / len(FIXTURES)
    assert 1 / per_fixture > 2.0**8
    assert 1 / preference_tests().consistent(1).alpha <= 2.0**7


def test_a_pooled_test_leaning_worse_asks_the_pairs_that_could_take_it_half_way() -> None:
    # seven fixtures' first pairs to the base, three to the head: too many lean worse for any
    # one's own line, and the pooled test leans worse, its ratio e^0.82
    pairs = [pair(name, 0, "base" if index < 7 else "head") for index, name in enumerate(FIXTURES)]
    runs = {Side.head: dict.fromkeys(FIXTURES, 1), Side.base: dict.fromkeys(FIXTURES, 1)}
    asked = more_pairs(preference_tests(), pairs, runs, REPS, FIXTURES)

    tests = preference_tests()
    lean, step = tests.pooled.llr(3, 7), -tests.pooled.llr(1, 0)
    assert lean > 0
    half_way = math.ceil((lean - tests.pooled.lower / 2) / step)
    assert half_way == 4 < math.ceil((lean - tests.pooled.lower) / step)  # all the way: 7
    assert len(asked) == 2 * half_way  # a head and a base run of each
    assert {side for side, _ in asked} == {Side.head, Side.base}


def test_an_unchanged_pull_request_runs_at_most_sixteen_head_reps_on_average() -> None:
    """init's ten fixtures, a judge that prefers one of two equal answers (ties 19 % of pairs,
    as a judge that agrees with itself 9 times in 10 across orders comes to): 1,000 seeded
    unchanged pull requests, each fixture's first pair and every pair `more_pairs` asks."""
    rng = random.Random(5)

    def judge(_name: str, _rep: int) -> str:
        said = rng.random()
        return "tie" if said < 0.19 else "base" if said < 0.595 else "head"

    pairs = [gate(judge)[1] for _ in range(1000)]
    assert sum(pairs) / len(pairs) <= 16
