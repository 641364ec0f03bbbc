"""`evalward status` in-process (`cli/status.py`): every Eval Pending before any run, then the
phase, result and fixtures a local run recorded, as a table and as JSON; a repository that is
not a folder, refused."""

from __future__ import annotations

import json

import pytest

from evalward.cli import run, status
from support.clirun import in_process, initialised, quiet_host, refused
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


@pytest.fixture
def started(repo: GitRepo) -> GitRepo:
    return initialised(repo)


def test_before_any_run_every_eval_is_pending_and_status_says_where_it_would_read(
    started: GitRepo,
) -> None:
    code, said = in_process(status.main, "status", str(started.path), host=quiet_host(started.path))
    assert code == 0
    header, row, *rest = said.splitlines()
    assert header.split()[:2] == ["Eval", "Agent"]
    assert row.split() == ["assistant-eval", "assistant", "Pending", "—", "—", "—", "—", "—"]
    assert rest[0].startswith("No Eval has a status yet.")
    assert "restore that cache into .evalward/cache" in rest[0]


def test_a_local_run_s_status_is_read_back_as_a_table_and_as_json(started: GitRepo) -> None:
    host = quiet_host(started.path)
    mock = str(started.path / "evals" / "mock-replies.yaml")
    assert in_process(run.main, "run", str(started.path), "--mock-script", mock, host=host)[0] == 0

    code, said = in_process(status.main, "status", str(started.path), "--local", host=host)
    assert code == 0
    _, row, source = said.splitlines()
    assert row.split()[:6] == ["assistant-eval", "assistant", "Passed", "Pass", "1.00", "2/2"]
    assert (
        source
        == "From .evalward/status: local runs' status (`evalward run`), not the default branch's."
    )

    code, said = in_process(status.main, "status", str(started.path), "--json", host=host)
    assert code == 0
    document = json.loads(said)
    assert (document["source"], document["directory"]) == ("local", ".evalward/status")
    (entry,) = document["evals"]
    assert (entry["name"], entry["phase"], entry["passingFixtures"]) == (
        "assistant-eval",
        "Passed",
        2,
    )
    assert entry["commit"] == started.head()


def test_a_path_that_is_not_a_folder_is_refused(
    started: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    file = started.path / "evalward.yaml"
    said = refused(capsys, "status", str(file), host=quiet_host(started.path))
    assert (
        said
        == f"{file}: not a directory; give a folder of the repository (default: the current one)"
    )


ADVISORY = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: answers-quickly, labels: { suite: speed } }
spec:
  targetAgent: assistant
  input: { type: prompt, payload: { prompt: "Where is my order 12345?" } }
  assertions:
    - { type: latency }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: speed-eval }
spec:
  targetAgent: assistant
  fixtureSelector: { matchLabels: { suite: speed } }
"""
"""An Eval whose one assertion only reports (a `latency` without `maxMs`): advisory."""


def test_an_advisory_eval_is_reported_and_given_no_phase_beside_one_that_passed(
    started: GitRepo,
) -> None:
    """Seed 003's phases are Passed and Failed once a run is over; an advisory Eval neither
    passes nor fails, so no status records it (it stays Pending), and the run's reports and
    the other Eval's status are written as ever."""
    (started.path / "evals" / "speed.yaml").write_text(ADVISORY, encoding="utf-8")
    started.commit("an Eval that only reports")
    host = quiet_host(started.path)
    mock = str(started.path / "evals" / "mock-replies.yaml")
    out = started.path / "out"
    ran = in_process(
        run.main,
        "run",
        str(started.path),
        "--mock-script",
        mock,
        "--output-dir",
        str(out),
        host=host,
    )
    assert ran[0] == 0, ran[1]
    results = json.loads((out / "results.json").read_text())
    assert {(e["eval"], e["advisory"]) for e in results["evals"]} == {
        ("assistant-eval", False),
        ("speed-eval", True),
    }

    code, said = in_process(status.main, "status", str(started.path), "--json", host=host)
    assert code == 0
    phases = {entry["name"]: entry["phase"] for entry in json.loads(said)["evals"]}
    assert phases == {"assistant-eval": "Passed", "speed-eval": "Pending"}
