"""What the budget holds for calls in flight (`rundata/spending.py`, `Allowance`): each call
let through holds its worst cost until its reply settles it, so calls opened at once cannot
together spend past what is left of `max-cost-usd`."""

from __future__ import annotations

import pytest

from evalward.rundata.spending import Allowance, Spent

pytestmark = pytest.mark.unit


def test_a_call_holds_its_worst_until_its_reply_settles_it_or_it_is_given_back() -> None:
    """Calls in flight together may hold no more than is left; a reply puts what it cost in
    place of what its call held, and a call no reply came to gives its hold back."""
    allowance = Allowance(max_cost_usd=1.0)
    assert allowance.admit("run", 0.4) is None
    assert allowance.admit("run", 0.4) is None
    refusal = allowance.admit("run", 0.4)
    assert refusal is not None and "cannot hold this call" in refusal
    assert "$0.2000 of the budget is left beside $0.8000 held" in refusal
    allowance.spend(0.05, 0.4)
    assert (allowance.cost_usd, allowance.held_usd) == (0.05, 0.4)
    allowance.release(0.4)
    assert allowance.admit("run", 0.9) is None
    assert allowance.admit("run", 0.1) is not None


def test_the_whole_budget_holds_calls_in_flight_beside_what_the_job_spent() -> None:
    """What the plan's estimate left may be larger than what the job's calls left of the
    whole `max-cost-usd` (a call the estimate counted cost more): the smaller holds."""
    job = Spent(cost_usd=0.7)
    allowance = Allowance(max_cost_usd=0.5, budget_usd=1.0, job=job)
    refusal = allowance.admit("run", 0.4)
    assert refusal is not None and "$0.3000 of the budget is left" in refusal
    assert allowance.admit("run", 0.3) is None


def test_a_grading_call_holds_against_the_whole_budget_and_nothing_under_a_mock() -> None:
    """A judge's call was counted by the plan's estimate, so it is held against the whole
    `max-cost-usd` (what the job spent and what is in flight), not what the estimate left;
    where a mock script answers every call nothing is spent, so nothing is held."""
    allowance = Allowance(max_cost_usd=0.0, budget_usd=1.0, job=Spent(cost_usd=0.5))
    assert allowance.hold(0.4) is None and allowance.held_usd == 0.4
    refusal = allowance.hold(0.2)
    assert refusal is not None and "cannot hold this call" in refusal
    allowance.release(0.4)
    mocked = Allowance(max_cost_usd=0.1, budget_usd=0.1)
    assert mocked.hold(5.0) is None and mocked.held_usd == 0.0
