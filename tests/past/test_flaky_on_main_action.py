"""Flakiness learnt on the default branch, through the action: its push runs record each
fixture's outcomes in the result cache; a pull request that breaks a fixture which flips on
main is shown that fixture as flaky on main with its rate, and (`flakyOnMain:
doesNotBlockAlone`, the default) it does not block alone."""

from __future__ import annotations

import json

import pytest

from action.test_github_events import real_payload
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.answered import ADAPTIVE_EVAL, AGENT, commit_suite, scripted
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

NAMES = ["f0", "f1", "f2", "f3"]


def test_a_fixture_that_flips_on_main_is_shown_flaky_and_does_not_block_alone(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = commit_suite(repo, ADAPTIVE_EVAL, NAMES)
    repo.branch("feature")
    head = repo.commit("a new prompt", {"agent.yaml": AGENT.format(version="v2")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    # on main, f1 is right every other time; on the pull request's head it is never right
    right = {name: [True] * 40 for name in NAMES}
    scripted(model, "v1", {**right, "f1": [True, False] * 20})
    scripted(model, "v2", {**right, "f1": [False] * 40})

    repo.checkout("main")
    for _ in range(2):  # two runs of the default branch, the agent unchanged between them
        pushed = run_action(
            repo.path,
            github,
            {**real_payload("push"), "ref": "refs/heads/master", "after": base},
            env=env,
            event_name="push",
        )
        assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    log = json.loads((repo.path / ".evalward/cache/fixture-runs/helper-eval.json").read_text())
    assert len(log["records"]) == 2
    f1 = [record["fixtures"]["f1"] for record in log["records"]]
    assert all(0 < passes < runs for passes, runs in f1)

    repo.checkout("feature")
    gated = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert gated.returncode == 0, gated.stdout + gated.stderr
    (result,) = [e for e in gated.results()["evals"] if e["side"] == "head"]
    (call,) = [f for f in result["sequential"]["fixtures"] if f["fixture"] == "f1"]
    assert call["head_passes"] == 0 and call["head_runs"] >= 3
    assert call["blocks"] is False
    rate = sum(p for p, _ in f1) / sum(n for _, n in f1)
    assert call["flaky_on_main"] == pytest.approx(rate)
    body = github.comments_on(7)[0]["body"]
    assert f"flaky on main ({100 * rate:.0f} % pass)" in body


def test_a_flakiness_record_the_pull_request_commits_is_not_read(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The pull request forges a record calling the fixture it breaks flaky on main: the
    result cache is not trusted, nothing is flaky, and the broken fixture blocks."""
    base = commit_suite(repo, ADAPTIVE_EVAL, NAMES)
    repo.branch("feature")
    forged = {
        "eval": "helper-eval",
        "records": [
            {"commit": base, "when": "2099-01-01T00:00:00+00:00", "version": "any",
             "agent": "any", "fixtures": {"f1": [1, 4]}}
        ] * 3,
    }  # fmt: skip
    record = ".evalward/cache/fixture-runs/helper-eval.json"
    repo.write({"agent.yaml": AGENT.format(version="v2"), record: json.dumps(forged)})
    repo.git("add", "-f", record)  # committed past the .gitignore
    head = repo.commit("a new prompt, and a record that excuses it")
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    right = {name: [True] * 40 for name in NAMES}
    scripted(model, "v1", right)
    scripted(model, "v2", {**right, "f1": [False] * 40})

    gated = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert gated.returncode == 1, gated.stdout + gated.stderr
    (result,) = [e for e in gated.results()["evals"] if e["side"] == "head"]
    (call,) = [f for f in result["sequential"]["fixtures"] if f["fixture"] == "f1"]
    assert call["blocks"] is True and call["flaky_on_main"] is None
    assert "result cache not used" in gated.stdout
    assert "flaky on main" not in github.comments_on(7)[0]["body"]
