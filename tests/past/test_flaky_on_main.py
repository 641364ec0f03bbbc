"""The default branch's fixture records: flaky when an unchanged agent's fixture flips, and
stale when too old, from another evalward version or for another agent."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from evalward.past.flaky import main_history, record_runs
from evalward.resources.models import Severity
from evalward.rundata.results import EvalResult, FixtureResult, Status, Verdict

pytestmark = pytest.mark.unit

NOW = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)


def result(outcomes: dict[str, list[bool]]) -> EvalResult:
    runs = [
        FixtureResult(
            eval="e", fixture=name, side="head", rep=rep,
            status=Status.passed if ok else Status.failed, score=float(ok),
            verdict=Verdict.passed if ok else Verdict.failed, severity=Severity.medium,
        )
        for name, reps in outcomes.items()
        for rep, ok in enumerate(reps)
    ]  # fmt: skip
    return EvalResult(
        eval="e", agent="a", side="head", score=1.0, passed=True, pass_threshold=1.0,
        passing=0, failing=0, errors=0, total=len(outcomes), fixtures=runs,
    )  # fmt: skip


def record(
    cache: Path, outcomes: dict[str, list[bool]], *, agent: str = "fp", days: int = 0
) -> None:
    when = NOW - dt.timedelta(days=days)
    record_runs(cache, [result(outcomes)], commit="c", agents={"e": agent}, version="1", now=when)


def test_a_fixture_that_flips_for_an_unchanged_agent_is_flaky_at_its_rate(tmp_path: Path) -> None:
    record(tmp_path, {"steady": [True, True], "flips": [True, False]})
    record(tmp_path, {"steady": [True, True], "flips": [False, False]})
    found = main_history(tmp_path, "e", agent="fp", version="1", now=NOW)
    assert found.flaky == {"flips": 0.25} and found.stale == ""


def test_runs_of_another_agent_say_nothing(tmp_path: Path) -> None:
    record(tmp_path, {"flips": [True, False, True, False]}, agent="other")
    found = main_history(tmp_path, "e", agent="fp", version="1", now=NOW)
    assert found.flaky == {} and "another version of the agent" in found.stale


def test_old_records_and_another_version_are_stale(tmp_path: Path) -> None:
    record(tmp_path, {"flips": [True, False, True, False]}, days=20)
    old = main_history(tmp_path, "e", agent="fp", version="1", now=NOW)
    assert old.flaky == {} and old.stale == "the newest record is 20 days old"
    other = main_history(tmp_path, "e", agent="fp", version="2", now=NOW)
    assert other.flaky == {} and other.stale == "recorded by evalward 1, not 2"


def test_a_stale_record_beside_a_fresh_one_is_not_counted(tmp_path: Path) -> None:
    """The newest record decides whether the history is stale; an older one of the same agent
    that is stale itself (its age, its version) adds no runs to the rate."""
    record(tmp_path, {"flips": [True, True, True, True]}, days=200)
    record(tmp_path, {"flips": [True, True, False, False]}, days=1)
    assert main_history(tmp_path, "e", agent="fp", version="1", now=NOW).flaky == {"flips": 0.5}
    path = tmp_path / "fixture-runs" / "e.json"
    document = json.loads(path.read_text())
    document["records"][0]["version"] = "0.0.1"
    document["records"][0]["when"] = (NOW - dt.timedelta(days=2)).isoformat()
    document["records"][0]["fixtures"] = {"flips": [4, 4]}
    path.write_text(json.dumps(document))
    assert main_history(tmp_path, "e", agent="fp", version="1", now=NOW).flaky == {"flips": 0.5}


def test_a_record_whose_time_has_no_zone_is_stale_not_an_error(tmp_path: Path) -> None:
    record(tmp_path, {"flips": [True, False, True, False]})
    path = tmp_path / "fixture-runs" / "e.json"
    document = json.loads(path.read_text())
    document["records"][0]["when"] = "2026-11-20T10:00:00"
    path.write_text(json.dumps(document))
    found = main_history(tmp_path, "e", agent="fp", version="1", now=NOW)
    assert found.flaky == {} and found.stale == "its record has no readable time"


def test_too_few_runs_say_nothing_and_no_file_is_no_history(tmp_path: Path) -> None:
    record(tmp_path, {"flips": [True, False]})
    assert main_history(tmp_path, "e", agent="fp", version="1", now=NOW).flaky == {}
    assert main_history(tmp_path, "none", agent="fp", version="1", now=NOW).stale == ""
