"""Base against head: per-Eval score deltas and per-fixture regressions, fixes, new, removed."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from evalward.results import EvalResult, FixtureResult


class Change(StrEnum):
    regression = "regression"
    fixed = "fixed"
    still_failing = "still failing"
    still_passing = "still passing"
    new = "new"
    removed = "removed"


@dataclass(frozen=True)
class FixtureComparison:
    fixture: str
    change: Change
    base: list[FixtureResult]
    head: list[FixtureResult]


@dataclass
class EvalComparison:
    head: EvalResult
    base: EvalResult | None
    fixtures: list[FixtureComparison] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.head.eval

    @property
    def delta(self) -> float | None:
        return None if self.base is None else self.head.score - self.base.score

    def of(self, change: Change) -> list[FixtureComparison]:
        return [f for f in self.fixtures if f.change is change]


def compare(results: list[EvalResult]) -> list[EvalComparison]:
    """Pair each head EvalResult with its base counterpart (if the base ran it)."""
    base = {r.eval: r for r in results if r.side == "base"}
    return [_compare_one(r, base.get(r.eval)) for r in results if r.side == "head"]


def _compare_one(head: EvalResult, base: EvalResult | None) -> EvalComparison:
    comparison = EvalComparison(head=head, base=base)
    head_runs = _by_fixture(head.fixtures)
    base_runs = _by_fixture(base.fixtures) if base is not None else {}
    for name in sorted(set(head_runs) | set(base_runs)):
        now = head_runs.get(name, [])
        before = base_runs.get(name, [])
        comparison.fixtures.append(
            FixtureComparison(name, _classify(before, now, base), before, now)
        )
    return comparison


def _classify(
    before: list[FixtureResult], now: list[FixtureResult], base: EvalResult | None
) -> Change:
    if not now:
        return Change.removed
    head_ok = all(r.passed for r in now)
    if base is None or not before:
        return Change.new
    base_ok = all(r.passed for r in before)
    if base_ok and not head_ok:
        return Change.regression
    if head_ok and not base_ok:
        return Change.fixed
    return Change.still_passing if head_ok else Change.still_failing


def _by_fixture(results: list[FixtureResult]) -> dict[str, list[FixtureResult]]:
    grouped: dict[str, list[FixtureResult]] = {}
    for result in results:
        grouped.setdefault(result.fixture, []).append(result)
    return grouped
