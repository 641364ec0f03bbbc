"""What an Eval's sequential tests settled, as results.json and the reports keep it: each
fixture's verdict with its numbers (k/n per side, the test's bound), and the pooled test's;
and the words every surface says them in, so the headline, the "why" lines and the reason
name the same test with the same numbers."""

from __future__ import annotations

from pydantic import Field

from evalward.rundata.record_model import RecordModel
from evalward.text.counts import first_few
from evalward.text.numbers import bound_text

BLOCKING_VERDICTS = ("regression", "still failing", "failing")
WORKING_VERDICTS = ("improvement", "stable", "noise")
SETTLED_VERDICTS = BLOCKING_VERDICTS + WORKING_VERDICTS
"""A test that crossed one of its lines; every other verdict (likely regression, unreliable
baseline, not settled, not enough data) is not settled."""
FIXTURE_TEST = "per-fixture sequential test"
POOLED_TEST = "pooled sequential test"


class FixtureVerdictRecord(RecordModel):
    fixture: str
    verdict: str
    """regression, still failing, failing, improvement, stable, noise (settled); likely
    regression, unreliable baseline, not settled, not enough data (not settled)."""
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
    base_not_judged: int = 0
    """Its base runs whose judge assertions were not asked, the pairwise judge having settled
    it (`AssertionResult.deferred`): they ran, and are not in `base_runs`."""

    @property
    def base_text(self) -> str:
        """ "1/2"; "not judged" (the base ran, its judge was not asked); "not run"."""
        if self.base_runs is not None:
            return f"{self.base_passes}/{self.base_runs}"
        return "not judged" if self.base_not_judged else "not run"

    @property
    def settled(self) -> bool:
        return self.verdict in SETTLED_VERDICTS

    @property
    def working(self) -> bool:
        """Settled working on head: what the counts call passing."""
        return self.verdict in WORKING_VERDICTS

    @property
    def broken(self) -> bool:
        """Settled broken on head: what the counts call failing."""
        return self.verdict in BLOCKING_VERDICTS

    @property
    def numbers(self) -> str:
        head = f"head {self.head_passes}/{self.head_runs}"
        return f"{head} · base {self.base_text} · p ≤ {bound_text(self.p_bound)}"


class SequentialRecord(RecordModel):
    """An Eval decided by adaptive reps (`execution.reps`) and `scoring.gate`."""

    alpha: float
    """`falseBlockRate`: shared by the pooled test (half) and the fixtures' (the other half)."""
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
    drivers: list[str] = Field(default_factory=list)
    """The fixtures in the pooled test that failed a head rep: what drove it."""
    fixture_alpha: float | None = None
    """Each fixture's test's share of alpha: alpha / 2 / the fixtures that gate."""
    pooled_alpha: float | None = None
    """The pooled test's share of alpha: alpha / 2."""

    @property
    def settled(self) -> list[FixtureVerdictRecord]:
        return [f for f in self.fixtures if f.settled]

    @property
    def pooled_blocks(self) -> bool:
        return self.pooled in BLOCKING_VERDICTS

    def of(self, fixture: str) -> FixtureVerdictRecord | None:
        return next((f for f in self.fixtures if f.fixture == fixture), None)

    def decided_by(self) -> str:
        """What blocked, in a few words for a headline: the test and its numbers
        ("f3 regression (per-fixture sequential test: head 0/4, base 1/1, p ≤ 2.4e-04)";
        "pass rate dropped (pooled sequential test: …)"); "" when nothing blocks."""
        blocking = [f for f in self.fixtures if f.blocks]
        said = []
        if len(blocking) == 1:
            (only,) = blocking
            said.append(
                f"{only.fixture} {only.verdict} ({FIXTURE_TEST}: "
                f"{only.numbers.replace(' · ', ', ')})"
            )
        elif blocking:
            named = first_few([f"{f.fixture} {f.verdict}" for f in blocking], 3)
            said.append(f"{len(blocking)} fixtures settled failing ({FIXTURE_TEST}s: {named})")
        if self.pooled_blocks:
            base = f", base {self.pooled_base}" if self.pooled_base else ""
            said.append(
                f"pass rate {_POOLED_WORDS[self.pooled]} ({POOLED_TEST}: head "
                f"{self.pooled_head}{base}, p ≤ {bound_text(self.pooled_p_bound)})"
            )
        return "; ".join(said)


_POOLED_WORDS = {"regression": "dropped", "still failing": "low, as on base", "failing": "low"}
