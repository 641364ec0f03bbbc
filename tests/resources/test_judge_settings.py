"""A JudgeCalibration (`resources/calibration.py`) and a pairwise judge's settings
(`resources/pairwise.py`) as written in YAML: what a calibration must label, the bounds of a
pairwise judge's margin and floors, and what is left to their defaults."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalward.resources.calibration import JudgeCalibration
from evalward.resources.common import API_VERSION
from evalward.resources.pairwise import (
    DEFAULT_CONSISTENCY_FLOOR,
    DEFAULT_MARGIN,
    PairwiseConfig,
    PairwiseView,
)

pytestmark = pytest.mark.unit


def _calibration(**spec: object) -> dict[str, object]:
    return {
        "apiVersion": API_VERSION,
        "kind": "JudgeCalibration",
        "metadata": {"name": "tone"},
        "spec": {"rubric": "Polite", "judgeModels": ["openai/gpt-4.1-mini"], **spec},
    }


def test_a_calibration_of_scored_runs_or_of_pairs_loads() -> None:
    runs = JudgeCalibration.model_validate(
        _calibration(examples=[{"input": "hi", "candidateOutput": "Hello!", "humanScore": 1}])
    )
    assert runs.spec.examples[0].human_score == 1.0
    pairs = JudgeCalibration.model_validate(
        _calibration(
            pairs=[{"input": "hi", "outputA": "Hey", "outputB": "Go away", "humanPreference": "A"}]
        )
    )
    assert pairs.spec.pairs[0].output_b == "Go away"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, r"expected at least 1 item in `examples` \(scored runs\) or `pairs`"),
        (
            {"examples": [{"input": "x", "candidateOutput": "y", "humanScore": 1.5}]},
            "less than or equal to 1",
        ),
        (
            {
                "judgeModels": [],
                "pairs": [{"input": "x", "outputA": "a", "outputB": "b", "humanPreference": "A"}],
            },
            "at least 1 item",
        ),
        (
            {"pairs": [{"input": "x", "outputA": "a", "outputB": "b", "humanPreference": "C"}]},
            "'A', 'B' or 'tie'",
        ),
    ],
)
def test_a_calibration_that_labels_nothing_usable_is_refused(
    spec: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        JudgeCalibration.model_validate(_calibration(**spec))


def test_a_pairwise_judge_left_to_its_defaults() -> None:
    config = PairwiseConfig.model_validate({})
    assert (config.view, config.margin, config.consistency_floor) == (
        PairwiseView.final,
        DEFAULT_MARGIN,
        DEFAULT_CONSISTENCY_FLOOR,
    )
    assert config.calibration is None  # then it cannot decide (docs/assertions.md)


@pytest.mark.parametrize(
    "written",
    [
        {"margin": 0},
        {"margin": 0.5},
        {"calibrationFloor": 1.5},
        {"consistencyFloor": -0.1},
        {"lengthTolerance": 11},
        {"view": "everything"},
    ],
)
def test_a_pairwise_setting_out_of_its_bounds_is_refused(written: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        PairwiseConfig.model_validate(written)
