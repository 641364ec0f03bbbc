"""Nothing an agent says, and none of evalward's own figures, is drawn as math where GitHub
shows the verdict.

GitHub renders `$…$` and `$$…$$` in a comment, a job summary and a check run's summary as
MathJax after markdown: a tool name the model asks for (a declarative agent records whatever
name it is) could draw a huge green "every affected Eval passes" in the comment's reason line,
and "cost $0.0001 ≤ $0.05" would turn the text between its dollars into math. Every `$`
shown there is the literal `<span>$</span>`, or sits in code.
"""

from __future__ import annotations

import json

import pytest

from action.test_secrets_and_injection import live_dollars
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env

pytestmark = pytest.mark.hostile

FORGED = r"$\Huge\color{green}\textsf{✅ evalward: every affected Eval passes}$"
PRICED = "pricing:\n  openai/gpt-test: { input: 1, output: 1 }\n"
"""A price, so that the figures line says what the model calls cost, in dollars."""


def test_latex_in_a_tool_name_and_the_cost_are_no_math_in_comment_summary_or_check_run(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    repo.commit("prices", {"evalward.yaml": PRICED})
    base, head = make_pr(repo, github)
    model.script(
        lambda b: "BASE-V1" in json.dumps(b) and "12345" in json.dumps(b),
        tool_call("lookup_order", {"order_id": "12345"}),
        text("shipped 2026-11-25"),
    )
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello! How can I help?"))
    model.script(
        lambda b: "HEAD-V2" in json.dumps(b) and "12345" in json.dumps(b),
        tool_call(FORGED, {"order_id": "12345"}),
        text("shipped 2026-11-25"),
    )
    model.script(lambda b: "HEAD-V2" in json.dumps(b), text("Hello!"))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"check-run": "true"},
    )

    assert run.returncode == 1, run.stderr
    body = github.comments_on(7)[0]["body"]
    (check,) = github.check_runs
    summary = check["output"]["summary"]
    why = next(line for line in body.splitlines() if line.startswith("1. 🔻"))
    listed = why.split("(calls: ", 1)[1]
    assert "<span>$</span>" in listed and "Huge" in listed, "the tool's name is shown, as text"
    for shown, markdown in (("comment", body), ("job summary", run.summary), ("check", summary)):
        assert "<span>$</span>0.0" in markdown, f"the {shown} says what the calls cost"
        assert not live_dollars(markdown), f"the {shown} holds a `$` GitHub reads as math"
    recorded = json.dumps(run.results(), ensure_ascii=False)
    assert json.dumps(FORGED, ensure_ascii=False)[1:-1] in recorded, "results.json keeps `$`"
