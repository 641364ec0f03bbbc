"""A pathological regex cannot hang a run, and a run where nothing ran is never a green check."""

from __future__ import annotations

import pytest

from evalward.resources.models import RegexAssertion
from evalward.rundata.results import Status
from evalward.rundata.trace import StepType, Trace
from evalward.scoring.assertions import check
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import SUPPORT_EVAL, make_pr, provider_env, script_model

pytestmark = pytest.mark.hostile


def test_a_catastrophic_regex_is_an_error_not_a_hang() -> None:
    trace = Trace()
    trace.add(StepType.final, content="a" * 5000 + "!")
    assertion = RegexAssertion(type="regex", pattern="(a+)+$")
    status, message = check(assertion, trace, regex_timeout=0.2)
    assert status is Status.error
    assert "did not finish within 0.2 s" in message


def env_for(model: ScriptedModelServer) -> dict[str, str]:
    return provider_env(model)


def test_a_changed_agent_whose_evals_select_no_fixture_is_not_a_pass(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = make_pr(repo, github)
    repo.checkout("main")
    base = repo.commit(
        "the Eval selects nothing",
        {"evals/support-bot.yaml": SUPPORT_EVAL.replace("agent: support-bot", "agent: nobody")},
    )
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge")
    head = repo.head()
    github.pulls[7].head_sha, github.pulls[7].base_sha = head, base
    script_model(model, head_greets_well=True)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env_for(model)
    )

    # an Eval with no fixture is a mistake in the base's definitions: nothing runs, and the
    # gate fails until they are fixed (exit 2), saying where
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    said = "evals/support-bot.yaml:8:5: spec.fixtureSelector.matchLabels: Eval 'support-bot-eval'"
    body = github.comments_on(7)[0]["body"]
    assert "do not load" in body and said in body and said in run.summary
    assert "selects no fixture" in body
    assert model.requests == []


def test_an_empty_plan_from_a_config_error_is_exit_2_not_a_pass(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = make_pr(repo, github)
    repo.write({"evalward.yaml": "roots: [nowhere]\n"})
    head = repo.commit("a root that does not exist")
    github.pulls[7].head_sha = head

    event = pull_request_event(github.repository, 7, base, head)
    # By default the base's evalward.yaml decides where resources live: the PR's is not read.
    ignored = run_action(repo.path, github, event, env=env_for(model))
    assert ignored.returncode == 1, ignored.stdout + ignored.stderr
    assert "nowhere" not in ignored.stderr

    run = run_action(repo.path, github, event, env=env_for(model), inputs={"gate-config": "head"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert "evalward.yaml:1:9: roots[0]: root 'nowhere' is not a folder" in run.stderr
    assert run.outputs.get("result") != "pass"
    assert not (run.output_dir / "results.json").exists() or run.results()["result"] != "pass"
