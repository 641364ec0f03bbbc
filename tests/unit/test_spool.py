"""The trace spool: traces leave memory once kept, come back whole, and a disk that refuses
costs memory, never the results."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from evalward.resources.models import Severity
from evalward.rundata.results import FixtureResult, Status, Verdict
from evalward.rundata.spool import TraceSpool
from evalward.rundata.trace import StepType, Trace


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
