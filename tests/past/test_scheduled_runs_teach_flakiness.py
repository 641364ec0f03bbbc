"""A scheduled run of the default branch records what each fixture did, as a push does
(docs/github.md, "Flaky on main": runs on the default branch, pushes and schedules, record
each fixture's outcomes; `past.flaky`: "a rerun of a commit (a schedule) adds a record of its
own: runs of an unchanged agent are what tell a flaky fixture")."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import run_action
from support.answered import commit_suite, helper_eval, scripted
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

CRON = "0 6 * * 1"
NAMES = ["f0", "f1"]
SCHEDULED_EVAL = helper_eval("execution: { reps: { min: 2, max: 4 } }", f"schedule: '{CRON}'")


def test_two_scheduled_runs_of_an_unchanged_agent_leave_two_records(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    main = commit_suite(repo, SCHEDULED_EVAL, NAMES)
    scripted(model, "v1", {"f0": [True] * 20, "f1": [True, False] * 10})
    event = {"schedule": CRON, "repository": {"full_name": github.repository}}
    runner = {**env, "GITHUB_REF": "refs/heads/main", "GITHUB_SHA": main}

    for _ in range(2):  # the nightly runs: a provider's model may change without a commit
        nightly = run_action(repo.path, github, event, env=runner, event_name="schedule")
        assert nightly.returncode in (0, 1), nightly.stdout + nightly.stderr
        assert "helper-eval" in nightly.summary

    cache = repo.path / ".evalward/cache"
    assert (cache / "status/helper-eval.json").is_file()  # the run wrote the cache
    runs = cache / "fixture-runs/helper-eval.json"
    assert runs.is_file(), "no scheduled run recorded its fixtures' outcomes"
    assert len(json.loads(runs.read_text())["records"]) == 2
