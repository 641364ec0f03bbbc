"""A pull_request run whose own head is no longer the pull request's: a re-run of an older run
(GitHub replays its payload), or a run a push overtook before it started.

GitHub writes the job's conclusion as the check named after the job (`gate`) on the head
the run's event names (`pull_request.head.sha`): the check the workflow's branch protection
requires. So the run gates that head, whatever GitHub's API says the pull request's head is
now: a run that gated the newer head would turn the older head's check green with the newer
head's pass. Run as the runner runs the action: a real repository, the fake GitHub API and
the scripted model server.
"""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import BASE_PROMPT, SUPPORT_BOT, make_pr, script_model

pytestmark = pytest.mark.hostile


def test_a_re_run_of_a_failing_head_s_run_gates_that_head_not_the_newer_one(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The head that breaks the greeting failed its run; the author pushes a head that takes
    the change back (it passes: no agent changed), then re-runs the failing head's run. That
    run's job is the check on the failing head, so it must fail again."""
    base, failing = make_pr(repo, github)
    newer = repo.commit(
        "take the prompt back", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT)}
    )
    github.pulls[7].head_sha = newer  # the API's head: the re-run replays the older payload
    repo.checkout(failing)  # what actions/checkout checks out for the replayed event
    script_model(model, head_greets_well=False)

    event = pull_request_event(github.repository, 7, base, failing)
    inputs = {"check-run": "true", "comment": "always"}
    run = run_action(repo.path, github, event, env=env, inputs=inputs)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    assert [(c["head_sha"], c["conclusion"]) for c in github.check_runs] == [(failing, "failure")]
    assert f"head moved on to {newer[:12]}" in run.stdout, run.stdout
    assert github.comments_on(7) == [], "the older head's comment over the newer one's"


def test_control_a_run_of_the_head_that_stands_gates_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, failing = make_pr(repo, github)
    script_model(model, head_greets_well=False)

    event = pull_request_event(github.repository, 7, base, failing)
    run = run_action(repo.path, github, event, env=env, inputs={"check-run": "true"})

    assert run.returncode == 1, run.stdout + run.stderr
    assert [(c["head_sha"], c["conclusion"]) for c in github.check_runs] == [(failing, "failure")]


def test_a_pull_request_event_that_names_no_head_commit_is_refused(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    event = pull_request_event(github.repository, 7, base, head)
    del event["pull_request"]["head"]["sha"]

    run = run_action(repo.path, github, event, env=env)

    assert run.returncode == 2, run.stdout + run.stderr
    assert "`pull_request.head.sha` is missing" in run.stdout + run.stderr
    assert github.check_runs == [] and github.comments_on(7) == []
