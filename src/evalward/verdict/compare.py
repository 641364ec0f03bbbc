"""Base against head: per-Eval score deltas and per-fixture regressions, fixes, new, removed.

A fixture regresses when it passed on base and fails on head. With several reps that is a
drop in pass rate, and one lucky or unlucky rep can cause it; each fixture's paired test
(`FixtureComparison.mcnemar`, McNemar's exact test over its reps paired by index, see
`evalward.verdict.stats`) says whether its drop is significant at `SIGNIFICANCE` or inconclusive.
An Eval with adaptive reps is classified by its sequential verdicts instead (`settle`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from evalward.rundata.results import EvalResult, FixtureResult
from evalward.scoring.scores import runs_by_fixture
from evalward.verdict.stats import McNemar, mcnemar_drop

SIGNIFICANCE = 0.05


class Change(StrEnum):
    regression = "regression"
    fixed = "fixed"
    still_failing = "still failing"
    still_passing = "still passing"
    new = "new"
    removed = "removed"
    advisory = "advisory"
    """Nothing in the fixture gates on head (every assertion advisory): shown, not compared."""
    failing = "failing"
    """With adaptive reps: settled broken on head, and the base did not run it."""
    not_settled = "not settled"
    """With adaptive reps: its head test did not settle (likely regression, unreliable
    baseline, not settled, not enough data)."""


@dataclass(frozen=True)
class FixtureComparison:
    fixture: str
    change: Change
    base: list[FixtureResult]
    head: list[FixtureResult]
    head_passed: bool = False
    """The fixture's verdict on head over its reps, by the Eval's `minRepPassRate` rule."""
    gates: bool = True
    """False for a fixture the pull request adds: it ran, and gates once merged."""

    def discordant(self) -> tuple[int, int]:
        """Of this fixture's reps paired by index, how many passed on base and fail on head,
        and how many the other way round."""
        base = {r.rep: r.passed for r in self.base}
        pairs = [(base[r.rep], r.passed) for r in self.head if r.rep in base]
        return sum(1 for b, h in pairs if b and not h), sum(1 for b, h in pairs if h and not b)

    def mcnemar(self) -> McNemar:
        """McNemar's exact test over this fixture's reps paired by index."""
        return mcnemar_drop(*self.discordant())

    @property
    def significant(self) -> bool:
        """Its drop from base is significant on its own (McNemar, per fixture)."""
        return self.change is Change.regression and self.mcnemar().p_value < SIGNIFICANCE

    def numbers(self) -> str:
        """ "base 5/5 → head 0/5": its passes over its reps on each side ("head 0/5" alone
        where no base ran it: a run with no base, or a fixture the change adds)."""
        head = f"head {sum(r.passed for r in self.head)}/{len(self.head)}"
        if not self.base:
            return head
        return f"base {sum(r.passed for r in self.base)}/{len(self.base)} → {head}"


@dataclass
class EvalComparison:
    head: EvalResult
    base: EvalResult | None
    fixtures: list[FixtureComparison] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Each fixture's facts as the reports classify them (`record.summary`), by fixture name,
    kept with the comparison so that a run's many surfaces (the counts, the comment, the
    terminal, report.html) classify each fixture once."""
    added: bool = False
    """The pull request adds this Eval (`Plan.added`): it gates, but every surface names the
    base branch's own failing Evals and fixtures before it, worst first among themselves
    (`record.summary.headline`, `report.story.blocking`), since its threshold and severity
    weights are the pull request's to choose."""

    @property
    def name(self) -> str:
        return self.head.eval

    @property
    def delta(self) -> float | None:
        """Head's score less base's; None without a base, or when some of the base's runs
        were not judged (`EvalResult.not_judged`): its score is then of other fixtures."""
        if self.base is None or self.base.not_judged:
            return None
        return self.head.score - self.base.score

    def of(self, change: Change) -> list[FixtureComparison]:
        return [f for f in self.fixtures if f.change is change]

    def regression_test(self) -> McNemar:
        """McNemar's exact test over outcomes paired by fixture and rep index, pooled over the
        Eval: shown beside the per-fixture tests, which are what gates."""
        counted = [f.discordant() for f in self.fixtures if f.change is not Change.advisory]
        return mcnemar_drop(sum(w for w, _ in counted), sum(b for _, b in counted))

    @property
    def significant_regression(self) -> bool:
        """A gating fixture passes significantly less often on head than on base."""
        return bool(self.significant_fixtures())

    def significant_fixtures(self) -> list[FixtureComparison]:
        return [f for f in self.fixtures if f.gates and f.significant]


def compare(results: list[EvalResult], added: Collection[str] = ()) -> list[EvalComparison]:
    """Pair each head EvalResult with its base counterpart (if the base ran it). A base whose
    runs all failed to reach their provider is no baseline: there is nothing to compare.
    `added`: the Evals the pull request adds (`Plan.added`)."""
    base = {r.eval: r for r in results if r.side == "base" and not r.provider_unavailable}
    compared = [_compare_one(r, base.get(r.eval)) for r in results if r.side == "head"]
    for comparison in compared:
        comparison.added = comparison.name in added
    return compared


def no_baseline_notes(results: list[EvalResult]) -> list[str]:
    """A note for each Eval `compare` finds no baseline for because its base reached no
    provider: said of the whole run's results (a shard part's own would speak for its share)."""
    return [
        f"{r.eval}: no baseline — every base run failed to reach its model provider after retries"
        for r in results
        if r.side == "base" and r.provider_unavailable
    ]


def _compare_one(head: EvalResult, base: EvalResult | None) -> EvalComparison:
    comparison = EvalComparison(head=head, base=base)
    head_runs = runs_by_fixture(head.fixtures)
    # a base run whose judge was not asked has no verdict: the fixture's base is as not run
    judged = [r for r in base.fixtures if not r.not_judged] if base is not None else []
    base_runs = runs_by_fixture(judged)
    head_passed = _verdicts(head)
    base_passed = (
        {k: v for k, v in _verdicts(base).items() if k in base_runs} if base is not None else {}
    )
    pending = set(head.pending)
    advisory = {o.name for o in head.fixture_results if o.advisory}
    sequential = _sequential(head)
    not_needed = set(head.base_not_needed)  # tested once per fixture: a set, not the list
    head_passed |= {name: passes for name, (_, passes) in sequential.items()}
    for name in sorted(set(head_runs) | set(base_runs)):
        change = _classify(base_passed.get(name), head_passed.get(name))
        if name in sequential:  # the base runs only where the verdict reads it
            change = Change.new if name in pending else sequential[name][0]
        elif name in not_needed and head_passed.get(name):
            change = Change.still_passing  # the head passed it, so the base was not run
        if name in advisory:
            change = Change.advisory
        comparison.fixtures.append(
            FixtureComparison(
                name,
                change,
                base_runs.get(name, []),
                head_runs.get(name, []),
                head_passed=bool(head_passed.get(name)),
                gates=name not in pending,
            )
        )
    return comparison


def _verdicts(result: EvalResult) -> dict[str, bool]:
    """Each fixture's pass/fail over its reps, by the Eval's `minRepPassRate` rule."""
    outcomes = {o.name: o.passed for o in result.fixture_results}
    for name, runs in runs_by_fixture(result.fixtures).items():
        outcomes.setdefault(name, all(r.passed for r in runs))
    return outcomes


_CHANGE_OF = {
    "regression": Change.regression,
    "still failing": Change.still_failing,
    "failing": Change.failing,
    "improvement": Change.fixed,
    "stable": Change.still_passing,
    "noise": Change.still_passing,
}


def _sequential(head: EvalResult) -> dict[str, tuple[Change, bool]]:
    """With adaptive reps, each fixture's change and whether it passes on head, by its
    sequential test: it passes when it settled working (its base runs only where the verdict
    reads it, so a settled working fixture is still passing); one that did not settle is
    neither passing nor failing."""
    if head.sequential is None:
        return {}
    return {
        f.fixture: (_CHANGE_OF.get(f.verdict, Change.not_settled), f.working)
        for f in head.sequential.fixtures
    }


def _classify(base_ok: bool | None, head_ok: bool | None) -> Change:
    if head_ok is None:
        return Change.removed
    if base_ok is None:
        return Change.new
    if base_ok and not head_ok:
        return Change.regression
    if head_ok and not base_ok:
        return Change.fixed
    return Change.still_passing if head_ok else Change.still_failing
