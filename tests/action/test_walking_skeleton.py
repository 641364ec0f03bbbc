"""One pull request gated end to end: real git repo, `python -m evalward` as a subprocess,
a fake GitHub API and a scripted OpenAI-compatible model server on loopback."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import HEAD_PROMPT, make_pr, script_model

pytestmark = pytest.mark.e2e


def test_failing_change_is_gated_commented_and_compared_with_base(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    # 6. the check: an affected Eval fails, so the process fails
    assert run.returncode == 1, run.stderr

    # 1. change detection: math-tutor's Eval never ran
    assert model.requests_mentioning("MATH-TUTOR-PROMPT") == []
    results = run.results()
    assert results["changedAgents"] == {
        "support-bot": ["system changed in agents/support-bot.yaml"]
    }
    assert {e["eval"] for e in results["evals"]} == {"support-bot-eval"}

    # 2. candidate from the head, through the tool loop
    head_order = [r for r in model.requests_mentioning("HEAD-V2") if "12345" in json.dumps(r)]
    assert len(head_order) == 2
    first, second = head_order
    assert first["messages"][0] == {"role": "system", "content": HEAD_PROMPT}
    assert [t["function"]["name"] for t in first["tools"]] == [
        "lookup_order"
    ]  # disabled: not offered
    assistant, tool_message = second["messages"][-2:]
    assert assistant["tool_calls"][0]["function"]["name"] == "lookup_order"
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert json.loads(tool_message["content"]) == {"status": "shipped", "eta": "2026-11-25"}

    # 3. scoring as seed 003 defines it
    head_fixtures = {f["fixture"]: f for f in results["fixtures"] if f["side"] == "head"}
    assert head_fixtures["order-status"]["score"] == 1.0
    assert head_fixtures["order-status"]["status"] == "pass"
    # greeting: toolNotCalled (weight 1) fails, contains (weight 3) passes -> 3 / 4
    assert head_fixtures["greeting"]["score"] == pytest.approx(0.75)
    assert head_fixtures["greeting"]["status"] == "fail"
    head_eval = next(e for e in results["evals"] if e["side"] == "head")
    base_eval = next(e for e in results["evals"] if e["side"] == "base")
    # severity-weighted pass rate: high (2.0) passes, low (0.5) fails -> 2 / 2.5
    assert head_eval["score"] == pytest.approx(0.8)
    assert head_eval["passed"] is False
    assert base_eval["score"] == pytest.approx(1.0)

    # 4. baseline from the merge base's definition
    assert model.requests_mentioning("BASE-V1"), "the base agent never ran"

    # 5. one comment with the marker, base -> head, and the regression
    comments = github.comments_on(7)
    assert len(comments) == 1
    body = comments[0]["body"]
    assert body.startswith("<!-- evalward-comment:evals/gate -->")
    assert "1.00 → **0.80**" in body
    assert (
        "### Why it is blocked — worst first\n- support-bot-eval: score 0.80 is below its "
        "threshold 0.90 — failing greeting (base 1/1 → head 0/1)\n\n1. 🔻 **low** · "
    ) in body
    assert "support-bot-eval / greeting" in body
    assert "sk-test-secret-value" not in body

    # 8. job summary and outputs
    assert "support-bot-eval" in run.summary
    assert run.outputs["result"] == "fail"
    assert run.outputs["score"] == "0.80"

    # 5. a second run edits the comment instead of adding another
    again = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )
    assert again.returncode == 1
    assert len(github.comments_on(7)) == 1
    assert any(r.method == "PATCH" for r in github.requests)


def test_passing_change_exits_zero(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 0, run.stderr
    assert run.outputs["result"] == "pass"
    assert run.outputs["score"] == "1.00"
    assert "every affected Eval passes" in github.comments_on(7)[0]["body"]
    assert run.json_lines() == []


def bypassed_by(
    actor: str, repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> tuple[ActionRun, str]:
    """A failing pull request (octocat's) that `actor`, with write access, labels to bypass."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    github.add_label(7, "force-eval-bypass", actor=actor)
    github.permissions[actor] = "write"
    event = pull_request_event(
        github.repository, 7, base, head,
        labels=["force-eval-bypass"], action="labeled", label="force-eval-bypass", sender=actor,
    )  # fmt: skip
    return run_action(repo.path, github, event, env=env), head


def test_bypass_label_passes_the_gate_and_is_audited(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    run, head = bypassed_by("alice", repo, github, model, env)

    assert run.returncode == 0, run.stderr
    assert run.outputs["result"] == "bypassed"
    audit_lines = run.json_lines()
    assert len(audit_lines) == 1
    record = audit_lines[0]
    assert record["event"] == "eval_gate_bypass"
    assert record["actor"] == "alice"
    assert record["actor_is_author"] is False  # the pull request is octocat's
    assert record["repository"] == "acme/agents"
    assert record["pull_request"] == 7
    assert record["head_sha"] == head
    assert record["run_url"] == "https://github.example/acme/agents/actions/runs/4242"
    assert record["failing_evals"] == ["support-bot-eval"]
    assert record["failing_fixtures"] == {"support-bot-eval": ["greeting"]}
    assert record["timestamp"]
    assert any(
        line.startswith("::warning::") and "alice" in line for line in run.stdout.splitlines()
    )
    body = github.comments_on(7)[0]["body"]
    assert "### ⚠️ Bypass" in body and "**alice**" in body
    audit_file = (run.output_dir / "audit.jsonl").read_text().splitlines()
    assert json.loads(audit_file[0])["actor"] == "alice"


def test_an_author_who_bypasses_their_own_pull_request_is_named_as_its_author(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Write access is the rule, so the author may apply the label to their own pull request;
    whoever reads the audit sees that nobody else did."""
    run, _ = bypassed_by("octocat", repo, github, model, env)

    assert run.returncode == 0, run.stderr
    (record,) = run.json_lines()
    assert (record["actor"], record["actor_is_author"]) == ("octocat", True)
    assert "::warning::evalward gate bypassed by octocat (the pull request's own author)" in (
        run.stdout
    )
    body = github.comments_on(7)[0]["body"]
    assert "**octocat** (the pull request's own author, write permission)" in body
