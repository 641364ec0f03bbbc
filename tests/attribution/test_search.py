"""The search for the hunks that cause a regression (attribution/search.py), against oracles
that model an agent: the regression is there iff the variant holds a given set of hunks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from evalward.attribution.hunks import Hunk
from evalward.attribution.search import (
    Attributed,
    Attribution,
    FixtureScore,
    NotAttributable,
    Trial,
    Unaffordable,
    attribute,
)

pytestmark = pytest.mark.unit


def hunks(count: int) -> tuple[Hunk, ...]:
    return tuple(
        Hunk("prompts/support.md", n, "text", 10 * n, 10 * n + 2, (f"old {n}\n",), (f"new {n}\n",))
        for n in range(1, count + 1)
    )


HUNKS = hunks(4)
Breaks = Callable[[frozenset[int]], bool]
"""Whether an agent holding these hunks (by index) shows the regression."""


class Agent:
    """Both oracles of one modelled agent, counting what they were asked."""

    def __init__(
        self,
        breaks: Breaks,
        unbuildable: frozenset[int] = frozenset(),
        on_base: Breaks | None = None,
        change: tuple[Hunk, ...] = HUNKS,
    ) -> None:
        self.change = change
        self.breaks = breaks
        self.unbuildable = unbuildable
        self.on_base = on_base or breaks
        """Whether the base with these hunks shows it (the head's other files may matter)."""
        self.asked: list[tuple[str, frozenset[int]]] = []

    def _trial(self, present: frozenset[int], changed: frozenset[int], breaks: Breaks) -> Trial:
        if changed & self.unbuildable:
            return Trial(False, not_built="taking it back leaves the agent invalid")
        broken = breaks(present)
        score = FixtureScore("fx-refund-policy", 0 if broken else 8, 8)
        return Trial(broken, (score,))

    async def regresses(self, reverted: frozenset[Hunk]) -> Trial:
        taken = frozenset(h.index for h in reverted)
        self.asked.append(("reverted", taken))
        every = frozenset(h.index for h in self.change)
        return self._trial(every - taken, taken, self.breaks)

    async def reproduces(self, applied: frozenset[Hunk]) -> Trial:
        kept = frozenset(h.index for h in applied)
        self.asked.append(("applied", kept))
        return self._trial(kept, frozenset(), self.on_base)


def search(agent: Agent, max_trials: int = 50) -> Attribution:
    return asyncio.run(
        attribute(agent.change, agent.regresses, agent.reproduces, max_trials=max_trials)
    )


def indexes(hunks: frozenset[Hunk]) -> set[int]:
    return {h.index for h in hunks}


def test_one_hunk_is_found_by_taking_each_back_and_proven_both_ways() -> None:
    agent = Agent(lambda present: 2 in present)
    found = search(agent)
    assert isinstance(found, Attributed)
    assert indexes(found.culprit) == {2}
    assert found.removed.way == "reverted" and not found.removed.trial.regressed
    assert found.removed.trial.scores == (FixtureScore("fx-refund-policy", 8, 8),)
    assert found.reproduced.way == "applied" and indexes(found.reproduced.hunks) == {2}
    assert found.reproduced.trial.regressed
    # hunk 1 taken back (still broken), hunk 2 taken back (fixed), the base with hunk 2
    assert agent.asked == [("reverted", {1}), ("reverted", {2}), ("applied", {2})]
    assert [a.hunks for a in found.attempts] == [frozenset({HUNKS[0]}), *[{HUNKS[1]}] * 2]


def test_two_hunks_that_break_it_only_together_are_reported_as_the_pair() -> None:
    agent = Agent(lambda present: {1, 3} <= present)
    found = search(agent)
    assert isinstance(found, Attributed)
    assert indexes(found.culprit) == {1, 3}
    assert indexes(found.removed.hunks) == {1, 3} and not found.removed.trial.regressed
    assert indexes(found.reproduced.hunks) == {1, 3} and found.reproduced.trial.regressed
    # neither alone reproduces it on the base: each was tried and recorded
    assert ("applied", frozenset({1})) in agent.asked
    assert ("applied", frozenset({3})) in agent.asked
    assert len(agent.asked) == len(set(agent.asked)) == len(found.attempts)


def test_ddmin_narrows_many_hunks_to_the_pair_in_few_trials() -> None:
    agent = Agent(lambda present: {2, 7} <= present, change=hunks(12))
    found = search(agent)
    assert isinstance(found, Attributed)
    assert indexes(found.culprit) == {2, 7}
    # 12 hunks out one by one, 2 of them tried alone on the base, every hunk out, the
    # head with only the 2 (ddmin's start), each of them alone, then the proof: 20
    assert len(found.attempts) == 20
    assert len(agent.asked) == len(set(agent.asked))


@pytest.mark.parametrize("culprit", [1, 35, 40])
def test_a_cause_among_many_hunks_is_bisected_to_within_the_runs_cap(culprit: int) -> None:
    """Forty hunks (a program's modules changed across its files): one at a time, the
    search would spend its cap of 24 trials (the gate's, flows/attribution_runs.py) before
    the 35th; more than the cap can take one at a time, they are bisected from the start,
    and the cause is found and proven in about a dozen."""
    agent = Agent(lambda present: culprit in present, change=hunks(40))
    found = search(agent, max_trials=24)
    assert isinstance(found, Attributed), found
    assert indexes(found.culprit) == {culprit}
    assert len(found.attempts) <= 13
    assert len(agent.asked) == len(set(agent.asked))


def test_a_regression_no_hunk_causes_is_not_attributable_with_every_trial() -> None:
    agent = Agent(lambda present: True)
    found = search(agent)
    assert isinstance(found, NotAttributable)
    assert "every hunk of the agent taken back" in found.reason
    assert len(found.attempts) == 5  # each hunk alone, then all of them
    assert all(a.trial.regressed and a.trial.scores for a in found.attempts)
    assert indexes(found.attempts[-1].hunks) == {1, 2, 3, 4}


def test_two_hunks_that_each_cause_it_are_proven_together() -> None:
    """Either hunk alone breaks the agent: the head still regresses with hunk 1 alone
    (ddmin's answer), yet taking it back does not fix it. The hunks that must all go are
    found by dropping each from all four in turn (3 and 4 need not): the pair, proven both
    ways, the head without it fixed and the base with it broken. No trial runs twice."""
    agent = Agent(lambda present: bool({1, 2} & present))
    found = search(agent)
    assert isinstance(found, Attributed), found
    assert indexes(found.culprit) == {1, 2}
    assert not found.removed.trial.regressed and found.reproduced.trial.regressed
    assert ("reverted", frozenset({1, 2, 4})) in agent.asked  # 3 dropped: the rest fix it
    assert len(agent.asked) == len(set(agent.asked))


def test_hunks_apart_that_the_base_does_not_reproduce_are_never_guessed_at() -> None:
    """Either hunk breaks the head, but the base with both does not break: the pair that
    must go is not proven to cause it, and nothing is named."""
    agent = Agent(lambda present: bool({1, 2} & present), on_base=lambda present: False)
    found = search(agent)
    assert isinstance(found, NotAttributable)
    assert "did not prove" in found.reason
    assert ("applied", frozenset({1, 2})) in agent.asked
    assert len(agent.asked) == len(set(agent.asked))


def test_a_base_that_does_not_reproduce_it_leaves_it_unattributed() -> None:
    """Taking hunk 2 back fixes the head, but the base with hunk 2 does not break: the head
    needs something beside the agent's hunks for it, so hunk 2 is not named."""
    agent = Agent(lambda present: 2 in present, on_base=lambda present: False)
    found = search(agent)
    assert isinstance(found, NotAttributable)
    assert ("applied", frozenset({2})) in agent.asked
    assert indexes(found.narrowed) == {2}


def test_the_search_stops_at_its_cap_with_what_it_tried() -> None:
    agent = Agent(lambda present: {1, 3} <= present)
    found = search(agent, max_trials=5)
    assert isinstance(found, NotAttributable)
    assert "cap of 5 trials" in found.reason
    assert len(found.attempts) == len(agent.asked) == 5
    # more hunks than the cap lets it take back one at a time, with the proof: bisected
    # from the start (every hunk out, then the head keeping half, then a quarter), and
    # stopped there with what it tried
    capped = search(Agent(lambda present: 2 in present), max_trials=3)
    assert isinstance(capped, NotAttributable) and "cap of 3 trials" in capped.reason
    assert [indexes(a.hunks) for a in capped.attempts] == [{1, 2, 3, 4}, {3, 4}, {2, 3, 4}]


def test_a_variant_that_does_not_build_is_recorded_and_skipped() -> None:
    agent = Agent(lambda present: 3 in present, unbuildable=frozenset({2}))
    found = search(agent)
    assert isinstance(found, Attributed)
    assert indexes(found.culprit) == {3}
    unbuilt = [a for a in found.attempts if a.trial.not_built]
    assert [indexes(a.hunks) for a in unbuilt] == [{2}]
    assert "leaves the agent invalid" in unbuilt[0].trial.not_built


def test_no_hunks_is_not_attributable_without_a_trial() -> None:
    agent = Agent(lambda present: True)
    found = asyncio.run(attribute((), agent.regresses, agent.reproduces, max_trials=9))
    assert isinstance(found, NotAttributable)
    assert found.attempts == () and agent.asked == []


def test_an_oracle_that_cannot_afford_a_trial_ends_the_search_with_why() -> None:
    """The caller runs the trials and holds their cost: where it cannot afford the next
    (`Unaffordable`), the search ends there, with its reason and what it tried before."""
    agent = Agent(lambda present: 3 in present)
    afforded = 2

    async def regresses(reverted: frozenset[Hunk]) -> Trial:
        if len(agent.asked) >= afforded:
            raise Unaffordable("attribution stopped at its budget of 4 model calls")
        return await agent.regresses(reverted)

    found = asyncio.run(attribute(HUNKS, regresses, agent.reproduces, max_trials=50))

    assert isinstance(found, NotAttributable)
    assert found.reason == "attribution stopped at its budget of 4 model calls"
    assert [indexes(a.hunks) for a in found.attempts] == [{1}, {2}]


def test_the_cause_of_another_regression_is_tried_first_and_proven_as_any_set() -> None:
    """Hunk 3 caused another Eval's regression of the same change: tried first, it is proven
    in two trials, where one hunk at a time would take back 1 and 2 before it. Where it is
    not the cause here, the search goes on as without it, its one trial among the rest."""
    agent = Agent(lambda present: 3 in present)
    likely = frozenset(h for h in HUNKS if h.index == 3)
    found = asyncio.run(
        attribute(HUNKS, agent.regresses, agent.reproduces, max_trials=50, likely=likely)
    )
    assert isinstance(found, Attributed) and indexes(found.culprit) == {3}
    assert agent.asked == [("reverted", frozenset({3})), ("applied", frozenset({3}))]

    other = Agent(lambda present: 2 in present)
    found = asyncio.run(
        attribute(HUNKS, other.regresses, other.reproduces, max_trials=50, likely=likely)
    )
    assert isinstance(found, Attributed) and indexes(found.culprit) == {2}
    assert other.asked[0] == ("reverted", frozenset({3}))  # not it: the search as before
    assert len(other.asked) == len(set(other.asked))


def test_applied_first_tries_each_hunk_on_the_base_and_proves_it_by_taking_it_back() -> None:
    """Where a variant that regresses costs many times one that does not (pairs judged until
    a preference test settles), each hunk is tried applied alone to the base first: hunk 1,
    not the cause, costs a variant like the base; hunk 2 reproduces it and is taken back to
    prove it. As many trials as taking each back first, and as sound: a pair that breaks it
    only together is still found."""
    agent = Agent(lambda present: 2 in present)
    found = asyncio.run(
        attribute(HUNKS, agent.regresses, agent.reproduces, max_trials=50, applied_first=True)
    )
    assert isinstance(found, Attributed) and indexes(found.culprit) == {2}
    assert agent.asked == [("applied", {1}), ("applied", {2}), ("reverted", {2})]
    assert not found.removed.trial.regressed and found.reproduced.trial.regressed

    together = Agent(lambda present: {1, 3} <= present)
    pair = asyncio.run(
        attribute(HUNKS, together.regresses, together.reproduces, max_trials=50, applied_first=True)
    )
    assert isinstance(pair, Attributed) and indexes(pair.culprit) == {1, 3}

    nowhere = Agent(lambda present: True, on_base=lambda present: len(present) == 4)
    unproven = asyncio.run(
        attribute(HUNKS, nowhere.regresses, nowhere.reproduces, max_trials=50, applied_first=True)
    )
    assert isinstance(unproven, NotAttributable)  # the base reproduces it, taking back does not
