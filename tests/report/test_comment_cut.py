"""A comment too long for GitHub is cut where the document stays whole: every `<details>` and
code fence the cut leaves open is closed before the note that says it was cut, so neither the
note nor the bypass after it is folded away, and the verdict leads.

The gate's outcome is made by the run's own stages (`score_eval`, `settle`, `compare`,
`decide`) from a table of runs: hundreds of fixtures with long names under adaptive reps,
whose table of sequential verdicts alone is longer than a comment may be. (The same gate
through the action takes half a minute for its 880 runs; the comment is this renderer's.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from evalward.report.markdown import MAX_COMMENT_CHARS, ReportContext, render_comment
from evalward.text import utf8
from evalward.verdict.gate import BypassRecord, decide
from report.test_counts_add_up import MARKER, evaluated
from report.test_report import RECORD, bypassed

pytestmark = pytest.mark.unit

NAMES = [f"{i:03d}-{'when-the-customer-asks-about-a-late-parcel-' * 5}end" for i in range(220)]
"""Fixture names of 222 characters (a name may have 253)."""
CUT = "\n\n**… cut here to fit GitHub's 65,536-character comment limit.**"


def adaptive_gate() -> dict[str, Any]:
    """The head fails its first rep of every fixture and passes the next two; the base
    passes: each fixture's test settles on noise, and the pooled test blocks."""
    return {
        "adaptive": True,
        "head": dict.fromkeys(NAMES, "FPP"),
        "base": dict.fromkeys(NAMES, "P"),
        "spec": {"targetAgent": "bot", "fixtures": NAMES, "execution": {"reps": {"max": 8}}},
    }


def unbalanced(body: str) -> list[str]:
    """The `<details>` of `body` that open and never close, and a code fence left open."""
    opened: list[str] = []
    fence = ""
    for number, line in enumerate(body.split("\n"), 1):
        if fence:
            fence = "" if line.strip() == fence else fence
        elif opening := re.match(r"`{3,}", line):
            fence = opening[0]
        else:
            for tag in re.finditer(r"<(/?)details\b", line):
                if not tag[1]:
                    opened.append(f"<details> of line {number}")
                elif opened:
                    opened.pop()
    return opened + ([f"a code fence {fence}"] if fence else [])


def test_a_cut_through_the_adaptive_reps_table_closes_it_before_the_note() -> None:
    comparisons, _, summary = evaluated(adaptive_gate())

    context = bypassed(comparisons)

    body = render_comment(context)

    assert len(body) <= MAX_COMMENT_CHARS
    assert "<details><summary>bot-eval: adaptive reps" in body and NAMES[0] in body
    assert NAMES[-1] not in body  # cut inside the table: its last rows are gone
    assert not unbalanced(body), unbalanced(body)
    verdict = body.split("\n")[1]
    assert verdict.startswith("## ⚠️ evalward: Bypassed: bot-eval: pass rate dropped"), verdict
    assert verdict.endswith("— the gate was bypassed by its label"), verdict
    assert body.count(CUT) == 1 and body.rindex("</details>") < body.index(CUT)
    assert body.index(CUT) < body.index("### ⚠️ Bypass") and BypassRecord.parse(body) == RECORD
    without = render_comment(
        ReportContext(comparisons, decide(comparisons, None), marker=MARKER, head_sha="a" * 40)
    )
    assert without.split("\n")[1] == f"## ❌ evalward: {summary.headline}"
    assert not unbalanced(without) and CUT in without
    # the job summary counts bytes: the same cut, measured in UTF-8
    in_bytes = render_comment(context, limit=40_000, measure=utf8.size)
    assert utf8.size(in_bytes) <= 40_000 and not unbalanced(in_bytes) and CUT in in_bytes


def test_a_cut_inside_a_code_fence_of_a_template_closes_the_fence_then_the_details(
    tmp_path: Path,
) -> None:
    template = tmp_path / "long.md.j2"
    template.write_text(
        "## verdict {{ ctx.decision.result.value }}\n"
        "<details><summary>every line</summary>\n\n````text\n"
        '{% for i in range(5000) %}line {{ i }} ``` {{ "x" * 20 }}\n{% endfor %}'
        "````\n\n</details>\n\nthe end\n"
    )
    comparisons, decision, _ = evaluated(adaptive_gate())

    body = render_comment(ReportContext(comparisons, decision, marker=MARKER), template)

    assert len(body) <= MAX_COMMENT_CHARS and body.split("\n")[1] == "## verdict fail"
    assert "the end" not in body and not unbalanced(body), unbalanced(body)
    assert body[: body.index(CUT)].endswith("\n````\n\n</details>")
