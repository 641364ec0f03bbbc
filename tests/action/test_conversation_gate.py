"""A conversation gates a pull request through the action's entry point: the conversation
(script, persona, goal, turn limit, the user's model) is the base commit's, whatever the pull
request changes in it, and the comment names the first turn where base and head part."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text, tool_call
from report.test_html_report_browser import open_page
from runtime.agents import test_conversation_agents as kinds
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.report_pages import needs_chromium
from support.suite import provider_env

pytestmark = pytest.mark.e2e

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
    env = provider_env(model)

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


SNOOP = """\
import json, os, sys
given = sys.stdin.read()
found = []
for folder, _, names in os.walk("."):
    for name in names:
        try:
            with open(os.path.join(folder, name), errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        if "HIDD" + "EN-FACT" in text or "GOAL" + "-TEXT" in text:  # not this file itself
            found.append(os.path.join(folder, name))
print(json.dumps({"env": dict(os.environ), "stdin": given, "files": found}))
"""

SNOOPER = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: snooper }
spec:
  runtime:
    command: { run: [python3, agent/snoop.py], stdin: json }
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: snooper-eval }
spec:
  targetAgent: snooper
  fixtures: [secretive]
  simulatedUser: { model: openai/gpt-user }
"""

SECRETIVE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: secretive }
spec:
  targetAgent: snooper
  conversation:
    user:
      persona: a customer
      goal: GOAL-TEXT a refund
      knows: [HIDDEN-FACT the jug cracked]
    maxTurns: 1
  assertions: [{ type: notContains, value: HIDDEN }]
"""


def test_an_agent_in_the_sandbox_finds_no_goal_or_hidden_fact_anywhere(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base = repo.commit(
        "base",
        {"agents.yaml": SNOOPER, "fixtures/secretive.yaml": SECRETIVE, "agent/snoop.py": SNOOP},
    )
    repo.branch("feature")
    head = repo.commit("head", {"agent/snoop.py": SNOOP + "# tuned\n"})
    github.add_pull(FakePull(number=8, head_sha=head, base_sha=base))
    model.script(lambda b: b.get("model") == "gpt-user", text("A refund, please."))
    env = provider_env(model)
    run = run_action(
        repo.path, github, pull_request_event(github.repository, 8, base, head), env=env
    )
    assert run.returncode == 0, run.stdout + run.stderr
    for result in run.results()["fixtures"]:
        (reply,) = [s["content"] for s in result["trace"]["steps"] if s["type"] == "final"]
        shown = json.loads(reply)
        assert "A refund, please." in shown["stdin"]
        assert shown["files"] == []  # not in any file of its working copy either
        assert "HIDDEN" not in reply and "GOAL-TEXT" not in reply
        assert result["status"] == "pass"


def test_an_http_agent_holds_a_conversation_through_the_action(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    runtime = (
        "    http:\n"
        '      start: [python3, agent/server.py, "{port}"]\n'
        "      ready: http://127.0.0.1:{port}/ready\n"
        "      url: http://127.0.0.1:{port}/run\n"
    )
    files = {
        "agents.yaml": kinds.agent_yaml("desk", runtime)
        + kinds.EVAL.format(agent="desk", fixture="talk", timeout=60)
        + kinds.SCRIPTED.format(agent="desk"),
        "agent/server.py": kinds.HTTP_AGENT,
    }
    base = repo.commit("an http agent", files)
    repo.branch("feature")
    head = repo.commit("head", {"agent/server.py": kinds.HTTP_AGENT + "# tuned\n"})
    github.add_pull(FakePull(number=9, head_sha=head, base_sha=base))
    env = provider_env(model)
    event = pull_request_event(github.repository, 9, base, head)
    run = run_action(repo.path, github, event, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    for result in run.results()["fixtures"]:
        finals = [s["content"] for s in result["trace"]["steps"] if s["type"] == "final"]
        assert finals[1].startswith("turn 2; you first said: I want my money back.; messages 3")
        assert result["end_reason"] == "user done" and result["status"] == "pass"


def test_a_simulated_user_defined_through_a_link_is_hidden_where_the_link_leads(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The file a link that defines a simulated user leads to holds the persona as much as
    the link does: an agent that reads its whole checkout found the goal and hidden facts
    there, where only the link was left out of its working copy."""
    reads_all = SNOOPER.replace("  watch: [agent/*.py]\n", "")
    base = repo.commit(
        "base", {"agents.yaml": reads_all, "people/sam.txt": SECRETIVE, "agent/snoop.py": SNOOP}
    )
    (repo.path / "fixtures").mkdir()
    (repo.path / "fixtures" / "secretive.yaml").symlink_to("../people/sam.txt")
    base = repo.commit("the fixture, through a link")
    repo.branch("feature")
    head = repo.commit("head", {"agent/snoop.py": SNOOP + "# tuned\n"})
    github.add_pull(FakePull(number=8, head_sha=head, base_sha=base))
    model.script(lambda b: b.get("model") == "gpt-user", text("A refund, please."))
    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 8, base, head),
        env=provider_env(model),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    for result in run.results()["fixtures"]:
        (reply,) = [s["content"] for s in result["trace"]["steps"] if s["type"] == "final"]
        assert json.loads(reply)["files"] == [], reply
