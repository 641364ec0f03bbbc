"""How an Eval gates: its regression rule, its error rates and its adaptive reps.

These live in the Eval (or evalward.yaml's `defaults.eval`), so the command line, the action
and a rerun read the same settings from the side that gates; an action input may only tighten
them. docs/github.md ("Noise") says what each setting costs and catches.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from evalward.resources.common import Model


class RegressionPolicy(StrEnum):
    """Whether regressions gate on their own, besides thresholds."""

    none = "none"
    significant = "significant"
    any = "any"

    def tightest(self, other: RegressionPolicy) -> RegressionPolicy:
        """The stricter of two policies (members are declared loosest first): an action input
        may tighten an Eval's, not loosen."""
        return max(self, other, key=list(RegressionPolicy).index)


class FlakyOnMain(StrEnum):
    """What a fixture whose base flips on the default branch without a change gets."""

    more_reps = "moreReps"
    """It runs its maximum reps on the head, and blocks like any other."""
    not_alone = "doesNotBlockAlone"
    """It runs and is shown, and blocks only when something else in the Eval blocks too."""


class BaseRuns(StrEnum):
    """Which base runs a fixed-rep Eval spends (an adaptive Eval's tests choose their own)."""

    where_read = "whereRead"
    """Every base rep when the decision reads the base (`failOnRegression` `any` or
    `significant`, the Eval's or the action's); otherwise only those of fixtures the head
    did not pass, so the comparison tells a regression from a fixture already failing."""
    always = "always"
    """Every base rep: the comparison also shows fixes and score deltas of fixtures the head
    passes, at the cost of a whole second side."""


class RepRange(Model):
    min: int = Field(
        default=1,
        ge=1,
        le=100,
        description=(
            "Reps every fixture runs on the head first. At the default rates one pass "
            "settles a\nfixture working, so a fixture that passes costs one run."
        ),
    )
    max: int = Field(default=8, ge=1, le=100)

    @model_validator(mode="after")
    def _ordered(self) -> RepRange:
        if self.max < self.min:
            raise ValueError(f"reps.max ({self.max}) is below reps.min ({self.min})")
        return self


class GatePolicy(Model):
    fail_on_regression: RegressionPolicy = Field(
        default=RegressionPolicy.none,
        description=(
            "With fixed reps: `significant` blocks a fixture whose drop from base is "
            "significant\n(McNemar's exact test at 5 %), `any` any fixture that passed on "
            "base and fails on head."
        ),
    )
    false_block_rate: float = Field(
        default=0.02,
        gt=0,
        lt=0.5,
        description=(
            "With adaptive reps: the most often the Eval may block a pull request that "
            "changed nothing\n(the sequential test's alpha, shared by its fixtures)."
        ),
    )
    miss_rate: float = Field(
        default=0.1,
        gt=0,
        lt=0.5,
        description=(
            "With adaptive reps: how often a broken fixture may be called working, and a "
            "drop of\n`drop` over the Eval missed (beta)."
        ),
    )
    good_pass_rate: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description=(
            "With adaptive reps: a fixture that passes at least this often works (the null "
            "hypothesis)."
        ),
    )
    broken_pass_rate: float = Field(
        default=0.05,
        ge=0,
        lt=1,
        description=(
            "With adaptive reps: a fixture that passes at most this often is broken. At "
            "0.05 one pass\nsettles a fixture working (0.05 / 0.9 is below missRate)."
        ),
    )
    drop: float = Field(
        default=0.2,
        gt=0,
        le=1,
        description=(
            "With adaptive reps: the drop over the whole Eval its pooled test looks for: "
            "every fixture\nthis much below goodPassRate."
        ),
    )
    flaky_on_main: FlakyOnMain = Field(
        default=FlakyOnMain.not_alone,
        description=(
            "With adaptive reps: a fixture whose base flips between runs of the default "
            "branch:\n`doesNotBlockAlone` or `moreReps`."
        ),
    )

    base_runs: BaseRuns = Field(
        default=BaseRuns.always,
        description=(
            "With fixed reps: `always` runs every base rep (fixes and deltas are shown); "
            "`whereRead` runs\nthe base only where the decision reads it (every rep under "
            "`failOnRegression: any` or\n`significant`, else the fixtures the head did not "
            "pass)."
        ),
    )

    @model_validator(mode="after")
    def _ordered(self) -> GatePolicy:
        if self.broken_pass_rate >= self.good_pass_rate:
            raise ValueError(
                f"brokenPassRate ({self.broken_pass_rate}) must be below goodPassRate "
                f"({self.good_pass_rate})"
            )
        return self
