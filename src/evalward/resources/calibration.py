"""A JudgeCalibration: runs or pairs a person labelled, which a judge is replayed against
before it may gate (its agreement with them, and a pairwise judge's position consistency)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from evalward.resources.common import Metadata, Model, Rubric
from evalward.resources.pairwise import PairExample


class CalibrationExample(Model):
    trace_ref: str | None = None
    input: dict[str, Any] | str
    candidate_output: str
    human_score: float = Field(ge=0, le=1)
    human_label: str | None = None
    disagreement_reason: str | None = None


class JudgeCalibrationSpec(Model):
    rubric: Rubric
    judge_models: list[str] = Field(min_length=1)
    examples: list[CalibrationExample] = Field(default_factory=list)
    pairs: list[PairExample] = Field(
        default_factory=list,
        description="Labelled pairs for a pairwise judge: its κ and its position consistency.",
    )

    @model_validator(mode="after")
    def _something_labelled(self) -> JudgeCalibrationSpec:
        if not self.examples and not self.pairs:
            raise ValueError(
                "expected at least 1 item in `examples` (scored runs) or `pairs` (labelled "
                "pairs); found none"
            )
        return self


class JudgeCalibration(Model):
    api_version: str
    kind: Literal["JudgeCalibration"]
    metadata: Metadata
    spec: JudgeCalibrationSpec
