"""What attribution may spend: a budget in model calls, a fraction of what the gate's own runs
made (`run_calls`), counted as its variants spend it (`CallBudget`), and what a variant of some
regressed fixtures is expected to make and counts for at least (`GateCalls`), read once from
the gate's runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evalward.attribution.found import Regression
from evalward.record.evaluation import Evaluation
from evalward.record.schema import SpentInfo
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spending import Spent


def run_calls(evaluation: Evaluation, spent: SpentInfo | None) -> int:
    """The model calls the run's results took, as if none had been reused: what the run
    `spent`, and what each result it read from the result cache made when it ran, its
    agent's, simulated user's and judges' (`result_calls`), but for the judge calls a
    deferred judge made of it in this run, which `spent` holds already. A rerun that reads
    every run from the cache gets the budget the first run had, and reads its variants'
    runs from the cache too."""
    made = sum(
        result_calls(evaluation, r) - r.judge_calls_now for r in evaluation.fixtures if r.cached
    )
    return (spent.model_calls if spent is not None else 0) + made


def result_calls(evaluation: Evaluation, result: FixtureResult) -> int:
    """The model calls one run made, its agent's, its simulated user's and its judges'."""
    trace = evaluation.trace_of(result)
    return trace.model_calls + trace.user_calls + result.judge_calls


@dataclass(frozen=True)
class GateCalls:
    """The model calls each of the gate's runs of a regression's fixtures made (agents',
    simulated users' and judges'), by fixture and side, read from their traces once: what a
    variant's runs of some of them are expected to make (`need`), and the least such a
    trial counts for (`least`), however often the search asks."""

    made: Mapping[tuple[str, str], tuple[int, ...]]
    in_pairs: bool = False
    """A regression found in pairs: a variant's runs are judged in pairs with the base's,
    which run again unless the result cache holds them (`base_cached`)."""
    base_cached: bool = False

    @classmethod
    def of(cls, evaluation: Evaluation, regression: Regression, cached: bool) -> GateCalls:
        made: dict[tuple[str, str], list[int]] = {}
        for result in evaluation.fixtures:
            if result.eval == regression.eval and result.fixture in regression.fixtures:
                calls = result_calls(evaluation, result)
                made.setdefault((result.fixture, result.side), []).append(calls)
        made_calls = {key: tuple(calls) for key, calls in made.items()}
        return cls(made_calls, regression.in_pairs, cached)

    def need(self, fixtures: tuple[str, ...]) -> int:
        """What the gate's runs of `fixtures` made, on the side that made more: about what a
        variant's runs of them make, whichever of the two it behaves like. Judged in pairs,
        what a variant that answers like the base makes: a run of each (and the base's
        again, where the result cache does not hold it) and a pair's first order, which a
        tie settles. One that answers like the head runs until its preference test settles,
        many times that (eight runs and their pairs at `evalward init`'s reps), and is held
        to what is left (`Ceiling`): expected at the head's cost, the proof's two variants
        would seldom fit the default budget, though the one like the base costs two calls."""
        if self.in_pairs:
            return self.least(fixtures) * (1 if self.base_cached else 2) + len(fixtures)
        return max(
            sum(sum(self.made.get((fixture, side.value), ())) for fixture in fixtures)
            for side in (Side.head, Side.base)
        )

    def least(self, fixtures: tuple[str, ...]) -> int:
        """What one run of each of `fixtures` made on the base, the fewest any of the gate's
        base runs of it made: the least a variant that runs them like the base costs. Under
        adaptive reps such a variant stops at fewer reps than the head's failing runs took,
        so one run, not all of them, is what a trial counts for at least
        (`CallBudget.count`). The base's runs, not the head's: a pull request whose head
        makes no call must not make its variants count for nothing (a fixture the base did
        not run counts the head's fewest)."""
        base, head = Side.base.value, Side.head.value
        return sum(
            min(self.made.get((fixture, base)) or self.made.get((fixture, head)) or (0,))
            for fixture in fixtures
        )


@dataclass
class CallBudget:
    """What attribution may still spend: `total` less what the providers counted since it
    began (`spent_since`), or less what its trials count for where that is more (`counted`:
    each trial at least a run of each of its fixtures, `count`). A variant starts only while
    what is left covers what the gate's own runs of its fixtures made (`stop`), or the result
    cache holds every run of it (it then counts for nothing); its calls are held to what is
    left, whatever it does (`Ceiling`). `short` once a variant's runs
    did not fit: the next would not either, so the search stops there, saying so."""

    total: int
    spent: Spent
    """The providers' tally, which keeps counting."""
    fraction: float
    """The base branch's `attribution.budget`, whose share of the run's calls `total` is."""
    short: bool = False
    counted: int = 0
    """The calls the trials so far count for: each what it made, or what a run of each of
    its fixtures made on the base where it made fewer. A variant that makes no call (it
    gives up at once, or waits out its timeout) is a trial all the same: without it the
    search would run to its cap of trials, each as long as the pull request makes it."""
    before: Spent = field(init=False)
    """The tally as attribution began."""

    def __post_init__(self) -> None:
        self.before = self.spent.plus(Spent())

    def spent_since(self) -> Spent:
        return self.spent.since(self.before)

    def left(self) -> int:
        return self.total - max(self.spent_since().calls, self.counted)

    def count(self, before: int, least: int) -> None:
        """Count a trial that began when `before` calls were spent, for what it made and at
        least `least` (a run of each of its fixtures, `GateCalls.least`; one call at least)."""
        made = self.spent_since().calls - before
        self.counted = max(self.counted, before) + max(made, least, 1)

    def stop(self, need: int = 1) -> str:
        """Why no more variant may run ("": one may), when one needs about `need` calls, and
        where the budget is set."""
        stopped = f"attribution stopped at its budget of {self.total} model calls"
        left = self.left()
        if left >= max(need, 1) and not self.short:
            return ""
        if left > 0 and self.short:
            stopped += f": a variant's runs needed more than the {left} left"
        elif left > 0:
            stopped += (
                f": a variant's runs need about {need} (what the gate's runs of its fixtures "
                f"made), more than the {left} left"
            )
        spent = self.spent_since().calls
        if self.counted > spent:
            stopped += (
                f", its variants counted for {self.counted} though they made {spent} (each "
                "counts for at least what a run of each of its fixtures made on the base)"
            )
        return (
            f"{stopped} ({self.fraction:g} × the run's own: attribution.budget in the base "
            "branch's evalward.yaml raises it)"
        )
