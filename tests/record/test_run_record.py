"""The run record round-trips: a fully populated run — every field of every model set to a
value other than its default — is written by the one writer (results.json, streamed; a shard
part) and read back by the one reader unchanged, and docs/results.schema.json is the schema
of what is written."""

from __future__ import annotations

import enum
import json
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import jsonschema
import pytest
from pydantic import BaseModel

from evalward.attribution.found import Finding, Regression, RunAttribution
from evalward.attribution.hunks import Hunk
from evalward.attribution.search import (
    Attributed,
    FixtureScore,
    NotAttributable,
    Trial,
    Tried,
)
from evalward.errors import ConfigError
from evalward.plan.changes import ChangeSet
from evalward.plan.plan import Plan, PlannedRun
from evalward.record.evaluation import Evaluation
from evalward.record.read import read_part, read_results
from evalward.record.schema import (
    FixtureEntry,
    PlanRecord,
    RunInfo,
    ShardIndex,
    ShardPart,
    ShardSource,
    results_json_schema,
)
from evalward.record.summary import RunSummary
from evalward.record.write import part_document, results_chunks
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spending import Spent
from evalward.rundata.spool import TraceSpool
from evalward.verdict.compare import compare
from evalward.verdict.gate import Bypass, GateDecision, GateResult

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def populated(annotation: Any, name: str = "x") -> Any:
    """A value of `annotation` that is no field's default: every field of a model set."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return populated(next(a for a in args if a is not type(None)), name)
    if origin is typing.Annotated:
        return populated(args[0], name)
    if origin is Literal:
        return args[-1]
    if origin in (list, tuple) and annotation is not tuple:
        if origin is tuple and args and args[-1] is not Ellipsis:
            return tuple(populated(a, f"{name}{i}") for i, a in enumerate(args))
        return [populated(args[0], name)]
    if origin is dict:
        return {populated(args[0], f"{name}-key"): populated(args[1], name)}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        values = {}
        for field, info in annotation.model_fields.items():
            if info.exclude:
                continue
            value = populated(info.annotation, field)
            if isinstance(value, bool) and info.default is True:
                value = False
            values[field] = value
        return annotation.model_validate(values)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return list(annotation)[-1]
    if annotation is bool:
        return True
    if annotation is int:
        return 3
    if annotation is float:
        return 0.75
    if annotation in (str, Any):
        return f"{name}-value"
    raise AssertionError(f"no value for {annotation!r}")


def an_attribution() -> RunAttribution:
    """Attribution with every field of its record set: a field hunk proven the cause (taken
    back with the prompt's edit, applied with the prompt's rename: each changes nothing
    alone, and its variant loads only with it), beside a variant that did not build (the
    edit and the rename taken back) and the head itself, read from the gate's own runs; then
    git refused a commit, and it stopped."""
    culprit = Hunk("agents/a.yaml", 1, "field", 4, 5, field=("spec", "models"))
    other = Hunk("prompts/a.md", 2, "text", 3, 3, ("old\n",), ("new\n",), at=2)
    rename = Hunk("prompts/a.md", 1, "rename", 0, 0, renamed_from="prompts/old.md")
    score = (FixtureScore("fx", 1, 1, pairs=True),)
    removed = Tried("reverted", frozenset({culprit, other}), Trial(False, score))
    broken = Tried("reverted", frozenset({other, rename}), Trial(False, score, not_built="no YAML"))
    reproduced = Tried("applied", frozenset({culprit, rename}), Trial(True, score))
    head = Tried("applied", frozenset({culprit, other, rename}), Trial(True, score, gate_runs=True))
    attributed = Attributed(
        frozenset({culprit}), removed, reproduced, (head, broken, removed, reproduced)
    )
    finding = Finding(Regression("ev", "agent", ("fx",), in_pairs=True), attributed)
    pooled = Finding(
        Regression("ev2", "agent", ("f1", "f2"), pooled=True),
        NotAttributable("its budget ran out", (broken,)),
    )
    return RunAttribution(
        "always",
        (finding, pooled),
        Spent(3),
        4,
        (("pooled-eval", "its pairwise judge prefers the base over its fixtures"),),
        "cannot make a commit of tree 0123456789ab: fatal: the disk is full",
    )


def a_run() -> tuple[Evaluation, GateDecision, RunInfo]:
    """A run in which every field the record holds is set."""
    fixture = populated(FixtureResult)
    fixture = fixture.model_copy(update={"side": "head", "eval": "ev", "fixture": "fx", "rep": 1})
    result = populated(EvalResult).model_copy(update={"side": "head", "eval": "ev"})
    traces = TraceSpool()
    kept = traces.keep(fixture)
    plan = Plan(
        evals=["ev"],
        runs=[PlannedRun(Side.head, "ev", "fx", 1)],
        not_run={"gone-eval": "its agent was removed"},
        pending={"ev": ["added-fixture"]},
    )
    changes = ChangeSet(
        changed_agents={"agent": ["its prompt changed"]},
        affected_evals={"ev": ["its agent changed"]},
        gate_changes=["Eval ev: passThreshold 0.9 -> 0.1"],
    )
    evaluation = Evaluation(
        changes=changes,
        plan=plan,
        fixtures=[kept],
        evals=[result],
        comparisons=compare([result]),
        notes=["a note"],
        private={("ev", "fx")},
        skipped=[PlannedRun(Side.base, "ev", "fx", 2)],
        traces=traces,
        attribution=an_attribution(),
    )
    bypass = Bypass(
        "force-eval-bypass", "octocat", "2026-11-23T00:00:00Z", "admin", "pr", "abc", True
    )
    decision = GateDecision(
        GateResult.bypassed, reason="bypassed", bypass=bypass, unavailable_evals=["down-eval"]
    )
    run = populated(RunInfo)
    return evaluation, decision, run


def test_results_json_read_back_is_what_was_written_every_field_set(tmp_path: Path) -> None:
    evaluation, decision, run = a_run()
    summary = populated(RunSummary)
    path = tmp_path / "results.json"
    path.write_text("".join(results_chunks(evaluation, decision, run, summary)))
    written = json.loads(path.read_text())

    record = read_results(path)

    # nothing dropped or added on the way back: the model's JSON is the file's
    assert record.model_dump(mode="json", by_alias=True) == written
    (entry,) = record.fixtures
    fixture = evaluation.fixtures[0]
    assert entry == FixtureEntry.model_validate(
        {**fixture.model_dump(), "trace": evaluation.trace_of(fixture), "visibility": "private"}
    )
    assert entry.trace is not None and entry.trace.steps  # the trace, read back from the spool
    assert record.evals[0].model_dump() == evaluation.evals[0].model_dump(exclude={"fixtures"})
    assert record.run == run and record.summary == summary
    assert record.bypass is not None and record.bypass.outcome == "honoured"
    assert record.bypass.by_author is True
    assert record.skipped_runs[0].side == "base" and record.unavailable_evals == ["down-eval"]
    assert (record.not_run, record.pending) == (evaluation.plan.not_run, evaluation.plan.pending)
    # every field of the record's models was set, so every one made the round trip; a
    # hunk's `renamedFrom`, which only a rename has (and results.json files written before
    # it lack), where a rename's hunk sets it
    assert set(_unset(record)) <= {".attribution.regressions.hunks.renamed_from"}
    assert record.attribution is not None
    regression = record.attribution.regressions[0]
    assert [h.renamed_from for h in regression.hunks if h.kind == "rename"] == ["prompts/old.md"]
    beside = [
        regression.hunks[i].kind for i in regression.taken_back_with + regression.applied_with
    ]
    assert beside == ["text", "rename"]


def test_a_shard_part_read_back_is_what_was_written(tmp_path: Path) -> None:
    evaluation, _, _ = a_run()
    plan = PlanRecord(
        evals=["ev"],
        runs=[("head", "ev", "fx", 1)],
        skipped_base={},
        not_run={"gone-eval": "its agent was removed"},
        pending={"ev": ["added-fixture"]},
        dropped={},
    )
    header = ShardPart(
        shard=ShardIndex(index=2, count=3),
        source=ShardSource(head="a" * 40, base="b" * 40),
        plan=plan,
        definitions="digest",
        skipped=[("base", "ev", "fx", 2)],
    )
    document = part_document(evaluation, header)
    path = tmp_path / "shard-2-of-3.json"
    path.write_text(json.dumps(document))
    raw, part = read_part(path)
    assert raw == document
    assert part.model_dump(mode="json", by_alias=True, exclude={"seal"}) == document
    assert (part.shard.index, part.plan, part.skipped) == (2, plan, [("base", "ev", "fx", 2)])
    assert part.fixtures[0].trace == evaluation.trace_of(evaluation.fixtures[0])


def test_docs_results_schema_is_generated_from_the_record_and_holds_what_is_written(
    tmp_path: Path,
) -> None:
    committed = json.loads((ROOT / "docs" / "results.schema.json").read_text())
    assert committed == results_json_schema(), "run scripts/gen_results_schema.py"
    evaluation, decision, run = a_run()
    document = json.loads("".join(results_chunks(evaluation, decision, run)))
    jsonschema.validate(document, committed)
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_results_schema.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def _unset(model: BaseModel, path: str = "") -> set[str]:
    """Fields of `model` (and the models in it) still at their default: what a round trip
    would not have shown. A field of a list's items is set where any item sets it (two
    fields that exclude each other are set by two items)."""
    unset = set()
    for name, info in type(model).model_fields.items():
        if info.exclude:
            continue
        value = getattr(model, name)
        where = f"{path}.{name}"
        constant = get_origin(info.annotation) is Literal and len(get_args(info.annotation)) == 1
        if constant:
            continue
        if not info.is_required() and value == info.get_default(call_default_factory=True):
            unset.add(where)
        items = value if isinstance(value, list) else [value]
        inner = [_unset(item, where) for item in items if isinstance(item, BaseModel)]
        unset |= set.intersection(*inner) if inner else set()
    return unset


def test_the_record_answers_a_malformed_results_json_with_one_error_naming_the_file(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "results.json"
    evaluation, decision, run = a_run()
    document = json.loads("".join(results_chunks(evaluation, decision, run)))
    document["fixtures"][0]["status"] = "sideways"
    broken.write_text(json.dumps(document))
    with pytest.raises(ConfigError, match=r"a malformed results.json \(fixtures.0.status: "):
        read_results(broken)
