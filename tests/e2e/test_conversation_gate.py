"""A conversation gates a pull request through the action's entry point: the conversation
(script, persona, goal, turn limit, the user's model) is the base commit's, whatever the pull
request changes in it, and the comment names the first turn where base and head part."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actionrun import pull_request_event, run_action
from e2e.report_pages import needs_chromium
from e2e.test_html_report_browser import open_page
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text, tool_call
from gitrepo import GitRepo

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: refunds }}
spec:
  models: [openai/gpt-agent]
  system: {prompt}
  tools:
    - name: lookup_order
      description: Look an order up.
      parameters: {{ type: object, properties: {{ id: {{ type: string }} }} }}
      mock: {{ output: delivered }}
"""

EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: refunds-eval }
spec:
  targetAgent: refunds
  fixtures: [scripted, simulated]
  simulatedUser: { model: openai/gpt-user }
"""

FIXTURES = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: scripted }}
spec:
  targetAgent: refunds
  conversation:
    turns:
      - user: {first}
      - user: It is order 12345.
        assertions: [{{ type: toolCalled, tool: lookup_order }}]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: simulated }}
spec:
  targetAgent: refunds
  conversation:
    user:
      persona: {persona}
      goal: {goal}
      knows: [{fact}]
    maxTurns: {turns}
  assertions: [{{ type: contains, value: refund }}]
"""

BASE_FIXTURES = FIXTURES.format(
    first="I want my money back.",
    persona="BASE-PERSONA a curt customer",
    goal="BASE-GOAL a refund",
    fact="BASE-FACT the jug cracked",
    turns=2,
)
HEAD_FIXTURES = FIXTURES.format(
    first="Say refund.",
    persona="HEAD-PERSONA an easy customer",
    goal="HEAD-GOAL nothing",
    fact="HEAD-FACT none",
    turns=1,
).replace("openai/gpt-user", "openai/gpt-head-user")


def agent_asked(body: dict[str, Any], prompt: str) -> bool:
    return body.get("model") == "gpt-agent" and prompt in json.dumps(body["messages"][0])


@needs_chromium
def test_the_base_conversation_judges_a_pull_request_that_rewrites_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, browser: Any
) -> None:
    base = repo.commit(
        "base",
        {
            "agents.yaml": AGENT.format(prompt="BASE-PROMPT look orders up."),
            "evals.yaml": EVAL,
            "fixtures.yaml": BASE_FIXTURES,
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "a lazier agent, and an easier conversation",
        {
            "agents.yaml": AGENT.format(prompt="HEAD-PROMPT never look anything up."),
            "fixtures.yaml": HEAD_FIXTURES,
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda b: b.get("model") == "gpt-user", text("A refund, please."))
    # The base agent looks the order up on turn 2; the head's does not.
    model.script(
        lambda b: agent_asked(b, "BASE-PROMPT"),
        text("Your order number?"),
        tool_call("lookup_order", {"id": "12345"}),
        text("Your refund is on its way."),
    )
    model.script(lambda b: agent_asked(b, "HEAD-PROMPT"), text("Your refund is on its way."))
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test-secret-value"}

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )
    assert run.returncode == 1, run.stdout + run.stderr

    fixtures = {(f["fixture"], f["side"]): f for f in run.results()["fixtures"]}
    for side in ("base", "head"):
        said = [
            s["content"]
            for s in fixtures[("scripted", side)]["trace"]["steps"]
            if s["type"] == "input"
        ]
        assert said == ["I want my money back.", "It is order 12345."], side
        assert fixtures[("simulated", side)]["turns"] == 2  # the base's maxTurns
    users = [r for r in model.requests if str(r.get("model", "")).endswith("-user")]
    assert users and all(r["model"] == "gpt-user" for r in users)
    assert all("BASE-GOAL" in json.dumps(r) for r in users)
    assert not any("HEAD-" in json.dumps(r) for r in users)

    assert fixtures[("scripted", "head")]["status"] == "fail"
    body = github.comments_on(7)[0]["body"]
    assert "Conversation — 2 turns, ended: user done · base and head first differ on turn 2" in (
        body
    )
    assert "| toolCalled · turn 2 | fail |" in body

    # report.html: the turns side by side, the first turn where they part marked
    sync_api = pytest.importorskip("playwright.sync_api")
    page = open_page(browser, (run.output_dir / "report.html").as_uri()).page
    page.locator("#rows .row", has_text="scripted").click()
    detail = page.locator("#detail")
    bands = detail.locator("table.timeline tr.turn-band")
    sync_api.expect(bands).to_have_count(2)
    assert bands.nth(0).inner_text() == "Turn 1"
    assert bands.nth(1).inner_text() == "Turn 2 \u25c6 first turn where base and head differ"
    sync_api.expect(detail.locator(".conversation-note")).to_have_text(
        "Conversation \u2014 base: 2 turns, ended: user done \u00b7 head: 2 turns, ended: user done"
    )
    rows = detail.locator("table.timeline tbody tr").all_inner_texts()
    assert any("lookup_order" in r for r in rows), rows  # base's turn 2
