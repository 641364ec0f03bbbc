"""The pairwise judge's lines, as the comment, the terminal and report.html say them: its
state, its counts (which add up to its pairs), the test that decided, its length bias, and
its calibration."""

from __future__ import annotations

from typing import Any

from evalward.rundata.pairwise_record import PAIR_POOLED_TEST, PairRecord, PairwiseRecord
from evalward.rundata.results import EvalResult
from evalward.text.numbers import bound_text
from evalward.verdict.compare import EvalComparison

ICONS = {
    "inconclusive": "❔",
    "unavailable": "⚠️",
    "worse": "❌",
    "not worse": "✅",
    "leaning worse": "🟡",
    "open": "➖",
    "no pairs": "➖",
    "left out": "➖",
}


def pairwise_line(name: str, record: PairwiseRecord) -> str:
    """One line per Eval: "❌ bot-eval: worse — head preferred 1 · base preferred 6 · …"."""
    state = record.state()
    named = f"{ICONS.get(state, '')} {name}:"
    if record.left_out_reason:  # it was asked no pair: why, and nothing of counts or tests
        said = [f"{named} left out of the gate — {record.left_out_reason}"]
    elif not record.pairs:  # its counts, tests and length bias would be of nothing
        said = [
            f"{named} {state} — no fixture ran on both the base and the head, so it compared none"
        ]
    else:
        said = [
            f"{named} {state} — {record.pooled_counts.text()}",
            f"{PAIR_POOLED_TEST} at margin {record.margin:g}: "
            f"p ≤ {bound_text(record.pooled_p_bound, beside=record.pooled_alpha)} against "
            f"{bound_text(record.pooled_alpha)}",
            record.length_line() + (" (length-controlled)" if record.length_controlled else ""),
        ]
    said.append(calibration_text(record))
    if record.inconclusive_reason and not record.left_out_reason:
        said.append(f"the judge cannot decide: {record.inconclusive_reason}")
    if record.unavailable_reason and not record.left_out_reason:
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


def tests_shown(comparisons: list[EvalComparison]) -> dict[str, Any]:
    """What report.html shows of each Eval's tests: its sequential tests (adaptive reps) and
    its pairwise judge, with the pair it shows of each fixture."""
    return {
        "sequential": [(c.name, c.head.sequential) for c in comparisons if c.head.sequential],
        "pairwise": [
            (
                c.name,
                c.head.pairwise,
                pairwise_line(c.name, c.head.pairwise),
                shown_pairs(c.head.pairwise),
            )
            for c in comparisons
            if c.head.pairwise is not None
        ],
    }


def shown_pairs(record: PairwiseRecord) -> list[PairRecord]:
    """Of each fixture, the pair shown side by side: the first the base won, else the first."""
    each = (record.pairs_of(verdict.fixture) for verdict in record.fixtures)
    return [next((p for p in pairs if p.preferred == "base"), pairs[0]) for pairs in each if pairs]
