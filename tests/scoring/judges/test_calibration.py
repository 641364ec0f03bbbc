"""Cohen's κ and calibration phases against values computed by hand."""

from __future__ import annotations

import pytest

from evalward.rundata.results import CalibrationPhase, ModelAgreement
from evalward.scoring.judges.calibration import cohen_kappa, summarise

pytestmark = pytest.mark.unit

T, F = True, False


@pytest.mark.parametrize(
    ("human", "judge", "kappa"),
    [
        # perfect agreement on a mixed set
        ([T, F, T, F], [T, F, T, F], 1.0),
        # p_o = 3/4; p_h = 1/2, p_j = 3/4 -> p_e = 3/8 + 1/8 = 1/2 -> κ = 0.5
        ([T, F, T, F], [T, F, T, T], 0.5),
        # p_o = 0; p_e = 1/2 -> κ = -1 (systematic disagreement)
        ([T, F, T, F], [F, T, F, T], -1.0),
        # p_o = 7/10; p_h = 6/10, p_j = 5/10 -> p_e = 0.3 + 0.2 = 0.5 -> κ = 0.4
        ([T, T, T, T, T, T, F, F, F, F], [T, T, T, T, F, F, T, F, F, F], 0.4),
        # one side constant, the other not: p_e = p_o -> κ = 0
        ([T, T, T, T], [T, F, T, T], 0.0),
        # both constant but opposite: p_o = 0, p_e = 0 -> κ = 0
        ([T, T], [F, F], 0.0),
    ],
)
def test_kappa_by_hand(human: list[bool], judge: list[bool], kappa: float) -> None:
    assert cohen_kappa(human, judge) == pytest.approx(kappa)


def test_kappa_is_undefined_when_everything_is_one_class() -> None:
    assert cohen_kappa([T, T, T], [T, T, T]) is None
    assert cohen_kappa([F, F], [F, F]) is None
    assert cohen_kappa([], []) is None


def test_kappa_needs_the_same_items() -> None:
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa([T], [T, F])


def agreement(model: str, kappa: float | None, scored: int) -> ModelAgreement:
    return ModelAgreement(model=model, kappa=kappa, scored=scored, errors=0, agreed=0)


@pytest.mark.parametrize(
    ("models", "phase", "shown"),
    [
        ([agreement("a", 0.6, 4), agreement("b", 0.2, 4)], CalibrationPhase.calibrated, "0.60"),
        ([agreement("a", 0.59, 4)], CalibrationPhase.stale, "0.59"),
        ([agreement("a", None, 4)], CalibrationPhase.stale, None),
        ([agreement("a", None, 0), agreement("b", None, 0)], CalibrationPhase.failed, None),
        # 0.6 computed as a float ratio still counts as 0.6
        ([agreement("a", 0.6 - 1e-12, 4)], CalibrationPhase.calibrated, "0.60"),
    ],
)
def test_phase_and_agreement(
    models: list[ModelAgreement], phase: CalibrationPhase, shown: str | None
) -> None:
    result = summarise("cal", models)
    assert result.phase is phase
    assert result.agreement == shown
    assert result.judges_evaluated == [m.model for m in models if m.scored]
