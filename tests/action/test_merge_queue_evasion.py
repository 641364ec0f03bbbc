"""A queued pull request that tries to turn its group's check green without fixing its
agent: the group gates as a pull request does, with the definitions, fixtures and caches
of the group's parent, never of the commit the queue made of it."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import (
    merge_group_event,
    pull_request_event,
    queue_group,
    run_action,
    run_group,
)
from support.gitrepo import GitRepo
from support.suite import (
    GREETING_FIXTURE,
    HEAD_PROMPT,
    SUPPORT_BOT,
    SUPPORT_EVAL,
    make_pr,
    script_model,
)

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"
CHECKED = {"check-run": "true"}


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


def labeled_on_its_head(
    repo: GitRepo, github: FakeGitHub, base: str, head: str, env: dict[str, str]
) -> None:
    """A maintainer applies the bypass label on pull request 7 at `head`, and its gate on
    the `labeled` event records that head in its comment."""
    github.permissions["maintainer"] = "maintain"
    github.add_label(7, LABEL, actor="maintainer")
    labeled = pull_request_event(
        github.repository,
        7,
        base,
        head,
        [LABEL],
        action="labeled",
        label=LABEL,
        sender="maintainer",
    )
    assert run_action(repo.path, github, labeled, env=env).outputs["result"] == "bypassed"


def test_a_group_whose_queue_branch_names_a_labeled_pull_request_it_does_not_merge_is_no_bypass(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Pull request 7 is labeled on its head; a group that merges something else (here that
    head and a commit more, as another pull request would) names #7 in its queue branch.
    The label covers #7's head merged onto main, which this group is not: refused."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    labeled_on_its_head(repo, github, base, head, env)
    repo.checkout("feature")
    other = repo.commit("another pull request's commit", {"agents/extra.txt": "more\n"})
    group = queue_group(repo, base, other, number=8)

    run = run_group(
        repo, github, merge_group_event(github.repository, 7, base, group), env, CHECKED
    )

    assert run.returncode == 1, run.stdout + run.stderr
    record = json.loads(run.outputs["audit"])
    assert (record["outcome"], record["pull_request"], record["head_sha"]) == ("refused", 7, group)
    assert record["reason"].startswith(
        f"the group's commit {group[:12]} is not pull request #7's head"
    )
    (check,) = github.check_runs
    assert (check["head_sha"], check["conclusion"]) == (group, "failure")


def test_a_group_that_moves_its_agent_to_a_provider_without_a_key_is_not_a_skip(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """`on-missing-secrets: skip` (set for forks' pull requests) covers a key the base
    branch's own settings need; a group whose commit moves its agent to a provider with no
    key fails, as the pull request's own gate does, and its check never reads green."""
    base, _ = make_pr(repo, github)
    switched = SUPPORT_BOT.format(prompt=HEAD_PROMPT).replace(
        "openai/gpt-test", "anthropic/claude-test"
    )
    head = repo.commit("another provider", {"agents/support-bot.yaml": switched})
    github.pulls[7].head_sha = head
    group = queue_group(repo, base, head)
    inputs = {**CHECKED, "on-missing-secrets": "skip"}

    run = run_group(repo, github, merge_group_event(github.repository, 7, base, group), env, inputs)

    assert run.returncode == 2, run.stdout + run.stderr
    assert run.outputs.get("result") != "skipped"
    assert "`on-missing-secrets: skip` does not apply" in run.stderr
    assert all(c["conclusion"] != "success" for c in github.check_runs)


def test_a_group_whose_base_branch_github_cannot_name_does_not_run_or_pass(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """GitHub's API fails to say where the base branch is: nothing is gated against a guess
    (the group's parent, which may hold pull requests queued ahead). The job fails."""
    base, head = make_pr(repo, github)
    group = queue_group(repo, base, head)
    github.fail("GET", r"/branches/main$", 500)

    run = run_group(
        repo, github, merge_group_event(github.repository, 7, base, group), env, CHECKED
    )

    assert run.returncode == 3, run.stdout + run.stderr
    assert run.outputs["result"] == "incomplete"
    assert "read the branch main" in run.stderr
    assert model.requests == []
