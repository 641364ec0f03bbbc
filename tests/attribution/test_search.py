"""The search for the hunks that cause a regression (attribution/search.py), against oracles
that model an agent: the regression is there iff the variant holds a given set of hunks."""

from __future__ import annotations

import asyncio
import random
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
        builds: Breaks = lambda present: True,
    ) -> None:
        self.change = change
        self.breaks = breaks
        self.unbuildable = unbuildable
        self.builds = builds
        """Whether an agent holding these hunks loads at all (some hunks need others)."""
        self.on_base = on_base or breaks
        """Whether the base with these hunks shows it (the head's other files may matter)."""
        self.asked: list[tuple[str, frozenset[int]]] = []

    def _trial(self, present: frozenset[int], changed: frozenset[int], breaks: Breaks) -> Trial:
        if changed & self.unbuildable or not self.builds(present):
            return Trial(
                False, not_built="taking it back leaves the agent invalid", unloadable=True
            )
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


def test_a_change_of_many_hunks_is_searched_in_work_linear_in_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pull request that changes every other line of a prompt makes each line a hunk:
    the search asked of each hunk whether it was among those kept, a list, so its own
    bookkeeping grew with their square (152 s for one narrowing at 40,000), past the time
    bound it checks only between trials, with signals unheard. Counted, not timed: the
    comparisons of hunks the search makes stay a few for each hunk."""
    compared = 0
    equal = Hunk.__eq__

    def counted(self: Hunk, other: object) -> bool:
        nonlocal compared
        compared += 1
        return equal(self, other)

    monkeypatch.setattr(Hunk, "__eq__", counted)
    change = hunks(3000)
    agent = Agent(lambda present: 1777 in present, change=change)
    found = search(agent, max_trials=24)
    assert isinstance(found, Attributed), found
    assert indexes(found.culprit) == {1777}
    assert compared < 10 * len(change), compared


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
    """Hunk 2 taken back leaves the agent invalid: recorded, tried once more with hunk 1 (the
    head without it was shown to still regress) beside it, which does not build either."""
    agent = Agent(lambda present: 3 in present, unbuildable=frozenset({2}))
    found = search(agent)
    assert isinstance(found, Attributed)
    assert indexes(found.culprit) == {3}
    assert found.removed.hunks == found.culprit == found.reproduced.hunks
    unbuilt = [a for a in found.attempts if a.trial.not_built]
    assert [indexes(a.hunks) for a in unbuilt] == [{2}, {1, 2}]
    assert "leaves the agent invalid" in unbuilt[0].trial.not_built


MOVE = (
    Hunk("agents/clerk.yaml", 1, "field", 8, 8, ("  systemFile: prompts/clerk.md\n",), ()),
    Hunk("agents/clerk.yaml", 2, "field", 8, 10, (), ("  system: |\n", "    Never refund.\n")),
    Hunk("prompts/clerk.md", 3, "file", 0, 0, ("Refund when asked.\n",), ()),
)
"""A prompt moved from its file into the agent's YAML, with a rule of its own: the
`systemFile:` line removed (1), the `system:` field added (2), the file deleted (3)."""


def _loads(present: frozenset[int]) -> bool:
    """The clerk loads with one of `system` and `systemFile`, or neither, and its
    `systemFile` names a file that is there."""
    system, system_file, file_there = 2 in present, 1 not in present, 3 not in present
    return not (system and system_file) and (file_there or not system_file)


@pytest.mark.parametrize("applied_first", [False, True])
def test_a_prompt_moved_into_the_yaml_is_proven_with_the_hunks_it_needs_beside_it(
    applied_first: bool,
) -> None:
    """The rule is in the `system:` field (2), but no variant holding it alone builds: the
    head without it (and without 1) wants the deleted file, the base with it has two
    prompts. Each variant is made again with the hunks shown alone to change nothing that
    way (the head without the file still regresses; the base without its `systemFile:`
    line still passes), and the proof names them beside the cause: the `system:` field, or
    the field's whole change (1 and 2) where no hunk was tried on the base alone."""
    agent = Agent(lambda present: 2 in present, change=MOVE, builds=_loads)
    found = asyncio.run(
        attribute(
            MOVE, agent.regresses, agent.reproduces, max_trials=50, applied_first=applied_first
        )
    )
    assert isinstance(found, Attributed), found
    assert not found.removed.trial.regressed and found.reproduced.trial.regressed
    assert not found.removed.trial.not_built and not found.reproduced.trial.not_built
    if applied_first:
        assert indexes(found.culprit) == {2}
        assert indexes(found.beside(found.removed)) == set()
        assert indexes(found.beside(found.reproduced)) == {1}  # the base's systemFile out
    else:
        assert indexes(found.culprit) == {1, 2}
        assert indexes(found.beside(found.removed)) == {3}  # the deleted file back too
        assert indexes(found.beside(found.reproduced)) == set()
    assert len(agent.asked) == len(set(agent.asked)) == len(found.attempts)


def test_a_variant_whose_runs_decided_nothing_is_never_made_again_with_other_hunks() -> None:
    """The head without hunk 2 loads, but its runs decide nothing (a provider down): it may
    regress or not, so nothing is put beside hunk 2 to read it as fixed (the head without
    hunk 1 too is the base, which passes). Hunk 2 alone is not proven; both together are."""
    agent = Agent(lambda present: 2 in present, change=MOVE[:2])

    async def regresses(reverted: frozenset[Hunk]) -> Trial:
        if indexes(reverted) == {2}:
            agent.asked.append(("reverted", frozenset({2})))
            return Trial(False, not_built="its runs of f0 decided nothing: a provider was down")
        return await agent.regresses(reverted)

    found = asyncio.run(attribute(MOVE[:2], regresses, agent.reproduces, max_trials=50))

    assert isinstance(found, Attributed)
    assert indexes(found.culprit) == {1, 2}
    assert found.beside(found.removed) == found.beside(found.reproduced) == frozenset()


def _column(table: dict[frozenset[int], tuple[bool, bool]], column: int) -> Breaks:
    return lambda present: table[present][column]


def test_a_proof_holds_whatever_the_variants_show() -> None:
    """Agents of a few hunks each, 4,000 of them, drawn at random (whether each set of hunks
    loads, and whether it regresses; the base loads and passes, the head loads and
    regresses): a cause the search calls proven is so in the agent itself. The head without
    the removed proof's hunks loads and passes, and without the hunks beside the cause
    alone still regresses; the base with the reproducing proof's hunks loads and regresses,
    and with the hunks beside the cause alone passes. (Hunks each idle alone can together
    change something: about one agent in two hundred here.)"""
    draw = random.Random(20261130)
    proven_beside = 0
    for _ in range(4000):
        count = draw.randint(2, 4)
        every = frozenset(range(1, count + 1))
        table = {
            frozenset(n for n in every if mask >> (n - 1) & 1): (
                draw.random() < 0.6,
                draw.random() < 0.5,
            )
            for mask in range(1, (1 << count) - 1)
        }
        table[every], table[frozenset()] = (True, True), (True, False)
        change = hunks(count)
        agent = Agent(_column(table, 1), change=change, builds=_column(table, 0))
        found = asyncio.run(
            attribute(
                change,
                agent.regresses,
                agent.reproduces,
                max_trials=40,
                applied_first=draw.random() < 0.5,
            )
        )
        if not isinstance(found, Attributed):
            continue
        assert indexes(found.culprit) <= indexes(found.removed.hunks)
        assert indexes(found.culprit) <= indexes(found.reproduced.hunks)
        assert table[every - indexes(found.removed.hunks)] == (True, False)
        assert table[frozenset(indexes(found.reproduced.hunks))] == (True, True)
        if beside := indexes(found.beside(found.removed)):
            assert table[every - beside] == (True, True)
        if beside := indexes(found.beside(found.reproduced)):
            assert table[frozenset(beside)] == (True, False)
        proven_beside += bool(found.beside(found.removed) or found.beside(found.reproduced))
    assert proven_beside > 500  # the agents drawn exercise the hunks put beside a cause


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


OUT = (
    Hunk("agents/clerk.yaml", 1, "field", 6, 6, ("  system: |\n", "    Refund.\n"), ()),
    Hunk("agents/clerk.yaml", 2, "field", 6, 6, (), ("  systemFile: prompts/clerk.md\n",)),
    Hunk("prompts/clerk.md", 3, "file", 1, 1, (), ("Never refund.\n",)),
)
"""The prompt moved out of the YAML into a file of its own, with a rule: the `system:` field
removed (1), the `systemFile:` line added (2), the file added (3)."""


def _loads_from_a_file(present: frozenset[int]) -> bool:
    system, system_file, file_there = 1 not in present, 2 in present, 3 in present
    return not (system and system_file) and (file_there or not system_file)


@pytest.mark.parametrize("applied_first", [False, True])
def test_a_prompt_moved_out_into_a_file_is_named_with_its_file(applied_first: bool) -> None:
    """The rule is in the new file, which only the `systemFile:` line makes the agent read:
    neither alone breaks it, and the head without the file does not load. Whatever is
    proven names the file, as the cause or beside it, never leaves it out."""
    agent = Agent(lambda present: {2, 3} <= present, change=OUT, builds=_loads_from_a_file)
    found = asyncio.run(
        attribute(
            OUT, agent.regresses, agent.reproduces, max_trials=50, applied_first=applied_first
        )
    )
    assert isinstance(found, Attributed), found
    named = found.culprit | found.beside(found.removed) | found.beside(found.reproduced)
    assert 3 in indexes(named) and 2 in indexes(named)
