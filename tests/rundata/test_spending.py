"""What the budget holds for calls in flight (`rundata/spending.py`, `Allowance`): each call
let through holds its worst cost until its reply settles it, so calls opened at once cannot
together spend past what is left of `max-cost-usd`; a call that fits what is left but not
beside what is held waits for the calls in flight to settle, and one that cannot fit even
then is refused at once."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest

from evalward.rundata.spending import Allowance, OwnCalls, Spent

pytestmark = pytest.mark.unit


def now(admission: Coroutine[Any, Any, str | None]) -> str | None:
    """An admission that does not wait: its answer."""
    return asyncio.run(admission)


async def waiting(
    allowance: Allowance, admission: Coroutine[Any, Any, str | None]
) -> asyncio.Task[str | None]:
    """`admission` started, once it waits for the calls in flight (no wall clock: it waits as
    soon as it runs, and the allowance counts it)."""
    task = asyncio.ensure_future(admission)
    while not allowance.waiting and not task.done():
        await asyncio.sleep(0)
    assert not task.done(), task.result()
    return task


def test_a_call_holds_its_worst_until_its_reply_settles_it_or_it_is_given_back() -> None:
    """Calls in flight together may hold no more than is left: a third waits until a reply
    puts what it cost in place of what its call held, and a call no reply came to gives its
    hold back; a call that what is left cannot hold alone is refused at once."""

    async def go() -> None:
        allowance = Allowance(max_cost_usd=1.0)
        assert await allowance.admit("run", 0.4) is None
        assert await allowance.admit("run", 0.4) is None
        third = await waiting(allowance, allowance.admit("run", 0.4))
        allowance.spend(0.05, 0.4)
        assert await third is None and allowance.waiting == 0
        assert (allowance.cost_usd, allowance.held_usd) == (0.05, 0.8)
        allowance.release(0.4)
        allowance.release(0.4)
        refusal = await allowance.admit("run", 0.96)
        assert refusal is not None and "cannot hold this call" in refusal
        assert "$0.9500 of the budget is left beside what was spent" in refusal
        assert await allowance.admit("run", 0.9) is None

    asyncio.run(go())


def test_a_waiting_call_the_replies_leave_no_room_for_is_refused() -> None:
    """A call waits for room, not for ever: once the replies it waited for spent what it
    needed, it is refused; and a waiting call that is cancelled (its run ended) held
    nothing and waits no more."""

    async def go() -> None:
        allowance = Allowance(max_cost_usd=1.0)
        assert await allowance.admit("run", 0.7) is None
        late = await waiting(allowance, allowance.admit("run", 0.5))
        allowance.spend(0.6, 0.7)
        refusal = await late
        assert refusal is not None and "$0.4000 of the budget is left" in refusal
        assert (allowance.calls, allowance.held_usd) == (1, 0.0)
        assert await allowance.admit("run", 0.3) is None
        cut = await waiting(allowance, allowance.admit("run", 0.3))
        cut.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cut
        assert (allowance.waiting, allowance.calls, allowance.held_usd) == (0, 2, 0.3)

    asyncio.run(go())


def test_the_whole_budget_holds_calls_in_flight_beside_what_the_job_spent() -> None:
    """What the plan's estimate left may be larger than what the job's calls left of the
    whole `max-cost-usd` (a call the estimate counted cost more): the smaller holds."""
    job = Spent(cost_usd=0.7)
    allowance = Allowance(max_cost_usd=0.5, budget_usd=1.0, job=job)
    refusal = now(allowance.admit("run", 0.4))
    assert refusal is not None and "$0.3000 of the budget is left" in refusal
    assert now(allowance.admit("run", 0.3)) is None


def test_a_grading_call_holds_against_the_whole_budget_and_nothing_under_a_mock() -> None:
    """A judge's call was counted by the plan's estimate, so it is held against the whole
    `max-cost-usd` (what the job spent and what is in flight), not what the estimate left:
    it waits for a call in flight, and is refused where what the job spent leaves too
    little; where a mock script answers every call nothing is spent, so nothing is held."""

    async def go() -> None:
        allowance = Allowance(max_cost_usd=0.0, budget_usd=1.0, job=Spent(cost_usd=0.5))
        assert await allowance.hold(0.4) is None and allowance.held_usd == 0.4
        judge = await waiting(allowance, allowance.hold(0.2))
        allowance.release(0.4)
        assert await judge is None and allowance.held_usd == 0.2
        refusal = await allowance.hold(0.6)
        assert refusal is not None and "cannot hold this call" in refusal
        mocked = Allowance(max_cost_usd=0.1, budget_usd=0.1)
        assert await mocked.hold(5.0) is None and mocked.held_usd == 0.0

    asyncio.run(go())


def test_evalwards_own_calls_hold_their_worst_counted_ones_against_the_whole_budget() -> None:
    """A declarative agent's call the estimate counted holds its worst against the whole
    `max-cost-usd`, beside what the job spent; one past them draws on what the estimate
    left. A call cut as its run ends is spent at what it held, in what the job spent too."""
    job = Spent()
    allowance = Allowance(max_cost_usd=0.3, budget_usd=1.0, job=job)
    calls = OwnCalls(allowance, counted=1)
    assert now(calls.admit(0.8)) is None  # counted: the whole $1.00 holds it
    assert allowance.held_usd == 0.8
    calls.spend(0.1)
    assert (allowance.cost_usd, allowance.held_usd) == (0.0, 0.0)  # the job's Spent counts it
    refusal = now(calls.admit(0.4))  # past the estimate: the $0.30 it left cannot hold it
    assert refusal is not None and "cannot hold this call" in refusal
    assert now(calls.admit(0.25)) is None
    calls.cut()
    assert (allowance.cost_usd, allowance.held_usd) == (0.25, 0.0)
    assert (job.calls, job.cost_usd, job.calls_by) == (1, 0.25, {"agent": 1})


def test_without_a_dollar_budget_evalwards_own_calls_hold_nothing() -> None:
    """Under `max-model-calls` alone a call is counted, never held nor charged when cut."""
    job = Spent()
    allowance = Allowance(max_calls=5, job=job)
    calls = OwnCalls(allowance, counted=0, purpose="user")
    assert now(calls.admit(0.8)) is None
    assert (allowance.calls, allowance.held_usd) == (1, 0.0)
    calls.cut()
    assert (allowance.cost_usd, job.calls) == (0.0, 0)
