"""What the run and merge commands show of a run's outcome: the comment (or the results
document with --json) printed, and the run's files written.

Loaded after the run (the reports' modules, jinja2 among them, cost start-up that no model
call needs to wait for)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from evalward.errors import EXIT_EXTERNAL, EXIT_OK, printable, why_refused
from evalward.past.trend import Trend
from evalward.record.evaluation import Evaluation
from evalward.record.schema import RunInfo
from evalward.record.write import results_document
from evalward.report import files
from evalward.report.markdown import marker_for, render_comment, report_context
from evalward.security import Redactor
from evalward.text import escaping
from evalward.verdict.gate import GateDecision

BESIDE = "`results.json` and `report.html`"
"""Where comment.md, folded or cut to fit, says the whole report is: the files beside it
(a local run has no job summary)."""


@dataclass(frozen=True)
class Output:
    """Where and how a local command shows its outcome: the stream it prints to, the redaction
    every printed or written text goes through, --json, and --output-dir; and what the
    command adds below the comment (`extra`) or to the results document (`extra_json`)."""

    out: TextIO
    redact: Redactor
    as_json: bool = False
    output_dir: str | None = None
    extra: str = ""
    extra_json: dict[str, Any] | None = None
    in_actions: bool = False
    """It prints into a GitHub Actions job's log (`GITHUB_ACTIONS`), whose runner obeys a
    line that starts with `::` and a `##[` anywhere: what an agent wrote must start none."""

    def shown(self, text: str) -> str:
        """`text` redacted, and in a job's log starting no runner command (`log_text`)."""
        text = self.redact(text)
        return escaping.log_text(text) if self.in_actions else text

    def shown_json(self, text: str) -> str:
        """A JSON document redacted, and in a job's log starting no runner command: `::` and
        `##[` stand only inside its strings, and are written there with a `\\u` escape, which
        any JSON reader reads as the same characters."""
        text = self.redact(text)
        if self.in_actions:
            text = text.replace("::", ":\\u003a").replace("##[", "##\\u005b")
        return text


def emit(
    output: Output,
    evaluation: Evaluation,
    decision: GateDecision,
    *,
    base: bool,
    run: RunInfo | None = None,
    trends: Mapping[str, Trend] | None = None,
) -> int:
    """Print the comment (or the results document with --json), write files, return the code.

    The files are what the action writes (comment.md as GitHub would render it); the comment
    printed is for a terminal, so its links and mentions are left intact (escaping.py).
    `run` says how far a run went, and whether a signal cancelled it.
    """
    out, redact = output.out, output.redact
    context = report_context(
        evaluation,
        decision,
        marker=marker_for("local"),
        run=run,
        show_changes=base,
        report_file=bool(output.output_dir),
    )
    lost: list[str] = []

    def lose(path: Path, exc: OSError) -> None:
        lost.append(f"{printable(str(path))} ({why_refused(exc)})")

    if output.output_dir:
        files.write_reports(
            Path(output.output_dir),
            evaluation,
            decision,
            lambda: render_comment(context, whole_report=BESIDE),
            redact,
            files.Shown(run, trends, context.summary),
            lose=lose,
        )
    if output.as_json:
        document = results_document(evaluation, decision, run, context.summary)
        document.update(output.extra_json or {})
        print(output.shown_json(json.dumps(document, indent=2)), file=out)
    else:
        shown = render_comment(
            context, sink=escaping.TERMINAL, whole_report=_whole_report(output.output_dir)
        )
        print(output.shown(shown), file=out)
        if output.extra:
            print(output.shown(output.extra), file=out)
    if lost:
        # the decision is printed whole; a file the disk could not take costs that file
        print(
            redact(
                f"evalward: not written: {'; '.join(lost)}. The decision above stands; free "
                "space (or raise the file size limit) and run again for the files."
            ),
            file=sys.stderr,
        )
        if decision.exit_code == EXIT_OK:
            return EXIT_EXTERNAL
    return decision.exit_code


def _whole_report(output_dir: str | None) -> str:
    """Where a terminal's comment, folded or cut to fit, says the whole report is: no job
    summary, but the run's files, where `--output-dir` wrote them."""
    if not output_dir:
        return "the `results.json` and `report.html` that `--output-dir` writes"
    return f"{BESIDE} in {escaping.code_span(output_dir, limit=200)}"
