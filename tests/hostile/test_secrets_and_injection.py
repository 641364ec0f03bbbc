"""Secrets never leave the runner, and agent or judge output cannot restructure the comment."""

from __future__ import annotations

import json
import re

import pytest

from actionrun import ActionRun, pull_request_event, run_action
from e2e.test_walking_skeleton import make_pr
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from gitrepo import GitRepo

SECRETS = {
    "OPENAI_API_KEY": "sk-test-secret-value",
    "DEPLOY_TOKEN": 'dpl_tok&<en>"42',
    "MY_SECRET_NOTE": "p@ss w0rd|with*stars_",
    "STRIPE_KEY": "rk_live_\\back\\slash",
}


def everything_written(run: ActionRun, github: FakeGitHub) -> dict[str, str]:
    out = run.output_dir
    written = {p.name: p.read_text() for p in out.iterdir() if p.is_file()}
    written["summary"] = run.summary
    written["stdout"] = run.stdout
    written["stderr"] = run.stderr
    written["outputs"] = json.dumps(run.outputs)
    for index, comment in enumerate(github.comments_on(7)):
        written[f"comment {index}"] = comment["body"]
    return written


@pytest.fixture
def echoing_run(repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer) -> ActionRun:
    base, head = make_pr(repo, github)
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello! shipped 2026-11-25"))
    leak = " ".join([*SECRETS.values(), github.token])
    # Long enough that the reports are written in several streamed pieces (report.html and
    # results.json are redacted as they are written): the secrets sit early and late.
    padding = "and more " * 12_000
    reply = f"Sure, here are the keys: {leak} {padding} once more: {leak}"
    model.script(lambda b: "HEAD-V2" in json.dumps(b), text(reply))
    env = {"OPENAI_BASE_URL": model.base_url, **SECRETS}
    return run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )


def test_no_secret_value_appears_anywhere_even_when_the_agent_echoes_it(
    echoing_run: ActionRun, github: FakeGitHub
) -> None:
    run = echoing_run
    assert run.returncode == 1, run.stderr
    written = everything_written(run, github)
    assert {"results.json", "report.html", "junit.xml", "comment.md", "comment 0"} <= set(written)
    assert "the keys:" in written["results.json"]  # the echo itself was recorded
    assert "once more:" in written["report.html"] and len(written["report.html"]) > 200_000
    for name, content in written.items():
        for secret in [*SECRETS.values(), github.token]:
            forms = {secret, json.dumps(secret)[1:-1], secret.replace("&", "&amp;")}
            for form in forms:
                assert form not in content, f"{secret!r} leaks into {name} as {form!r}"
            core = re.sub(r"[^A-Za-z0-9]", "", secret)[4:12]
            assert core not in content, f"part of {secret!r} leaks into {name}"


HOSTILE = (
    "@octocat @acme/security-team please look. <img src=x onerror=alert(1)> "
    "</details></details> [click here](https://evil.example/phish) "
    "<!-- evalward:acme/agents --> ## ⚠️ Gate bypassed\n"
    "| Eval | Score |\n|---|---|\n| fake | 1.00 |\n```\n</details>"
)


def test_hostile_output_cannot_ping_inject_or_restructure_the_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = make_pr(repo, github)
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello! shipped 2026-11-25"))
    model.script(lambda b: "HEAD-V2" in json.dumps(b), text(HOSTILE))
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test-secret-value"}

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 1, run.stderr
    body = github.comments_on(7)[0]["body"]
    assert "onerror" in body, "the output is shown (escaped), not dropped"
    assert re.search(r"(?<![\w\u200b])@(octocat|acme)", body) is None, "a mention would ping"
    markup = outside_code(body)
    assert "<img" not in markup
    assert "](https://evil.example" not in markup, "a live markdown link"
    assert markup.count("<details") == markup.count("</details>")
    assert body.startswith("<!-- evalward") and markup.count("<!--") == 1, "one marker, first"
    assert "## ⚠️ Gate bypassed" not in markup
    assert re.search(r"^\| fake \| 1\.00 \|$", markup, re.MULTILINE) is None


def outside_code(body: str) -> str:
    """The comment without its fenced code blocks (inert: GitHub shows them verbatim)."""
    out: list[str] = []
    fence = ""
    for line in body.splitlines():
        if not fence and (m := re.match(r"^(`{3,})", line)):
            fence = m[1]
        elif fence and line.strip() == fence:
            fence = ""
        elif not fence:
            out.append(line)
    return "\n".join(out)


def test_hostile_judge_text_cannot_ping_inject_or_restructure_the_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, _ = make_pr(repo, github)
    judged = (repo.path / "evals/fixtures/greeting.yaml").read_text() + (
        "    - { type: judge, rubric: Greets the customer politely., minScore: 0.5 }\n"
    )
    eval_with_judge = (repo.path / "evals/support-bot.yaml").read_text() + (
        "  judge: { model: openai/judge-test }\n"
    )
    head = repo.commit(
        "judge the greeting",
        {"evals/fixtures/greeting.yaml": judged, "evals/support-bot.yaml": eval_with_judge},
    )
    github.pulls[7].head_sha = head
    verdict = {
        "score": 0.2,
        "confidence": 0.9,
        "summary": HOSTILE,
        "violations": [{"rule": HOSTILE, "severity": "high", "evidence_step": 1, "quote": HOSTILE}],
        "what_would_raise_score": HOSTILE,
    }
    model.script(lambda b: "EVALWARD-DATA" in json.dumps(b), text(json.dumps(verdict)))
    model.script("12345", text("Your order has shipped, arriving 2026-11-25."))
    model.script(lambda b: True, text("Hello! How can I help?"))
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test-secret-value"}

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"gate-config": "head", "cache": "off"},
    )

    assert run.returncode == 1, run.stderr
    assert model.requests_mentioning("EVALWARD-DATA"), "the judge never ran"
    body = github.comments_on(7)[0]["body"]
    assert "Judge violations" in body and "onerror" in body, "the verdict is shown, escaped"
    assert re.search(r"(?<![\w\u200b])@(octocat|acme)", body) is None, "a mention would ping"
    markup = outside_code(body)
    assert "<img" not in markup
    assert re.search(r"(?<!\\)\]\(https?://evil", markup) is None, "a live markdown link"
    assert "https://evil" not in markup, "a bare URL GitHub would autolink"
    assert markup.count("<details") == markup.count("</details>")
    assert body.startswith("<!-- evalward") and markup.count("<!--") == 1, "one marker, first"
    # inline judge text never starts a line, so it cannot open a heading or a table row
    assert re.search(r"^#+ ⚠️ Gate bypassed", markup, re.MULTILINE) is None
    assert re.search(r"^\| fake \| 1\.00 \|$", markup, re.MULTILINE) is None
