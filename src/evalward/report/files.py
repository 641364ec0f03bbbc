"""Write what a run leaves behind: results.json, comment.md, the job summary, action outputs.

results.json is documented field by field in docs/results-schema.md; bump
RESULTS_SCHEMA_VERSION on any change that is not a pure addition.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalward import __version__
from evalward.evaluation import Evaluation
from evalward.gate import GateDecision
from evalward.results import EvalResult, FixtureResult
from evalward.security import Redactor
from evalward.trend import Trend

RESULTS_SCHEMA_VERSION = 1
UNSHOWABLE = "backslashreplace"
"""How a character UTF-8 cannot hold is written: a file name's byte that is not UTF-8 (a
surrogate, `os.fsdecode`) that reached a text unescaped becomes `\\udcNN`, never a crash."""

Redact = Callable[[str], str]


@dataclass(frozen=True)
class RunInfo:
    """Where and why the run happened; empty for a local CLI run."""

    event: str = ""
    repository: str = ""
    pull_request: int | None = None
    head_sha: str = ""
    base_sha: str = ""
    run_url: str = ""
    runs_planned: int = 0
    runs_done: int = 0
    cancelled: bool = False


def results_document(
    evaluation: Evaluation, decision: GateDecision, run: RunInfo | None = None
) -> dict[str, Any]:
    """The versioned, machine-readable record of a run, with full detail (held-out included):
    the text results.json holds, parsed."""
    document: dict[str, Any] = json.loads("".join(results_chunks(evaluation, decision, run)))
    return document


def results_chunks(
    evaluation: Evaluation, decision: GateDecision, run: RunInfo | None = None
) -> Iterator[str]:
    """results.json in pieces: each Eval's fixture outcomes and each fixture run (with its trace
    read back from the spool) one at a time, one a line, so that 20,000 of them never exist
    whole in memory (bench/p4_footprint.py)."""

    def outcomes(result: EvalResult) -> Iterator[list[str]]:
        return ([json.dumps(o.model_dump(mode="json"))] for o in result.fixture_results)

    evals = (
        _object_chunks(
            e.model_dump(mode="json", exclude={"fixtures", "fixture_results"}),
            {"fixture_results": outcomes(e)},
            pad="    ",
            indent=None,
        )
        for e in evaluation.evals
    )
    fixtures = ([json.dumps(_fixture_record(evaluation, f))] for f in evaluation.fixtures)
    header = _results_header(evaluation, decision, run)
    yield from _object_chunks(header, {"evals": evals, "fixtures": fixtures}, pad="", indent=2)
    yield "\n"


def _object_chunks(
    document: dict[str, Any],
    arrays: dict[str, Iterable[Iterable[str]]],
    *,
    pad: str,
    indent: int | None,
) -> Iterator[str]:
    """`document` as JSON text, followed by the arrays named in `arrays` as its last keys, their
    items (each given in pieces) written one a line as they come."""
    text = json.dumps({**document, **dict.fromkeys(arrays)}, indent=indent)
    for key in arrays:
        # Keys are the document's own, and a quote inside a string is escaped: the first
        # `"key": null` is the placeholder.
        before, text = text.split(f'"{key}": null', 1)
        yield before + f'"{key}": ['
        empty = True
        for item in arrays[key]:
            yield ("\n" if empty else ",\n") + pad + "    "
            yield from item
            empty = False
        yield "]" if empty else "\n" + pad + "  ]"
    yield text


def _results_header(
    evaluation: Evaluation, decision: GateDecision, run: RunInfo | None
) -> dict[str, Any]:
    bypass = decision.bypass or decision.refusal
    return {
        "schemaVersion": RESULTS_SCHEMA_VERSION,
        "evalward": __version__,
        "result": decision.result.value,
        "reason": decision.reason,
        "unavailableEvals": decision.unavailable_evals,
        "run": asdict(run or RunInfo()),
        "bypass": None
        if bypass is None
        else {"outcome": "honoured" if decision.bypass else "refused", **asdict(bypass)},
        "changedAgents": evaluation.changes.changed_agents,
        "affectedEvals": evaluation.changes.affected_evals,
        "gateChanges": evaluation.changes.gate_changes,
        "notRun": evaluation.plan.not_run,
        "pending": evaluation.plan.pending,
        "notes": evaluation.notes,
        "cacheHits": evaluation.cache_hits,
        "skippedRuns": [
            {"eval": r.eval, "fixture": r.fixture, "side": r.side.value, "rep": r.rep}
            for r in evaluation.skipped
        ],
    }


def _fixture_record(evaluation: Evaluation, result: FixtureResult) -> dict[str, Any]:
    private = (result.eval, result.fixture) in evaluation.private
    return {**evaluation.record_of(result), "visibility": "private" if private else "public"}


def write_text(path: Path, text: str, redact: Redact) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(redact(text), encoding="utf-8", errors=UNSHOWABLE)


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


def write_results(
    output_dir: Path,
    evaluation: Evaluation,
    decision: GateDecision,
    redact: Redactor,
    run: RunInfo | None = None,
) -> Path:
    path = output_dir / "results.json"
    write_chunks(path, results_chunks(evaluation, decision, run), redact)
    return path


def write_reports(
    output_dir: Path,
    evaluation: Evaluation,
    decision: GateDecision,
    comment: Callable[[], str],
    redact: Redactor,
    run: RunInfo | None = None,
    trends: Mapping[str, Trend] | None = None,
) -> tuple[Path, str]:
    """Every file of a run in `output_dir` — results.json first, so it is on disk whatever
    fails later (the comment is rendered only then) — then junit.xml, report.html and
    comment.md. Returns results.json's path and the comment as written. `trends` are the
    Evals' earlier scores for report.html's trend charts (`evalward.trend`)."""
    # lazy: report.html's renderer and the XML library cost a command that writes no files
    # (`evalward run` without --output-dir) about 5 ms of start-up
    from evalward.report.html import html_chunks
    from evalward.report.junit import junit_xml

    run = run or RunInfo()
    results = write_results(output_dir, evaluation, decision, redact, run)
    write_text(output_dir / "junit.xml", junit_xml(evaluation.evals, evaluation.private), redact)
    html = html_chunks(
        result=decision.result.value,
        reason=decision.reason,
        evals=evaluation.evals,
        fixtures=evaluation.fixtures,
        private=evaluation.private,
        comparisons=evaluation.comparisons,
        head_sha=run.head_sha,
        base_sha=run.base_sha,
        run_url=run.run_url,
        trace_of=evaluation.trace_of,
        trends=trends,
        redact=redact,
    )
    write_chunks(output_dir / "report.html", html, redact)
    body = redact(comment())
    write_text(output_dir / "comment.md", body, redact)
    return results, body


def append_audit(output_dir: Path, record: dict[str, Any], redact: Redact) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    with (output_dir / "audit.jsonl").open("a", encoding="utf-8", errors=UNSHOWABLE) as handle:
        handle.write(redact(json.dumps(record, sort_keys=False)) + "\n")


def append_summary(path: str | None, markdown: str, redact: Redact) -> None:
    if not path:
        return
    with Path(path).open("a", encoding="utf-8", errors=UNSHOWABLE) as handle:
        handle.write(redact(markdown) + "\n")


def write_outputs(path: str | None, outputs: dict[str, str], redact: Redact) -> None:
    """GITHUB_OUTPUT in the heredoc form, with a random delimiter no value can contain."""
    if not path:
        return
    with Path(path).open("a", encoding="utf-8", errors=UNSHOWABLE) as handle:
        for name, value in outputs.items():
            delimiter = f"EOF_{secrets.token_hex(8)}"
            handle.write(f"{name}<<{delimiter}\n{redact(value)}\n{delimiter}\n")
