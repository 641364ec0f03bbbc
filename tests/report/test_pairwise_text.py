"""The pairwise judge's line as the comment, the terminal and report.html say it
(`report/pairwise_text.py`): its state with its icon, why it cannot decide or has no verdict,
and its calibration; a judge that compared nothing says so instead of counting nothing."""

from __future__ import annotations

import pytest

from evalward.report.pairwise_text import calibration_text, pairwise_line, shown_pairs
from evalward.rundata.pairwise_record import PairwiseRecord

pytestmark = pytest.mark.unit


def _record(**fields: object) -> PairwiseRecord:
    rates = {"alpha": 0.05, "beta": 0.2, "fixture_alpha": 0.05, "pooled_alpha": 0.05}
    return PairwiseRecord.model_validate(
        {"model": "openai/judge", "margin": 0.2, **rates, **fields}
    )


def test_a_judge_below_its_calibration_floor_says_it_cannot_decide() -> None:
    record = _record(
        agreement=0.41,
        calibration_consistency=0.9,
        inconclusive_reason="its calibration κ 0.41 is below the floor 0.60",
    )
    assert record.state() == "inconclusive"
    assert pairwise_line("bot-eval", record) == (
        "❔ bot-eval: inconclusive — no fixture ran on both the base and the head, so it "
        "compared none · κ 0.41, calibration consistency 90 % · the judge cannot decide: its "
        "calibration κ 0.41 is below the floor 0.60"
    )
    assert shown_pairs(record) == []


def test_a_judge_without_a_verdict_says_why() -> None:
    record = _record(unavailable_reason="the judge model was unreachable", outage=True)
    assert pairwise_line("bot-eval", record).startswith("⚠️ bot-eval: unavailable — ")
    assert pairwise_line("bot-eval", record).endswith(
        " · no verdict: the judge model was unreachable"
    )


def test_the_calibration_names_only_what_was_measured() -> None:
    assert calibration_text(_record()) == ""
    assert calibration_text(_record(run_consistency=0.75)) == (
        "both orders agreed on 75 % of pairs"
    )


def test_a_pooled_p_just_above_its_level_is_never_written_at_it() -> None:
    record = _record(
        pairs=[{"fixture": "f1", "rep": 0, "preferred": "base"}],
        pooled="leaning worse",
        pooled_counts={"base": 1, "pairs": 1},
        pooled_p_bound=0.00504,
        pooled_alpha=0.005,
    )
    said = pairwise_line("bot-eval", record)
    assert "pooled preference test at margin 0.2: p ≤ 5.04e-03 against 5.0e-03 · " in said
    below = _record(pairs=record.pairs, pooled_p_bound=0.0049, pooled_alpha=0.005)
    assert "p ≤ 4.9e-03 against 5.0e-03" in pairwise_line("bot-eval", below)
