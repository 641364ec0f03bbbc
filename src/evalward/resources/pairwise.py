"""The pairwise judge's settings: an Eval's (`judge.pairwise`), a fixture's own (`pairwise`),
and the labelled pairs a JudgeCalibration measures it on (`pairs`).

A pairwise judge reads the base's run and the head's run of one fixture and rep, labelled only
A and B, in both orders, and says which it prefers (docs/assertions.md, "The pairwise judge").
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from evalward.resources.common import Model, Rubric

DEFAULT_MARGIN = 0.2
DEFAULT_LENGTH_TOLERANCE = 0.2
DEFAULT_CONSISTENCY_FLOOR = 0.8


class PairwiseView(StrEnum):
    """What of each run the pairwise judge reads."""

    final = "final"
    """The final output only."""
    conversation = "conversation"
    """The messages: the input, the user's turns and the agent's replies, without tool calls."""
    trace = "trace"
    """Every step of the run, tool calls and their results included."""


class PairwiseConfig(Model):
    """An Eval's pairwise judge: every fixture's base and head runs compared, rep by rep."""

    rubric: Rubric | None = Field(
        default=None,
        description="What makes one run better than the other. A fixture's `pairwise.rubric` "
        "overrides it.",
    )
    model: str | None = Field(
        default=None,
        description="The pairwise judge (`provider/model`); unset: the Eval's `judge.model`.",
    )
    view: PairwiseView = Field(
        default=PairwiseView.final,
        description="What of each run the judge reads: `final`, `conversation` or `trace`.",
    )
    length_controlled: bool = Field(
        default=False,
        description="Length-controlled preference: a pair in which the judge prefers the run "
        "longer by more than `lengthTolerance` counts as a tie.",
    )
    length_tolerance: float = Field(
        default=DEFAULT_LENGTH_TOLERANCE,
        ge=0,
        le=10,
        description="With `lengthControlled`: how much longer (a share of the shorter final "
        "output) a preferred run may be and still count.",
    )
    margin: float = Field(
        default=DEFAULT_MARGIN,
        gt=0,
        lt=0.5,
        description="The head is worse when the base is preferred in at least 0.5 + margin "
        "of the pairs\nthat are not ties (the sequential test's alternative, at "
        "`scoring.gate`'s error rates).",
    )
    calibration: str | None = Field(
        default=None,
        description="A JudgeCalibration with `pairs`: without one the pairwise judge cannot "
        "decide, and its Eval is inconclusive (never passing).",
    )
    calibration_floor: float = Field(
        default=0.6,
        ge=-1,
        le=1,
        description="The Cohen's κ on the calibration's pairs the judge must be shown to reach "
        "(its 95 % lower confidence bound) to gate; shown below it (the upper bound), it cannot "
        "decide (its Eval is inconclusive); too few pairs to tell leave it out of the gate.",
    )
    consistency_floor: float = Field(
        default=DEFAULT_CONSISTENCY_FLOOR,
        ge=0,
        le=1,
        description="Below this share of pairs judged alike in both orders (on the "
        "calibration,\nor in the run; by its upper 95 % confidence bound), the judge cannot "
        "decide (its Eval is inconclusive).",
    )


class FixturePairwise(Model):
    """A fixture's pairwise judging: it asks for it, or overrides the Eval's settings."""

    rubric: Rubric | None = Field(default=None, description="This fixture's pairwise rubric.")
    view: PairwiseView | None = Field(
        default=None, description="What of each run the judge reads (the Eval's by default)."
    )
    length_controlled: bool | None = Field(
        default=None, description="Length-controlled preference (the Eval's by default)."
    )


class PairExample(Model):
    """A labelled pair: two answers to one input, and which one a person prefers."""

    input: dict[str, Any] | str
    output_a: str
    output_b: str
    human_preference: Literal["A", "B", "tie"]
