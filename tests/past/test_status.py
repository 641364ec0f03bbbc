"""The Eval status store and what a record means against a checkout: files read only when they
are what evalward wrote, Pending/Running/Passed/Failed/Stale, and the lifecycle of one run."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from evalward.past.status import (
    MAX_FILE_BYTES,
    AgentIdentity,
    EvalStatus,
    Phase,
    StatusStore,
    current,
)
from evalward.past.status_run import RunSource, StatusRun
from evalward.resources.models import Severity
from evalward.rundata.results import EvalResult, FixtureOutcome, Interval, Status

pytestmark = pytest.mark.unit

FINGERPRINT = "a" * 64
WHEN = dt.datetime(2026, 11, 16, 9, 0, tzinfo=dt.UTC)


def finished(**fields: object) -> EvalStatus:
    values: dict[str, object] = {
        "name": "support-bot-eval",
        "target_agent": "support-bot",
        "phase": Phase.passed,
        "last_run_at": "2026-11-16T09:00:00Z",
        "last_result": "Pass",
        "last_score": "0.92",
        "target_agent_generation": "fp:" + FINGERPRINT[:12],
        "agent_fingerprint": FINGERPRINT,
    }
    values.update(fields)
    return EvalStatus.model_validate(values)


def result(score: float, message: str = "refunded without asking") -> EvalResult:
    row = FixtureOutcome(
        name="refund-must-clarify",
        score=score,
        result=Status.passed if score == 1 else Status.failed,
        severity=Severity.high,
        message=message,
        reps=1,
        passes=int(score == 1),
        pass_rate=float(score == 1),
        pass_rate_interval=Interval(low=0, high=1),
    )
    return EvalResult(
        eval="support-bot-eval",
        agent="support-bot",
        side="head",
        score=score,
        passed=score >= 0.85,
        pass_threshold=0.85,
        passing=int(score == 1),
        failing=int(score != 1),
        errors=0,
        total=1,
        fixture_results=[row],
    )


# --- reading: only what evalward wrote -------------------------------------------------------


def test_a_written_record_reads_back(tmp_path: Path) -> None:
    store = StatusStore(tmp_path)
    store.write(finished())
    assert store.read("support-bot-eval") == finished()
    assert store.read("math-tutor-eval") is None and store.problems == []


@pytest.mark.parametrize(
    "plant",
    [
        "link",
        "oversized",
        "another eval's",
        "markup as a score",
        "not a commit",
        "another schema version",
        "not json",
    ],
)
def test_a_file_evalward_did_not_write_is_ignored_and_named(tmp_path: Path, plant: str) -> None:
    store = StatusStore(tmp_path / "status")
    path = tmp_path / "status" / "support-bot-eval.json"
    path.parent.mkdir()
    document = finished().document()
    if plant == "link":
        (tmp_path / "elsewhere.json").write_text(json.dumps(document))
        os.symlink(tmp_path / "elsewhere.json", path)
    elif plant == "oversized":
        document["fixtureResults"] = [
            {"name": "x" * 200, "score": 1, "result": "pass", "severity": "low"}
        ] * (MAX_FILE_BYTES // 200)
        path.write_text(json.dumps(document))
    elif plant == "another eval's":
        path.write_text(json.dumps({**document, "name": "math-tutor-eval"}))
    elif plant == "markup as a score":
        path.write_text(json.dumps({**document, "lastScore": "<img src=x onerror=alert(1)>"}))
    elif plant == "not a commit":
        path.write_text(json.dumps({**document, "commit": "`@octocat`"}))
    elif plant == "another schema version":
        path.write_text(json.dumps({**document, "schemaVersion": 2}))
    else:
        path.write_text("{")
    assert store.read("support-bot-eval") is None
    (problem,) = store.problems
    assert problem.startswith(f"{path}: ignored (")


def test_names_that_are_no_eval_name_are_never_paths(tmp_path: Path) -> None:
    store = StatusStore(tmp_path / "status")
    assert store.path("../../etc/passwd") is None
    assert store.read("../x") is None
    store.write(EvalStatus.model_construct(name="../escape"))
    assert not (tmp_path / "escape.json").exists()


# --- what a record means now -----------------------------------------------------------------

SAME = AgentIdentity(FINGERPRINT, None)


def test_pending_running_passed_and_failed() -> None:
    assert current("support-bot-eval", "support-bot", None, SAME).phase is Phase.pending
    assert current("e", "support-bot", finished(), SAME).phase is Phase.passed
    failed = finished(phase=Phase.failed, last_result="Fail", last_score="0.40")
    assert current("e", "support-bot", failed, SAME).phase is Phase.failed
    running = finished(phase=Phase.running, running={"at": "2026-11-17T09:00:00Z"})
    assert current("e", "support-bot", running, AgentIdentity("b" * 64, None)).phase is (
        Phase.running
    )
    never_finished = EvalStatus(name="e", interrupted={"at": "2026-11-17T09:00:00Z"})
    assert current("e", "support-bot", never_finished, SAME).phase is Phase.pending


@pytest.mark.parametrize(
    ("recorded", "now", "reason"),
    [
        (None, AgentIdentity("b" * 64, None), "agent support-bot changed since the run of"),
        (3, AgentIdentity(FINGERPRINT, 4), "agent support-bot is at generation 4; the run of"),
        (3, AgentIdentity(FINGERPRINT, None), "agent support-bot has no metadata.generation"),
        (None, AgentIdentity(FINGERPRINT, 1), "agent support-bot is at generation 1; at the"),
        (None, None, "its agent support-bot is not defined in this checkout"),
    ],
)
def test_stale_when_the_agent_is_not_the_one_that_ran(
    recorded: int | None, now: AgentIdentity | None, reason: str
) -> None:
    record = finished() if recorded is None else finished(target_agent_generation=recorded)
    row = current("support-bot-eval", "support-bot", record, now)
    assert row.phase is Phase.stale
    assert row.stale_because.startswith(reason), row.stale_because
    assert row.document()["staleReason"] == row.stale_because


def test_the_same_generation_and_fingerprint_are_not_stale() -> None:
    numbered = finished(target_agent_generation=3)
    assert current("e", "support-bot", numbered, AgentIdentity(FINGERPRINT, 3)).phase is (
        Phase.passed
    )


def test_an_eval_that_now_targets_another_agent_is_stale() -> None:
    row = current("support-bot-eval", "support-bot-v2", finished(), SAME)
    assert row.phase is Phase.stale
    assert row.stale_because.startswith("the Eval now targets support-bot-v2")


# --- one run's updates ---------------------------------------------------------------------


def source(event: str = "push", commit: str = "c" * 40) -> RunSource:
    return RunSource(event, commit, WHEN, branch="main")


def test_a_run_killed_earlier_settles_to_its_last_finished_phase(tmp_path: Path) -> None:
    store = StatusStore(tmp_path)
    store.write(finished(phase=Phase.running, running={"at": "2026-11-15T09:00:00Z"}))
    run = StatusRun(store, source())
    run.start({"support-bot-eval": "support-bot"})
    assert store.read("support-bot-eval").phase is Phase.running  # type: ignore[union-attr]
    run.close("the run stopped with an error")
    after = store.read("support-bot-eval")
    assert after is not None and after.phase is Phase.passed and after.running is None
    assert after.interrupted is not None
    assert after.interrupted.reason == "the run stopped with an error"


def test_held_out_fixtures_keep_their_result_but_not_their_message(tmp_path: Path) -> None:
    store = StatusStore(tmp_path)
    identity = {"support-bot": SAME}
    StatusRun(store, source()).finish([result(0.4)], identity)
    assert store.read("support-bot-eval").fixture_results[0].message == (  # type: ignore[union-attr]
        "refunded without asking"
    )
    StatusRun(store, source()).finish(
        [result(0.4)], identity, private={("support-bot-eval", "refund-must-clarify")}
    )
    row = store.read("support-bot-eval").fixture_results[0]  # type: ignore[union-attr]
    assert (row.name, row.result, row.message) == ("refund-must-clarify", "fail", "")


def test_a_message_with_a_lone_surrogate_is_kept_with_u_fffd_in_its_place(tmp_path: Path) -> None:
    """An agent's words may hold what UTF-8 cannot (a lone surrogate from a JSON escape): the
    record keeps the message with U+FFFD where it stood, as every file evalward writes does."""
    store = StatusStore(tmp_path)
    StatusRun(store, source()).finish([result(0.4, "said \ud800 then")], {"support-bot": SAME})
    row = store.read("support-bot-eval").fixture_results[0]  # type: ignore[union-attr]
    assert row.message == "said \ufffd then"


def test_a_source_that_is_no_commit_is_not_recorded_as_one(tmp_path: Path) -> None:
    store = StatusStore(tmp_path)
    StatusRun(store, source(commit="main; rm -rf /")).finish([result(1.0)], {"support-bot": SAME})
    record = store.read("support-bot-eval")
    assert record is not None and record.commit == "" and record.last_result == "Pass"


def test_a_read_only_store_is_compared_with_but_never_written(tmp_path: Path) -> None:
    store = StatusStore(tmp_path)
    store.write(
        finished(
            last_scheduled_run={
                "at": "2026-11-16T09:00:00Z",
                "lastScore": "0.92",
                "lastResult": "Pass",
            }
        )
    )
    run = StatusRun(store, source("schedule"), writes=False)
    run.start({"support-bot-eval": "support-bot"})
    (since,) = run.since_scheduled([result(0.4)])
    assert (since.score, since.delta, since.previous_date) == ("0.40", -0.52, "2026-11-16")
    run.finish([result(0.4)], {"support-bot": SAME})
    assert store.read("support-bot-eval") == finished(
        last_scheduled_run={"at": "2026-11-16T09:00:00Z", "lastScore": "0.92", "lastResult": "Pass"}
    )
