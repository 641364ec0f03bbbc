"""A queued pull request that tries to turn its group's check green without fixing its
agent: the group gates as a pull request does, with the definitions, fixtures and caches
of the group's parent, never of the commit the queue made of it."""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import merge_group_event, queue_group, run_group
from support.gitrepo import GitRepo
from support.suite import GREETING_FIXTURE, SUPPORT_EVAL, make_pr, script_model

pytestmark = pytest.mark.hostile


def test_a_queued_pull_request_that_edits_the_bases_eval_fixture_and_cache_fails_its_check(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Its head breaks the agent (support-bot-eval scores 0.80 against 0.90) and lowers the
    Eval's threshold, drops the greeting fixture's guard and commits a result cache: the
    parent's Eval and fixture gate, the cache is not read, and the check on the group's
    commit fails."""
    base, _ = make_pr(repo, github)
    repo.write({".evalward/cache/results.sqlite": "a pass, forged\n"})
    repo.git("add", "-f", ".evalward/cache")
    head = repo.commit(
        "and make the gate pass",
        {
            "evals/support-bot.yaml": SUPPORT_EVAL.replace("0.9", "0.5"),
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE.replace(
                "    - { type: toolNotCalled, tool: lookup_order }\n", ""
            ),
        },
    )
    github.pulls[7].head_sha = head
    group = queue_group(repo, base, head)
    script_model(model, head_greets_well=False)

    run = run_group(
        repo,
        github,
        merge_group_event(github.repository, 7, base, group),
        env,
        {"check-run": "true"},
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    scored = next(e for e in run.results()["evals"] if e["side"] == "head")
    assert (scored["eval"], scored["score"], scored["pass_threshold"]) == (
        "support-bot-eval",
        0.8,
        0.9,
    )
    assert "::warning::result cache not used:" in run.stdout
    assert "are committed in the repository" in run.stdout
    (check,) = github.check_runs
    assert (check["head_sha"], check["conclusion"]) == (group, "failure")
