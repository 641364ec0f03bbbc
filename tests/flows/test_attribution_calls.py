"""What attribution may spend (`GateCalls`, `CallBudget` in flows/attribution_runs.py): what a
variant of some regressed fixtures is expected to make, the least a trial counts for, and the
budget's reason to stop, which says where to raise it."""

from __future__ import annotations

import pytest

from evalward.flows.attribution_runs import CallBudget, GateCalls
from evalward.rundata.spending import Spent
from evalward.rundata.trace import Usage

pytestmark = pytest.mark.unit

MADE = {
    ("refund-a", "head"): (3, 3, 3),
    ("refund-a", "base"): (1,),
    ("refund-b", "head"): (2,),
}
"""Model calls per gate run: refund-a failed three reps on the head and passed one on the
base; refund-b ran on the head alone."""


def test_a_variant_needs_what_the_side_that_made_more_made() -> None:
    calls = GateCalls(MADE)

    assert calls.need(("refund-a",)) == 9
    assert calls.need(("refund-a", "refund-b")) == 11


def test_a_trial_counts_at_least_one_run_of_each_fixture_as_the_base_ran_it() -> None:
    calls = GateCalls(MADE)

    assert calls.least(("refund-a",)) == 1  # the base's run, not the head's three
    assert calls.least(("refund-a", "refund-b")) == 3  # refund-b: the head's fewest
    assert calls.least(("greet",)) == 0


def test_judged_in_pairs_a_variant_needs_what_one_like_the_base_makes() -> None:
    """A run and a pair's first order; the base's run again where no cache holds it. One
    like the head runs until its preference test settles, held to what is left."""
    assert GateCalls(MADE, in_pairs=True, base_cached=True).need(("refund-a",)) == 2
    assert GateCalls(MADE, in_pairs=True, base_cached=False).need(("refund-a",)) == 3


def test_a_trial_counts_for_what_it_made_or_its_floor_and_the_stop_says_where_to_raise() -> None:
    spent = Spent()
    budget = CallBudget(10, spent, 0.5)
    assert budget.stop(need=9) == ""

    budget.count(before=0, least=3)  # a variant that made no call counts for its floor
    for _ in range(4):
        spent.add(Usage())
    budget.count(before=0, least=1)  # one that made four counts for them
    assert (budget.counted, budget.left()) == (7, 3)

    said = budget.stop(need=4)
    assert said.startswith("attribution stopped at its budget of 10 model calls")
    assert "need about 4" in said and "more than the 3 left" in said
    assert "counted for 7 though they made 4" in said
    assert said.endswith("attribution.budget in the base branch's evalward.yaml raises it)")
