"""What attribution found for a run: per regression, the hunks proven to cause it or why none
were, and what the search spent of its budget. Plain data: results.json, the comment and the
review read it (`record/`, `report/`, `action/publish/review.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from evalward.attribution.hunks import Hunk
from evalward.attribution.search import Attributed, Attribution, NotAttributable
from evalward.rundata.spending import Spent


@dataclass(frozen=True)
class Regression:
    """One Eval's fixtures that pass on the base and not on the head, and its target agent;
    or (`in_pairs`) the ones its pairwise judge finds worse on the head, though they pass; or
    (`pooled`) the ones whose failed runs drove its pooled sequential test broken."""

    eval: str
    agent: str
    fixtures: tuple[str, ...]
    in_pairs: bool = False
    """Found by the Eval's per-fixture preference tests: a variant's runs of them are judged
    in pairs with the base's, and it regresses while one is worse by the margin."""
    pooled: bool = False
    """The Eval's pass rate dropped over these fixtures (its pooled sequential test settled
    broken), in none of them alone: a variant runs them all, and it regresses while that
    pooled test, over its runs of them, settles broken (or one of them fails). With
    `in_pairs`, its pairwise judge's pooled test found the head worse over them: a variant's
    runs of them are judged in pairs, and it regresses while that test finds it worse."""


@dataclass(frozen=True)
class Finding:
    """One regression and what the search made of it."""

    regression: Regression
    attribution: Attribution
    witnesses: tuple[str, ...] = ()
    """The regressed fixtures the variants ran, where not all of them: every variant running
    them all would not fit the budget, and the one cheapest to run proves a cause as well
    (for it alone). () where they ran all."""
    hunks: tuple[Hunk, ...] = ()
    """Every hunk the change to the agent was split into, in the diff's order (a trial's
    "the base with only these" leaves the others out); () where none was split."""

    @property
    def ran_on(self) -> tuple[str, ...]:
        """The fixtures every variant ran: the witnesses, or all that regressed."""
        return self.witnesses or self.regression.fixtures

    @property
    def attributed(self) -> Attributed | None:
        return self.attribution if isinstance(self.attribution, Attributed) else None


@dataclass(frozen=True)
class RunAttribution:
    """Attribution over one run: each regression's, the model calls it spent and the most
    it could (a fraction of the run's own, the base branch's `attribution.budget`)."""

    mode: str
    found: tuple[Finding, ...]
    spent: Spent
    """What the variants' runs spent, apart from the gate's own."""
    budget_calls: int
    untraced: tuple[tuple[str, str], ...] = ()
    """(Eval, why) for each Eval whose drop is its pooled test's alone: no one fixture
    regressed for a variant to run, so it is not traced."""
    unfinished: str = ""
    """Why attribution stopped on an error before it finished (`unfinished_by`), "" where it
    finished: every report says so where its findings would be, with those it made before."""

    @property
    def spent_calls(self) -> int:
        return self.spent.calls

    @property
    def settled(self) -> bool:
        """Whether it finished and said of every regression where it is: proven in some
        hunks, or shown in none (`NotAttributable.in_no_hunk`). Where not (it stopped on an
        error, a budget or its time ran out, its variants decided nothing, a drop no one
        fixture drove), what an earlier head's findings said of their lines may still
        hold: they are not marked as no longer applying."""
        return (
            not self.unfinished
            and not self.untraced
            and all(
                each.attributed is not None
                or (isinstance(each.attribution, NotAttributable) and each.attribution.in_no_hunk)
                for each in self.found
            )
        )
