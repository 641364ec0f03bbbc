"""The trace spool: traces leave memory once kept, come back whole, and a disk that refuses
costs memory, never the results."""

from __future__ import annotations

import subprocess
import sys
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


_UNDER_A_LIMIT = """
import resource, sys
sys.path[:0] = sys.argv[1:]
from test_spool import result
from evalward.rundata.spool import TraceSpool
from evalward.rundata.trace import Trace
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))
spool = TraceSpool()
originals = [result(f"f{i}", "x" * size) for i, size in enumerate((60_000, 60_000, 100, 60_000))]
kept = [spool.keep(r) for r in originals]
print([k.trace is None for k in kept])
for original, light in zip(originals, kept, strict=True):
    assert spool.trace_of(light) == original.trace
    assert Trace.model_validate_json(spool.trace_json(light)) == original.trace
print("whole")
"""


def test_a_file_size_limit_met_part_way_keeps_that_trace_in_the_result() -> None:
    """The second trace passes the limit part-way through its write: it stays in its result,
    the part written is taken back, and a trace that fits after it is kept on disk; every one
    reads back whole (the refusal never waits for a later read's flush)."""
    here = Path(__file__).parent
    done = subprocess.run(
        # -B: no bytecode cache is written under the limit (one cut short would be kept)
        [sys.executable, "-B", "-c", _UNDER_A_LIMIT, str(here), str(here.parent.parent / "src")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[True, False, True, False]", "whole"], done.stdout
