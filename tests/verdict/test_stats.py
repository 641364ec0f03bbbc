"""McNemar's exact test against values computed by hand."""

from __future__ import annotations

import pytest

from evalward.verdict.stats import mcnemar_drop

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("worse", "better", "p"),
    [
        (0, 0, 1.0),
        (1, 0, 0.5),  # one discordant pair: P(X >= 1 | n=1) = 1/2
        (3, 0, 0.125),  # (1/2)^3
        (5, 0, 1 / 32),
        (4, 1, 6 / 32),  # (C(5,4) + C(5,5)) / 2^5
        (0, 4, 1.0),  # every discordant pair improved
        (8, 2, 56 / 1024),  # (45 + 10 + 1) / 2^10
    ],
)
def test_exact_one_sided_p_value(worse: int, better: int, p: float) -> None:
    assert mcnemar_drop(worse, better).p_value == pytest.approx(p)
