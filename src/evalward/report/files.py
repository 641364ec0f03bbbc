"""Write what a run leaves behind: results.json, comment.md, the job summary, action outputs.

results.json is documented field by field in docs/results-schema.md; bump
RESULTS_SCHEMA_VERSION on any change that is not a pure addition.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalward import __version__
from evalward.gate import GateDecision
from evalward.pipeline import Evaluation
from evalward.results import FixtureResult

RESULTS_SCHEMA_VERSION = 1

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
    """The versioned, machine-readable record of a run, with full detail (held-out included)."""
    return {
        **_results_header(evaluation, decision, run),
        "fixtures": [_fixture_record(evaluation, f) for f in evaluation.fixtures],
    }


def _results_header(
    evaluation: Evaluation, decision: GateDecision, run: RunInfo | None
) -> dict[str, Any]:
    bypass = decision.bypass or decision.refusal
    return {
        "schemaVersion": RESULTS_SCHEMA_VERSION,
        "evalward": __version__,
        "result": decision.result.value,
        "reason": decision.reason,
        "run": asdict(run or RunInfo()),
        "bypass": None
        if bypass is None
        else {"outcome": "honoured" if decision.bypass else "refused", **asdict(bypass)},
        "changedAgents": evaluation.changes.changed_agents,
        "affectedEvals": evaluation.changes.affected_evals,
        "gateChanges": evaluation.changes.gate_changes,
        "notes": evaluation.notes,
        "cacheHits": evaluation.cache_hits,
        "skippedRuns": [
            {"eval": r.eval, "fixture": r.fixture, "side": r.side.value, "rep": r.rep}
            for r in evaluation.skipped
        ],
        "evals": [e.model_dump(mode="json", exclude={"fixtures"}) for e in evaluation.evals],
    }


def _fixture_record(evaluation: Evaluation, result: FixtureResult) -> dict[str, Any]:
    private = (result.eval, result.fixture) in evaluation.private
    return {**result.model_dump(mode="json"), "visibility": "private" if private else "public"}


def write_text(path: Path, text: str, redact: Redact) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(redact(text), encoding="utf-8")


def write_results(
    output_dir: Path,
    evaluation: Evaluation,
    decision: GateDecision,
    redact: Redact,
    run: RunInfo | None = None,
) -> Path:
    """Stream results.json: one fixture run at a time, one per line, so that 20,000 runs
    never exist twice in memory (as a dict and as one string; bench/p4_footprint.py)."""
    path = output_dir / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    header = json.dumps({**_results_header(evaluation, decision, run), "fixtures": []}, indent=2)
    opening, closing = header.rsplit('"fixtures": []', 1)
    with path.open("w", encoding="utf-8") as handle:
        handle.write(redact(opening) + '"fixtures": [')
        for index, result in enumerate(evaluation.fixtures):
            record = json.dumps(_fixture_record(evaluation, result))
            handle.write(("," if index else "") + "\n    " + redact(record))
        handle.write(("\n  " if evaluation.fixtures else "") + "]" + redact(closing) + "\n")
    return path


def write_reports(
    output_dir: Path,
    evaluation: Evaluation,
    decision: GateDecision,
    comment: Callable[[], str],
    redact: Redact,
    run: RunInfo | None = None,
) -> tuple[Path, str]:
    """Every file of a run in `output_dir` — results.json first, so it is on disk whatever
    fails later (the comment is rendered only then) — then junit.xml, report.html and
    comment.md. Returns results.json's path and the comment as written."""
    from evalward.report.html import render_html
    from evalward.report.junit import junit_xml

    run = run or RunInfo()
    results = write_results(output_dir, evaluation, decision, redact, run)
    write_text(output_dir / "junit.xml", junit_xml(evaluation.evals, evaluation.private), redact)
    html = render_html(
        result=decision.result.value,
        reason=decision.reason,
        evals=evaluation.evals,
        fixtures=evaluation.fixtures,
        private=evaluation.private,
        head_sha=run.head_sha,
        run_url=run.run_url,
    )
    write_text(output_dir / "report.html", html, redact)
    body = redact(comment())
    write_text(output_dir / "comment.md", body, redact)
    return results, body


def append_audit(output_dir: Path, record: dict[str, Any], redact: Redact) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    with (output_dir / "audit.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(redact(json.dumps(record, sort_keys=False)) + "\n")


def append_summary(path: str | None, markdown: str, redact: Redact) -> None:
    if not path:
        return
    with Path(path).open("a", encoding="utf-8") as handle:
        handle.write(redact(markdown) + "\n")


def write_outputs(path: str | None, outputs: dict[str, str], redact: Redact) -> None:
    """GITHUB_OUTPUT in the heredoc form, with a random delimiter no value can contain."""
    if not path:
        return
    with Path(path).open("a", encoding="utf-8") as handle:
        for name, value in outputs.items():
            delimiter = f"EOF_{secrets.token_hex(8)}"
            handle.write(f"{name}<<{delimiter}\n{redact(value)}\n{delimiter}\n")
