"""A pairwise judge swayed by position in this run's own pairs (`verdict/pairwise_verdict.py`):
pairs asked in both orders and judged alike so seldom that even the share's upper bound is below
the consistency floor make the judge unable to decide, with which way they lean."""

from __future__ import annotations

import pytest

from evalward.rundata.pairwise_record import OrderRecord, PairRecord, PairwiseRecord
from evalward.verdict.pairwise_verdict import run_inconsistency

pytestmark = pytest.mark.unit


def _pair(n: int, first: str, second: str) -> PairRecord:
    """A pair asked in both orders; the judge answered `first` with the base shown as A and
    `second` with the head shown as A."""
    side = {
        ("base", "A"): "base",
        ("base", "B"): "head",
        ("head", "A"): "head",
        ("head", "B"): "base",
    }
    orders = [
        OrderRecord(shown_first="base", answer=first, preferred=side["base", first]),  # type: ignore[arg-type]
        OrderRecord(shown_first="head", answer=second, preferred=side["head", second]),  # type: ignore[arg-type]
    ]
    agreed = orders[0].preferred == orders[1].preferred
    return PairRecord(
        fixture=f"f{n}", rep=0, preferred=orders[0].preferred if agreed else "tie", orders=orders
    )


def _record(pairs: list[PairRecord]) -> PairwiseRecord:
    return PairwiseRecord(
        model="openai/judge",
        margin=0.2,
        alpha=0.05,
        beta=0.2,
        fixture_alpha=0.05,
        pooled_alpha=0.05,
        pairs=pairs,
    )


def test_a_judge_that_prefers_what_it_reads_first_cannot_decide() -> None:
    record = _record([_pair(n, "A", "A") for n in range(12)])
    reason = run_inconsistency(record, 0.8)
    assert reason.startswith(
        "position sway in this run: 0 of its 12 pairs asked in both orders judged alike (at most "
    )
    assert (
        "below the consistency floor 0.80 (12 preferred the run shown first in both orders, "
        "0 the second)" in reason
    )


def test_a_bound_just_below_the_floor_is_never_written_at_it() -> None:
    # sixteen of twenty-five alike: at most 0.7976 at 95 % confidence, which "80 %" rounded up
    swayed = [_pair(n, "A", "A") for n in range(9)]
    reason = run_inconsistency(_record(swayed + [_pair(n, "B", "A") for n in range(9, 25)]), 0.8)
    assert "16 of its 25 pairs asked in both orders judged alike (at most 0.798 at 95 % " in reason
    assert "confidence), below the consistency floor 0.80 (" in reason


def test_a_judge_that_agrees_with_itself_across_orders_is_not_swayed() -> None:
    consistent = [_pair(n, "B", "A") for n in range(12)]  # the head both times
    assert run_inconsistency(_record(consistent), 0.8) == ""
    assert run_inconsistency(_record([]), 0.8) == ""


def test_a_few_disagreements_are_not_enough_to_say_so() -> None:
    pairs = [_pair(n, "B", "A") for n in range(10)] + [_pair(10, "B", "B")]
    assert run_inconsistency(_record(pairs), 0.8) == ""
