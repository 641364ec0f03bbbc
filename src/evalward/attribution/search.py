"""Which hunks of a change cause a regression: found by running variants, proven both ways.

Each trial costs the regressing fixtures' runs on one variant, so the search asks as few as
it can: first each hunk taken back alone (a regression one hunk causes is found in as many
trials as there are hunks); when no single hunk settles it, or there are more than the cap
of trials lets it try one by one, delta debugging (Zeller's ddmin) narrows the hunks the
head keeps to a set from which no hunk can be dropped. ddmin starts from the hunks each of
which alone removed the regression, where the head with only those still regresses: hunks
that break it only together then cost a few trials more, not a search over them all. Where
the smallest set the head still regresses with is not the cause (hunks that each cause it
apart, one fixture each, say), the hunks that must all be taken back for it to go are found
by dropping each in turn from every hunk. A set is called the cause only when both are
shown: the head without it no longer regresses, and the base with only it does. Where one of
those variants does not load because the set needs another hunk beside it (a prompt moved
from its file into the agent's YAML: the `system:` field taken back wants the file the change
deleted, and applied to the base it stands beside the base's `systemFile:`), it is made again
with the hunks that, each alone, the search showed change nothing that way (the head without
the deleted file still regresses; the base without its `systemFile:` line still passes), and
the proof names them. Anything less (a set that does not reproduce, a budget spent) is "not
attributable", with every trial and what it scored: an author is never pointed at a guess.

The caller runs the trials (`Oracle`): it builds the variant (attribution/variants.py), runs
the regressing fixtures on it and says whether the regression is there (the head itself,
every hunk applied, is read from the gate's own runs of it). A variant that does
not build is recorded so and tells the search nothing; one the caller cannot afford
(`Unaffordable`) ends the search, with why.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from evalward.attribution.hunks import Hunk


@dataclass(frozen=True)
class FixtureScore:
    """A fixture's runs on one variant: `passed` of `runs`; with `pairs`, its pairs with the
    base's runs: `passed` of them not won by the base, of `runs` judged."""

    fixture: str
    passed: int
    runs: int
    pairs: bool = False


@dataclass(frozen=True)
class Trial:
    """What the runs on one variant showed: whether the regression is there, and the scores
    that say so. `not_built` (why) when the variant could not be made; `regressed` then
    means nothing."""

    regressed: bool
    scores: tuple[FixtureScore, ...] = ()
    not_built: str = ""
    gate_runs: bool = False
    """The variant is the head itself, and the gate's own runs of it say this: none ran."""
    unloadable: bool = False
    """Not built because its definitions do not load (a hunk needs another beside it: an
    agent's `system:` with its `systemFile:`), not because its runs decided nothing (an
    outage, a budget): only such a variant is made again with the hunks that change nothing
    beside it (`_Search.shown`), for an agent that runs is never taken as one that does not."""


Oracle = Callable[[frozenset[Hunk]], Awaitable[Trial]]
"""Runs the regressing fixtures on one variant, given its hunks; raises `Unaffordable`
where it may not."""


class Unaffordable(Exception):
    """No more variant may run (a budget spent): why, its message. Not an EvalwardError: the
    search ends on it with what it tried, and one that escaped it would be a bug."""


Way = Literal["reverted", "applied"]
"""`reverted`: the head with the hunks taken back; `applied`: the base with only them."""


@dataclass(frozen=True)
class Tried:
    """One trial of the search, in the order it ran."""

    way: Way
    hunks: frozenset[Hunk]
    trial: Trial


@dataclass(frozen=True)
class Attributed:
    """The hunks that cause the regression, with the two trials that prove it."""

    culprit: frozenset[Hunk]
    removed: Tried
    """The head without the culprit: the regression is gone. Its hunks are the culprit's,
    and the hunks it needed to load that change nothing alone (`Attributed.beside`)."""
    reproduced: Tried
    """The base with only the culprit (and, likewise, what it needed to load): the
    regression is back."""
    attempts: tuple[Tried, ...]

    def beside(self, proof: Tried) -> frozenset[Hunk]:
        """The hunks a proof's variant holds beside the culprit: each shown alone to change
        nothing that way (all together too), there for the variant to load."""
        return proof.hunks - self.culprit


@dataclass(frozen=True)
class NotAttributable:
    """No set of hunks was proven to cause the regression: why, and everything tried.
    `narrowed` is the smallest set the head was shown to still regress with, when the
    search got that far (never called the cause)."""

    reason: str
    attempts: tuple[Tried, ...]
    narrowed: frozenset[Hunk] = frozenset()
    in_no_hunk: bool = False
    """The search showed the regression is in no hunk of the change: it has none, or with
    every one taken back the regression is still there. Any other reason (a budget or a cap
    spent, variants that decided nothing) says nothing of where it is: a finding an earlier
    head's search made on some lines may still hold."""


Attribution = Attributed | NotAttributable


async def attribute(
    hunks: Sequence[Hunk],
    regresses: Oracle,
    reproduces: Oracle,
    *,
    max_trials: int,
    likely: frozenset[Hunk] = frozenset(),
    applied_first: bool = False,
) -> Attribution:
    """The smallest set of `hunks` proven to cause the regression, in at most `max_trials`
    trials. `regresses(reverted)`: the head with `reverted` taken back still regresses;
    `reproduces(applied)`: the base with only `applied` regresses. Either may raise
    `Unaffordable`: the search stops there. `likely` (the cause of another regression of the
    same change) is tried first, proven as any set is: two trials, where it is the cause
    here too, against one a hunk one at a time. `applied_first`: a set is tried applied
    alone to the base before it is taken back from the head, where a variant that regresses
    costs a few times one that does not (a preference test settles "worse" on a run of
    pairs, a tie at once; under adaptive reps a failing fixture's test settles in a few
    runs, a passing one's at its first): a hunk that is not the cause then costs a variant
    like the base, not one like the head, in as many trials."""
    search = _Search(
        list(dict.fromkeys(hunks)), regresses, reproduces, max_trials, likely, applied_first
    )
    if not search.hunks:
        return NotAttributable(
            "the change has no hunk of the agent to take back", (), in_no_hunk=True
        )
    try:
        return await search.run()
    except (_Capped, Unaffordable) as stopped:
        return search.give_up(str(stopped))


class _Capped(Exception):
    """The next trial would pass the cap: why (its message)."""


class _Search:
    def __init__(
        self,
        hunks: list[Hunk],
        regresses: Oracle,
        reproduces: Oracle,
        max_trials: int,
        likely: frozenset[Hunk] = frozenset(),
        applied_first: bool = False,
    ) -> None:
        self.hunks = hunks
        self.likely = likely
        self.oracles: dict[Way, Oracle] = {"reverted": regresses, "applied": reproduces}
        self.max_trials = max_trials
        self.attempts: list[Tried] = []
        self.known: dict[tuple[Way, frozenset[Hunk]], Tried] = {}
        self.narrowed: frozenset[Hunk] = frozenset()
        self.applied_first = applied_first

    def give_up(self, reason: str, *, in_no_hunk: bool = False) -> NotAttributable:
        return NotAttributable(reason, tuple(self.attempts), self.narrowed, in_no_hunk)

    async def trial(self, way: Way, hunks: frozenset[Hunk]) -> Tried:
        """One trial, run once however often the search asks for it."""
        key = (way, hunks)
        if key not in self.known:
            if len(self.attempts) >= self.max_trials:
                raise _Capped(f"the search stopped at its cap of {self.max_trials} trials")
            attempt = Tried(way, hunks, await self.oracles[way](hunks))
            self.attempts.append(attempt)
            self.known[key] = attempt
        return self.known[key]

    async def removes(self, reverted: frozenset[Hunk]) -> bool:
        """The head without `reverted` was built and no longer regresses."""
        trial = (await self.trial("reverted", reverted)).trial
        return not trial.not_built and not trial.regressed

    async def keeps(self, kept: list[Hunk]) -> bool:
        """The head keeping only `kept` of the hunks was built and still regresses."""
        keeping = set(kept)  # a set: a change of many hunks is asked of each of them
        reverted = frozenset(h for h in self.hunks if h not in keeping)
        trial = (await self.trial("reverted", reverted)).trial
        return not trial.not_built and trial.regressed

    async def run(self) -> Attribution:
        # one hunk at a time where every hunk and the proof fit in the cap; a change of more
        # (a program's modules, changed across many files) is bisected from the start (ddmin
        # from every hunk: two trials a halving at most), where one at a time would spend
        # the cap before it reached a late hunk
        if self.likely and self.likely <= set(self.hunks):
            proven = await self.prove(self.likely)
            if proven is not None:
                return proven
        one_by_one = len(self.hunks) + 2 <= self.max_trials
        for hunk in self.hunks if one_by_one else ():  # settles what one hunk causes
            proven = await self.prove(frozenset({hunk}))
            if proven is not None:
                return proven
        everything = frozenset(self.hunks)
        if not await self.removes(everything):
            not_built = self.known[("reverted", everything)].trial.not_built
            if not_built:
                return self.give_up(f"the head with every hunk taken back did not run: {not_built}")
            return self.give_up(
                "with every hunk of the agent taken back the regression is still there: it is "
                "not in these hunks",
                in_no_hunk=True,
            )
        kept = await self.ddmin(await self.start() if one_by_one else list(self.hunks))
        proven = await self.prove(frozenset(kept))
        if proven is None and len(kept) < len(self.hunks):
            # causes apart (one hunk breaks a fixture, another hunk another): the head keeps
            # regressing with either, so no set ddmin finds, taken back, removes it; the
            # smallest set that does is what must go
            proven = await self.prove(await self.removal())
        if proven is not None:
            return proven
        return self.give_up(
            "the smallest set of hunks the head still regresses with did not prove, taken "
            "back and applied alone to the base, to cause it"
        )

    async def prove(self, culprit: frozenset[Hunk]) -> Attributed | None:
        """`culprit` as the cause, when the head without it is fixed and the base with only
        it regresses (tried in that order, or the other `applied_first`); else None."""
        order: tuple[Way, Way] = (
            ("applied", "reverted") if self.applied_first else ("reverted", "applied")
        )
        proofs: dict[Way, Tried] = {}
        for way in order:
            proof = await self.shown(way, culprit)
            if proof is None:
                return None
            proofs[way] = proof
        return Attributed(culprit, proofs["reverted"], proofs["applied"], tuple(self.attempts))

    async def shown(self, way: Way, culprit: frozenset[Hunk]) -> Tried | None:
        """The trial that shows `culprit` the cause `way`: the head without it fixed
        (`reverted`), the base with it regressing (`applied`). Where the variant does not
        load, it is made again with the hunks the search has shown, each alone, to change
        nothing that way, where they change nothing together either (a trial more where
        they are several): the hunks the culprit needs beside it. None where neither shows it."""
        tried = await self.trial(way, culprit)
        if tried.trial.unloadable:
            idle = frozenset(
                h
                for h in self.hunks
                if h not in culprit and self._idle(self.known.get((way, frozenset({h}))))
            )
            if not idle or not self._idle(await self.trial(way, idle)):
                return None
            tried = await self.trial(way, culprit | idle)
        shown = tried.trial.regressed if way == "applied" else not tried.trial.regressed
        return tried if shown and not tried.trial.not_built else None

    @staticmethod
    def _idle(tried: Tried | None) -> bool:
        """A variant shown to change nothing: the head without its hunks still regresses,
        or the base with them still passes."""
        if tried is None or tried.trial.not_built:
            return False
        return tried.trial.regressed if tried.way == "reverted" else not tried.trial.regressed

    async def removal(self) -> frozenset[Hunk]:
        """The hunks that must all be taken back for the regression to go, from every hunk
        (which removes it): each dropped in turn where the rest, taken back, still remove it.
        Where each of several hunks causes it alone (or a fixture of its own), that is all
        of them, and no fewer."""
        needed = list(self.hunks)
        for hunk in list(needed):
            rest = [h for h in needed if h is not hunk]
            if rest and await self.removes(frozenset(rest)):
                needed = rest
        return frozenset(needed)

    async def start(self) -> list[Hunk]:
        """Where ddmin starts: the hunks each of which, taken back alone, removed the
        regression, when the head keeping only those still regresses (hunks that break it
        only together are found in a few trials more); else every hunk."""
        needed = [h for h in self.hunks if await self.removes(frozenset({h}))]
        if 1 < len(needed) < len(self.hunks) and await self.keeps(needed):
            return needed
        return list(self.hunks)

    async def ddmin(self, kept: list[Hunk]) -> list[Hunk]:
        """Zeller's ddmin over the hunks the head keeps, from `kept` (with which it
        regresses): a smallest set it still regresses with, from which dropping any one
        hunk removes the regression (or untested where a variant did not build)."""
        parts = 2
        while len(kept) >= 2:
            self.narrowed = frozenset(kept)
            chunks = _split(kept, parts)
            smaller = await self._first_kept(chunks)
            if smaller is not None:
                kept, parts = smaller, 2
                continue
            smaller = await self._first_kept(_complements(kept, chunks) if parts > 2 else [])
            if smaller is not None:
                kept, parts = smaller, max(parts - 1, 2)
            elif parts >= len(kept):
                break
            else:
                parts = min(len(kept), parts * 2)
        self.narrowed = frozenset(kept)
        return kept

    async def _first_kept(self, candidates: Iterable[list[Hunk]]) -> list[Hunk] | None:
        for candidate in candidates:
            if await self.keeps(candidate):
                return candidate
        return None


def _complements(kept: list[Hunk], chunks: list[list[Hunk]]) -> Iterator[list[Hunk]]:
    """`kept` without each chunk in turn, made as the search asks for the next: each a pass
    over `kept`, never one for each hunk of it."""
    for chunk in chunks:
        dropped = set(chunk)
        yield [h for h in kept if h not in dropped]


def _split(hunks: list[Hunk], parts: int) -> list[list[Hunk]]:
    """`hunks` in `parts` contiguous chunks of near-equal size."""
    size, extra = divmod(len(hunks), parts)  # the first `extra` chunks take one more
    starts = [index * size + min(index, extra) for index in range(parts + 1)]
    return [hunks[start:end] for start, end in itertools.pairwise(starts)]
