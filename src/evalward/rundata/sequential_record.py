"""What an Eval's sequential tests settled, as results.json and the reports keep it: each
fixture's verdict with its numbers (k/n per side, the test's bound), and the pooled test's."""

from __future__ import annotations

from pydantic import BaseModel, Field


class FixtureVerdictRecord(BaseModel):
    fixture: str
    verdict: str
    """regression, still failing, likely regression, improvement, stable, noise, unreliable
    baseline or not enough data."""
    head_passes: int
    head_runs: int
    base_passes: int | None = None
    base_runs: int | None = None
    """None: the base did not run this fixture, as its verdict did not read it."""
    p_bound: float
    """Ville's bound: the chance of head runs this bad from a fixture that works."""
    blocks: bool = False
    flaky_on_main: float | None = None
    """Its base's observed pass rate on the default branch, when that flips without a change."""

    @property
    def numbers(self) -> str:
        base = (
            f"base {self.base_passes}/{self.base_runs}"
            if self.base_runs is not None
            else "base not run"
        )
        return f"head {self.head_passes}/{self.head_runs} · {base} · p ≤ {bound_text(self.p_bound)}"


class SequentialRecord(BaseModel):
    """An Eval decided by adaptive reps (`execution.reps`) and `scoring.gate`."""

    alpha: float
    beta: float
    min_reps: int
    max_reps: int
    fixtures: list[FixtureVerdictRecord] = Field(default_factory=list)
    pooled: str
    pooled_head: str
    """k/n over the Eval's gating head runs."""
    pooled_base: str | None = None
    pooled_p_bound: float
    blocks: bool = False
    why: list[str] = Field(default_factory=list)
    """One line per thing that blocks: the test, the fixtures and the numbers."""

    @property
    def settled(self) -> list[FixtureVerdictRecord]:
        return [f for f in self.fixtures if f.verdict in SETTLED_VERDICTS]


SETTLED_VERDICTS = ("regression", "still failing", "improvement", "stable")


def bound_text(value: float) -> str:
    return f"{value:.2f}" if value >= 0.01 else f"{value:.1e}"
