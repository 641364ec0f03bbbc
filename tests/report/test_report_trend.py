"""report.html's trend and its links, through the action and the CLI as users run them: pushes
to the default branch log each Eval's score in the result cache, a pull request's report draws
them; local runs draw from the history; the comment and job summary link to the report."""

from __future__ import annotations

import json
import re

import pytest

from action.test_github_events import real_payload
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import make_pr, script_model

pytestmark = pytest.mark.e2e

REPORT_LINK = "📊 **[Full report](https://github.example/acme/agents/actions/runs/4242#artifacts)**"


def trend_cell(page: str, eval_name: str) -> str:
    row = re.search(
        rf'<tr>\s*<td[^>]*><a class="eval-link" href="#eval={eval_name}">.*?</tr>', page, re.S
    )
    assert row is not None, f"no summary row for {eval_name}"
    return row.group(0)


def test_pushes_to_the_default_branch_give_the_pull_requests_report_a_trend(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))
    repo.checkout("main")
    first = run_action(
        repo.path,
        github,
        {**real_payload("push"), "ref": "refs/heads/master", "after": base},
        env=env,
        event_name="push",
    )
    assert first.returncode == 0, first.stderr
    later = repo.commit("notes", {"NOTES.md": "unrelated\n", ".gitignore": ".evalward/\n"})
    second = run_action(
        repo.path,
        github,
        {**real_payload("push"), "ref": "refs/heads/master", "after": later},
        env=env,
        event_name="push",
    )
    assert second.returncode == 0, second.stderr
    log = json.loads((repo.path / ".evalward/cache/scores/support-bot-eval.json").read_text())
    assert log["branch"] == "master"
    assert [p["commit"] for p in log["points"]] == [base, later]
    assert all(p["score"] == 1.0 and p["passed"] for p in log["points"])

    repo.checkout("feature")
    gated = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )
    assert gated.returncode == 1, gated.stderr
    page = (gated.output_dir / "report.html").read_text()
    cell = trend_cell(page, "support-bot-eval")
    assert 'class="chart trend"' in cell and "commits on master" in cell
    assert f"{base[:7]}: 1.00 (pass)" in cell and f"{later[:7]}: 1.00 (pass)" in cell
    (score,) = [e["score"] for e in gated.results()["evals"] if e["side"] == "head"]
    assert score < 0.9 and f"this run: {score:.2f}" in cell
    # a pull request's run adds nothing to the default branch's log
    again = json.loads((repo.path / ".evalward/cache/scores/support-bot-eval.json").read_text())
    assert again == log
    # the comment and the job summary point at the report in the run's artifacts
    assert REPORT_LINK in github.comments_on(7)[0]["body"]
    assert REPORT_LINK in gated.summary
    assert 'href="https://github.example/acme/agents/actions/runs/4242#artifacts"' in page


def test_a_score_log_committed_by_the_pull_request_draws_no_trend(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, _ = make_pr(repo, github)
    forged = {
        "eval": "support-bot-eval",
        "branch": "master",
        "points": [{"score": 0.1, "passed": False, "when": "2026-01-01", "commit": "f" * 40}],
    }
    head = repo.commit(
        "a trend that makes the change look good",
        {".evalward/cache/scores/support-bot-eval.json": json.dumps(forged)},
    )
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=True)
    gated = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )
    assert gated.returncode == 0, gated.stderr
    assert "result cache not used" in gated.stdout
    page = (gated.output_dir / "report.html").read_text()
    cell = trend_cell(page, "support-bot-eval")
    # no Eval has earlier runs it may read: no trend column at all
    assert 'class="chart trend"' not in cell and "<th>Trend</th>" not in page


def test_local_runs_draw_the_trend_from_the_history(
    repo: GitRepo, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    from support.suite import GREETING_FIXTURE, SUPPORT_BOT, SUPPORT_EVAL

    commit = repo.commit(
        "agent",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt="BASE-V1"),
            "evals/support-bot.yaml": SUPPORT_EVAL,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        },
    )
    model.script("BASE-V1", text("Hello! How can I help?"))
    out = repo.path.parent / "out"
    for _ in range(2):
        done = evalward(
            "run", str(repo.path), "--no-cache", "--output-dir", str(out), cwd=repo.path, **env
        )
        assert done.returncode == 0, done.stderr
    history = json.loads((repo.path / ".evalward/history/support-bot-eval.json").read_text())
    assert [s["commit"] for s in history["history"]] == [commit, commit]
    cell = trend_cell((out / "report.html").read_text(), "support-bot-eval")
    assert "score over 1 local runs: 1.00; this run 1.00" in cell
    assert f"{commit[:7]}: 1.00 (pass)" in cell
