"""Write what a run leaves behind: results.json (the run record, `record.write`),
junit.xml, report.html, comment.md, the job summary and the action's outputs."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from evalward.past.trend import Trend
from evalward.record.evaluation import Evaluation
from evalward.record.schema import RunInfo
from evalward.record.summary import RunSummary
from evalward.record.write import results_chunks, run_summary
from evalward.security import Redact, Redactor
from evalward.text.escaping import UNSHOWABLE
from evalward.verdict.gate import GateDecision


def unwritable(folder: Path) -> str | None:
    """Why a run could not write its files in `folder` (None: it can), found by writing a
    file in it or, where it is missing, in the nearest folder on the way that exists (none is
    made for a run then refused): a folder under /proc, one the user may not write, a
    read-only mount. A run's results are never lost to a folder that cannot take them."""
    place = folder
    while not place.is_dir() and place != place.parent:
        place = place.parent
    try:
        with tempfile.NamedTemporaryFile(dir=place, prefix=".evalward-probe-"):
            pass
    except OSError as exc:
        return f"evalward cannot write in {place} ({exc.strerror or exc})"
    return None


def write_text(path: Path, text: str, redact: Redact) -> None:
    """Write `text` redacted, beside and renamed as `write_chunks` does: a write the disk
    cuts short (full, a file size limit) leaves no half file a later step would read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(redact(text), encoding="utf-8", errors=UNSHOWABLE)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def write_chunks(path: Path, chunks: Iterable[str], redact: Redactor) -> None:
    """Write text as it is produced (a page of 20,000 traces), redacted as a whole would be.

    Written beside and renamed: a rendering that fails part-way leaves no half file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    try:
        with partial.open("w", encoding="utf-8", errors=UNSHOWABLE) as handle:
            for piece in redact.stream(chunks):
                handle.write(piece)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


RUN_FILES = ("results.json", "junit.xml", "report.html", "comment.md")
"""The files a run writes in its output folder, in the order `write_reports` writes them."""


def not_a_folder(folder: Path) -> Path | None:
    """The first of `folder` and the folders on the way to it that exists and is no folder
    (a file an earlier step left where the output folder goes), None where there is none: the
    run's files could not be written there, so it is refused before the run."""
    for place in (folder, *folder.parents):
        if place.is_dir():
            return None
        if place.exists() or place.is_symlink():
            return place
    return None


def not_a_file(folder: Path, names: Iterable[str] = RUN_FILES) -> Path | None:
    """The first place in `folder` where a run writes one of `names` and something that is
    not a file stands (a folder named results.json), None where there is none: the run's
    results would be lost there once computed."""
    for name in names:
        place = folder / name
        if (place.exists() or place.is_symlink()) and not place.is_file():
            return place
    return None


@dataclass(frozen=True)
class Shown:
    """What the reports show beside the evaluation: how far the run went and where (`run`),
    the Evals' earlier scores for report.html's trend charts (`trends`,
    `evalward.past.trend`), and the run in numbers the comment shows too (`summary`,
    `record.write.run_summary`)."""

    run: RunInfo | None = None
    trends: Mapping[str, Trend] | None = None
    summary: RunSummary | None = None


Lose = Callable[[Path, OSError], None]
"""Told a run's file that could not be written (a full disk, a file size limit, an I/O
error) and why: the file is lost, and the run's other files and its decision are not."""


def write_reports(
    output_dir: Path,
    evaluation: Evaluation,
    decision: GateDecision,
    comment: Callable[[], str],
    redact: Redactor,
    shown: Shown = Shown(),
    *,
    lose: Lose | None = None,
) -> tuple[Path, str]:
    """Every file of a run in `output_dir` — results.json first, so it is on disk whatever
    fails later (the comment is rendered only then) — then junit.xml, report.html and
    comment.md. Returns results.json's path and the comment as written. With `lose`, a file
    that cannot be written costs that file alone (`_write_or_lose`); without, its error is
    raised."""
    # lazy: report.html's renderer and the XML library cost a command that writes no files
    # (`evalward run` without --output-dir) about 5 ms of start-up
    from evalward.report.html import Page, html_chunks
    from evalward.report.junit import junit_chunks

    run = shown.run or RunInfo()
    summary = shown.summary or run_summary(evaluation, decision)
    results = output_dir / "results.json"
    chunks = results_chunks(evaluation, decision, run, summary)
    _write_or_lose(results, chunks, redact, lose)
    junit = junit_chunks(evaluation.evals, evaluation.private)
    _write_or_lose(output_dir / "junit.xml", junit, redact, lose)
    page = Page(
        result=decision.result.value,
        reason=decision.reason,
        evals=evaluation.evals,
        fixtures=evaluation.fixtures,
        private=evaluation.private,
        comparisons=evaluation.comparisons,
        summary=summary,
        run=run,
        attribution=evaluation.attribution,
        failing=frozenset(decision.failing_evals),
    )
    html = html_chunks(page, trace_of=evaluation.trace_of, trends=shown.trends, redact=redact)
    _write_or_lose(output_dir / "report.html", html, redact, lose)
    body = redact(comment())
    _write_or_lose(output_dir / "comment.md", [body], redact, lose)
    return results, body


def _write_or_lose(path: Path, chunks: Iterable[str], redact: Redactor, lose: Lose | None) -> None:
    """Write one file of a run (`write_chunks`). Where it cannot be written and `lose` is
    given, neither a part of it nor an earlier run's file of that name is left to be taken
    for this run's, and `lose` is told; without `lose`, the error is raised."""
    try:
        write_chunks(path, chunks, redact)
    except OSError as exc:
        if lose is None:
            raise
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        lose(path, exc)
