"""The pairwise judge's lines, as the comment, the terminal and report.html say them: its
state, its counts (which add up to its pairs), the test that decided, its length bias, and
its calibration."""

from __future__ import annotations

from evalward.rundata.pairwise_record import PAIR_POOLED_TEST, PairwiseRecord
from evalward.rundata.results import EvalResult
from evalward.rundata.sequential_record import bound_text

ICONS = {
    "advisory": "⚪",
    "unavailable": "⚠️",
    "worse": "❌",
    "not worse": "✅",
    "leaning worse": "🟡",
    "open": "➖",
    "no pairs": "➖",
}


def pairwise_line(name: str, record: PairwiseRecord) -> str:
    """One line per Eval: "❌ bot-eval: worse — head preferred 1 · base preferred 6 · …"."""
    state = record.state()
    said = [
        f"{ICONS.get(state, '')} {name}: {state} — {record.counts_line()}",
        f"{PAIR_POOLED_TEST} at margin {record.margin:g}: p ≤ {bound_text(record.pooled_p_bound)}"
        f" against {bound_text(record.pooled_alpha)}",
        record.length_line() + (" (length-controlled)" if record.length_controlled else ""),
        calibration_text(record),
    ]
    if record.advisory:
        said.append(f"advisory, blocks nothing: {record.advisory_reason}")
    if record.unavailable_reason:
        said.append(f"no verdict: {record.unavailable_reason}")
    return " · ".join(s for s in said if s)


def calibration_text(record: PairwiseRecord) -> str:
    parts = []
    if record.agreement is not None:
        parts.append(f"κ {record.agreement:.2f}")
    if record.calibration_consistency is not None:
        parts.append(f"calibration consistency {100 * record.calibration_consistency:.0f} %")
    if record.run_consistency is not None:
        parts.append(f"both orders agreed on {100 * record.run_consistency:.0f} % of pairs")
    return ", ".join(parts)


def pairwise_lines(results: list[EvalResult]) -> list[str]:
    return [pairwise_line(r.eval, r.pairwise) for r in results if r.pairwise is not None]
