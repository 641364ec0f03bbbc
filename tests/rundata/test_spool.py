"""The trace spool: traces leave memory once kept, come back whole, and a disk that refuses
costs memory, never the results."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from evalward.resources.models import Severity
from evalward.rundata.held import held
from evalward.rundata.results import (
    AssertionResult,
    FixtureOutcome,
    FixtureResult,
    Status,
    Verdict,
)
from evalward.rundata.spool import TraceSpool
from evalward.rundata.trace import StepType, Trace
from evalward.scoring.reps import wilson_interval

pytestmark = pytest.mark.unit


def result(fixture: str, text: str) -> FixtureResult:
    trace = Trace()
    trace.add(StepType.input, content=f"question for {fixture}")
    trace.add(StepType.final, content=text)
    return FixtureResult(
        eval="e",
        fixture=fixture,
        side="head",
        status=Status.passed,
        score=1.0,
        verdict=Verdict.passed,
        severity=Severity.medium,
        trace=trace,
    )


def test_kept_traces_leave_the_result_and_come_back_whole() -> None:
    spool = TraceSpool()
    originals = [result(f"f{i}", "é" * i + "answer") for i in range(50)]
    kept = [spool.keep(r) for r in originals]
    assert all(k.trace is None for k in kept)
    for original, light in zip(originals, kept, strict=True):
        assert spool.trace_of(light) == original.trace
        assert Trace.model_validate_json(spool.trace_json(light)) == original.trace


def test_a_run_is_kept_once() -> None:
    spool = TraceSpool()
    spool.keep(result("f", "a"))
    with pytest.raises(ValueError, match="already kept"):
        spool.keep(result("f", "b"))


def test_a_disk_that_refuses_keeps_the_trace_in_the_result(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    spool = TraceSpool()
    original = result("f", "answer")
    kept = spool.keep(original)
    assert kept.trace == original.trace
    assert spool.trace_of(kept) == original.trace


def test_results_held_share_what_is_the_same_in_each_and_keep_their_values() -> None:
    """A kept result, its assertions and an Eval's outcomes share one set of field names per
    class and one instance of each interval; what they say is unchanged."""
    spool = TraceSpool()
    checks = [
        AssertionResult(
            type="contains",
            status=Status.passed,
            score=1.0,
            weight=1.0,
            severity=Severity.medium,
            message=f"{i}",
        )
        for i in range(2)
    ]
    originals = [
        result(f"f{i}", "answer").model_copy(update={"assertions": checks}) for i in range(3)
    ]
    kept = [spool.keep(r) for r in originals]
    assert len({id(k.model_fields_set) for k in kept}) == 1
    assert len({id(a.model_fields_set) for k in kept for a in k.assertions}) == 1
    for original, light in zip(originals, kept, strict=True):
        assert light.model_dump() == original.model_copy(update={"trace": None}).model_dump()
    light = kept[0].model_copy(update={"message": "changed"})
    assert light.message == "changed" and kept[0].message == ""

    outcomes = [
        held(
            FixtureOutcome(
                name=f"f{i}",
                score=1.0,
                result=Status.passed,
                severity=Severity.medium,
                reps=1,
                passes=1,
                pass_rate=1.0,
                pass_rate_interval=wilson_interval(1, 1),
            )
        )
        for i in range(3)
    ]
    assert len({id(o.pass_rate_interval) for o in outcomes}) == 1
    assert outcomes[2].pass_rate_interval == wilson_interval(1, 1)
