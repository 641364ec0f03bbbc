"""MCP servers written with the MCP SDK through the action's entry point, as GitHub runs it:
each side's stdio server started from its own commit, as that side's agent user, with no
secret, a private home and the run's playground, beside a streamable-HTTP server on loopback;
their tools in the trace, the report and the comment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.agentenv import needs_root, open_pr, run_gate, workspace
from support.documents import documents, eval_for
from support.mcpsuite import SDK_SERVER, fixture, http_server, mcp_agent, mcp_python

pytestmark = pytest.mark.e2e

__all__ = ["http_server", "workspace"]  # fixtures

SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL, status TEXT);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id TEXT, reason TEXT);
INSERT INTO orders VALUES ('A-1', 25.0, 'delivered');
"""
LOOK_UP = "Say who you are, then look the order up."
REFUND = "Say who you are, then refund the order."


def _suite(python: str, system: str, url: str) -> str:
    servers = f"""\
    orders:
      command:
        run: [{python}, mcp/server.py]
        env: [PYTHONPATH]
      tools: {{ allow: [lookup_order, refund_order, whoami] }}
    remote:
      url: {url}
      tools: {{ allow: [lookup_order] }}
"""
    agent = mcp_agent("desk", servers).replace(
        "  models: [openai/gpt-test]\n", f"  models: [openai/gpt-4.1-mini]\n  system: {system}\n"
    )
    return documents(
        agent,
        eval_for("desk", "fixtures: [desk-run]"),
        fixture(
            "desk-run",
            "desk",
            "{ type: toolCalled, tool: orders.lookup_order }",
            extra="  playground: { name: shop, sqlite: { seed: shop/seed.sql } }\n",
        ),
    )


@needs_root
def test_the_action_runs_each_sides_mcp_server_as_its_agent_user_and_reports_its_tools(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer, http_server: str
) -> None:
    python, isolation, packages = mcp_python()
    base = {
        "evals.yaml": _suite(python, LOOK_UP, http_server),
        "mcp/server.py": SDK_SERVER,
        "shop/seed.sql": SEED,
    }
    head = {"evals.yaml": _suite(python, REFUND, http_server)}
    event = open_pr(workspace, github, base, head, suite={})
    # both servers list lookup_order: the model is offered each qualified by its server
    whoami = tool_call("whoami", {})
    remote = tool_call("remote__lookup_order", {"order_id": "B-2"})
    lookup = tool_call("orders__lookup_order", {"order_id": "A-1"})
    model.script(LOOK_UP, whoami, remote, lookup, text("ok"))
    refund = tool_call("refund_order", {"order_id": "A-1", "reason": "asked"})
    model.script(REFUND, whoami, remote, refund, text("ok"))

    run = run_gate(
        workspace,
        github,
        event,
        inputs={"agent-isolation": isolation, "agent-env": "PYTHONPATH"},
        OPENAI_BASE_URL=model.base_url,
        PYTHONPATH=packages,
    )

    said = run.stdout + run.stderr
    assert run.returncode == 1, said
    runs = {f["side"]: f for f in run.results()["fixtures"]}
    assert (runs["base"]["status"], runs["head"]["status"]) == ("pass", "fail"), said
    seen = {}
    for side, result in runs.items():
        steps = result["trace"]["steps"]
        who = next(s for s in steps if s["type"] == "tool_result" and s["tool"] == "orders__whoami")
        seen[side] = json.loads(who["output"])
        assert "sk-environment-secret" not in json.dumps(seen[side]["env"])  # the proxy's key
        assert "EVALWARD_SQLITE_PATH" in seen[side]["env"]
        served = next(s for s in steps if s.get("server") == "remote" and s["output"])
        assert json.loads(served["output"])["id"] == "B-2"
    if isolation == "user":
        assert 0 not in {seen["base"]["uid"], seen["head"]["uid"]}
        assert seen["base"]["uid"] != seen["head"]["uid"]
        assert seen["base"]["home"] != seen["head"]["home"]
    head_final = json.loads(runs["head"]["playground"]["final"])
    assert head_final["db"]["orders"]["A-1"]["status"] == "refunded"
    # the comment shows where head left base: a call of the server's tool, by its name
    comment = github.comments_on(3)[-1]["body"]
    assert "orders__refund_order" in comment, comment
    assert "orders__lookup_order" in comment, comment
    report = (run.output_dir / "report.html").read_text()
    assert "orders__refund_order" in report
