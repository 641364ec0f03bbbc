"""Write what a run leaves behind: results.json, comment.md, the job summary, action outputs."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalward import __version__
from evalward.gate import GateDecision
from evalward.pipeline import Evaluation

RESULTS_SCHEMA_VERSION = 1

Redact = Callable[[str], str]


def results_document(evaluation: Evaluation, decision: GateDecision) -> dict[str, Any]:
    """The versioned, machine-readable record of a run."""
    return {
        "schemaVersion": RESULTS_SCHEMA_VERSION,
        "evalward": __version__,
        "result": decision.result.value,
        "reason": decision.reason,
        "changedAgents": evaluation.changes.changed_agents,
        "affectedEvals": evaluation.changes.affected_evals,
        "notes": evaluation.notes,
        "evals": [e.model_dump(mode="json", exclude={"fixtures"}) for e in evaluation.evals],
        "fixtures": [f.model_dump(mode="json") for f in evaluation.fixtures],
    }


def write_text(path: Path, text: str, redact: Redact) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(redact(text), encoding="utf-8")


def write_results(
    output_dir: Path, evaluation: Evaluation, decision: GateDecision, redact: Redact
) -> Path:
    path = output_dir / "results.json"
    write_text(path, json.dumps(results_document(evaluation, decision), indent=2) + "\n", redact)
    return path


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
