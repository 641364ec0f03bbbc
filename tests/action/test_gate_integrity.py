"""The baseline, the result cache, the budget and a gate the PR cannot weaken — through the
action's entry point, on real repositories, with the fake GitHub API and the model server."""

from __future__ import annotations

import shutil

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support import resultdb
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import (
    BASE_PROMPT,
    HEAD_PROMPT,
    SUPPORT_BOT,
    SUPPORT_EVAL,
    make_pr,
    script_model,
)

pytestmark = pytest.mark.e2e


def test_a_rerun_on_an_unchanged_head_makes_no_model_call(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    event = pull_request_event(github.repository, 7, base, head)

    first = run_action(repo.path, github, event, env=env)
    calls = len(model.requests)
    assert first.returncode == 0, first.stderr
    assert calls > 0
    assert first.results()["cacheHits"] == 0

    again = run_action(repo.path, github, event, env=env)
    assert again.returncode == 0, again.stderr
    assert len(model.requests) == calls, "the rerun reached the model server"
    assert again.results()["cacheHits"] == 4  # two fixtures, base and head
    assert again.results()["evals"] == first.results()["evals"]
    assert "4 run(s) reused from the result cache" in github.comments_on(7)[0]["body"]
    # no program ran, so no side took a turn: nothing to keep apart, wait for or sweep
    assert "evalward: sides take turns" in first.stdout
    assert "evalward: sides take turns" not in again.stdout
    assert "removed at each turn" not in again.stdout

    off = run_action(repo.path, github, event, env=env, inputs={"cache": "off"})
    assert off.returncode == 0
    assert len(model.requests) > calls


def test_a_pr_cannot_pass_with_results_it_committed_to_the_cache(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Cache keys are computable from the PR's own files: a PR could commit "cached" passing
    results for its head. A cache directory holding committed files is not read."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    event = pull_request_event(github.repository, 7, base, head)
    honest = run_action(repo.path, github, event, env=env)
    assert honest.returncode == 1, honest.stderr

    cache = repo.path / ".evalward" / "cache"
    forged = resultdb.stored(cache)
    for result in forged.values():
        result.update(status="pass", score=1.0, verdict="pass")
        for assertion in result["assertions"]:
            assertion.update(status="pass", score=1.0)
    assert len(forged) == 4
    resultdb.store(cache, forged)
    database = resultdb.database(cache).read_bytes()
    shutil.rmtree(cache)
    resultdb.database(cache).parent.mkdir(parents=True)
    resultdb.database(cache).write_bytes(database)
    assert resultdb.stored(cache) == forged  # what is committed holds the forged passes
    forged_head = repo.commit("results, precomputed")
    github.pulls[7].head_sha = forged_head
    calls = len(model.requests)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, forged_head), env=env
    )
    assert run.returncode == 1, run.stderr
    assert run.results()["cacheHits"] == 0
    assert len(model.requests) > calls, "the runs were taken from the committed files"
    assert "::warning::result cache not used: 1 file(s) under .evalward/cache are committed" in (
        run.stdout
    )


def test_a_pr_cannot_lower_its_own_threshold(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = repo.commit(
        "base",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/support-bot.yaml": SUPPORT_EVAL,
            **_fixtures(),
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "a worse prompt, and a lower bar",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT),
            "evals/support-bot.yaml": SUPPORT_EVAL.replace("0.9", "0.5"),
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)
    event = pull_request_event(github.repository, 7, base, head)

    run = run_action(repo.path, github, event, env=env)
    assert run.returncode == 1, run.stderr
    head_eval = next(e for e in run.results()["evals"] if e["side"] == "head")
    assert head_eval["pass_threshold"] == 0.9
    assert run.results()["gateChanges"] == [
        "Eval support-bot-eval: spec.scoring.passThreshold changed"
    ]
    body = github.comments_on(7)[0]["body"]
    assert "This PR changes its own gate" in body
    assert "take effect once merged" in body

    own = run_action(repo.path, github, event, env=env, inputs={"gate-config": "head"})
    assert own.returncode == 0, own.stderr
    assert "gates with the PR's own definitions" in github.comments_on(7)[0]["body"]


def test_over_budget_the_most_severe_fixtures_run_and_the_gate_is_incomplete(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    event = pull_request_event(github.repository, 7, base, head)

    # order-status (high) needs an estimated 2 calls per side; greeting (low) 2 more per side
    run = run_action(
        repo.path, github, event, env=env, inputs={"max-model-calls": "4", "cache": "off"}
    )
    assert run.returncode == 1, run.stderr
    assert run.outputs["result"] == "incomplete"
    ran = {(f["fixture"], f["side"]) for f in run.results()["fixtures"]}
    assert ran == {("order-status", "head"), ("order-status", "base")}
    assert {r["fixture"] for r in run.results()["skippedRuns"]} == {"greeting"}
    assert "skipped by the budget" in github.comments_on(7)[0]["body"]
    assert len(model.requests) == 4
    # the log says what the plan was estimated to need and what the run spent
    assert "evalward: estimated 4 model calls, ~" in run.stdout
    assert "; actual 4 model calls, " in run.stdout

    allowed = run_action(
        repo.path,
        github,
        event,
        env=env,
        inputs={"max-model-calls": "4", "allow-incomplete": "true", "cache": "off"},
    )
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.outputs["result"] == "pass"


def test_fail_on_regression_any_blocks_a_regression_above_the_threshold(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = repo.commit(
        "base",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/support-bot.yaml": SUPPORT_EVAL.replace("0.9", "0.75"),
            **_fixtures(),
        },
    )
    repo.branch("feature")
    head = repo.commit("worse", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)
    event = pull_request_event(github.repository, 7, base, head)

    default = run_action(repo.path, github, event, env=env)
    assert default.returncode == 0, default.stderr  # 0.80 >= 0.75: only thresholds gate
    passing = github.comments_on(7)[0]["body"]
    assert "every affected Eval passes — 1 regression, not blocking" in passing
    assert "### Failing fixtures — worst first\n1. 🔻 **low** · [support-bot-eval / greeting]" in (
        passing
    )

    strict = run_action(repo.path, github, event, env=env, inputs={"fail-on-regression": "any"})
    assert strict.returncode == 1
    assert "regression" in strict.results()["reason"]

    significant = run_action(
        repo.path, github, event, env=env, inputs={"fail-on-regression": "significant"}
    )
    assert significant.returncode == 0  # one fixture, one rep: p = 0.5, inconclusive


def test_a_deleted_agent_fails_the_gate_its_evals_did_not_run(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, _ = make_pr(repo, github)
    repo.checkout("main")
    repo.branch("drop-tutor")
    repo.remove("agents/math-tutor.yaml")
    head = repo.commit("drop the math tutor")
    github.add_pull(FakePull(number=8, head_sha=head, base_sha=base))

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 8, base, head), env=env
    )
    assert run.returncode == 1, run.stderr
    assert run.outputs["result"] == "fail"
    body = github.comments_on(8)[0]["body"]
    assert "Removed by this change: agents math-tutor; Evals math-tutor-eval." in body
    assert "agent math-tutor was removed; its Eval math-tutor-eval did not run" in body
    assert run.results()["notRun"] == {"math-tutor-eval": "agent math-tutor was removed"}
    assert model.requests == []


def _fixtures() -> dict[str, str]:
    from support.suite import GREETING_FIXTURE, ORDER_FIXTURE

    return {
        "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
        "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
    }


@pytest.mark.usefixtures("head_strays_read")
def test_a_push_to_the_default_branch_makes_the_next_pr_baseline_free(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    from action.test_github_events import real_payload
    from fakes.model_server import text

    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))
    repo.checkout("main")
    payload = {**real_payload("push"), "ref": "refs/heads/master", "after": base}
    pushed = run_action(repo.path, github, payload, env=env, event_name="push")
    assert pushed.returncode == 0, pushed.stderr
    assert model.requests_mentioning("BASE-V1")

    repo.checkout("feature")
    seen = len(model.requests)
    gated = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )
    assert gated.returncode == 0, gated.stderr
    new_requests = model.requests[seen:]
    assert new_requests, "the head must run"
    assert all("BASE-V1" not in str(r) for r in new_requests), "the baseline was run again"
    base_runs = [f for f in gated.results()["fixtures"] if f["side"] == "base"]
    assert len(base_runs) == 2 and all(f["cached"] for f in base_runs)
