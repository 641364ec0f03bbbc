"""MCP servers written with the MCP SDK, as a declarative agent's tools, through `evalward
run`: a stdio server acting on the run's SQLite playground, a streamable-HTTP server by URL
and a playground service that speaks MCP; names qualified where they clash; assertions,
`toolReplay` and `shadowTools` by either name; base beside head, each side's server its own."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, text, tool_call
from support.clirun import evalward, run_for_results
from support.documents import documents, eval_for
from support.gitrepo import GitRepo
from support.mcpsuite import SDK_SERVER, calls, fixture, http_server, mcp_agent

pytestmark = pytest.mark.e2e

__all__ = ["http_server"]  # a fixture

SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL, status TEXT);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id TEXT, reason TEXT);
INSERT INTO orders VALUES ('A-1', 25.0, 'delivered'), ('B-2', 90.0, 'delivered');
"""

OWN_LOOKUP = """\
  tools:
    - name: lookup_order
      description: The agent's own lookup, whose name the server's tool shares.
      mock: { output: "own lookup" }
"""

DESK_SERVERS = f"""\
    orders:
      command: [{sys.executable}, mcp/server.py]
      tools: {{ deny: [whoami] }}
"""

PLAYGROUND = "  playground: { name: shop, sqlite: { seed: shop/seed.sql } }\n"
REPLAYED = """\
  toolReplay:
    - { tool: orders.lookup_order, arguments: { order_id: A-1 }, output: "replayed A-1" }
  shadowTools: [refund_order]
"""
LOOKUP = "name: orders__lookup_order, arguments: { order_id: A-1 }"
REFUND = "name: refund_order, arguments: { order_id: A-1, reason: damaged }"


def _desk(repo: GitRepo) -> None:
    suite = documents(
        mcp_agent("desk", DESK_SERVERS, tools=OWN_LOOKUP),
        eval_for("desk", "fixtures: [refund-a1, replayed]"),
        fixture(
            "refund-a1",
            "desk",
            "{ type: toolSequence, tools: [orders.lookup_order, refund_order] }",
            "{ type: toolArgs, tool: orders__refund_order, args: { reason: damaged } }",
            '{ type: sql, query: "SELECT order_id, reason FROM refunds", rows: [[A-1, damaged]] }',
            "{ type: stateValue, at: db.orders.A-1.status, equals: refunded }",
            extra=PLAYGROUND,
        ),
        fixture("replayed", "desk", "{ type: toolCalled, tool: refund_order }", extra=REPLAYED),
    )
    repo.commit(
        "desk",
        {"agents.yaml": suite, "mcp/server.py": SDK_SERVER, "shop/seed.sql": SEED},
    )


def _steps(run: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in run["trace"]["steps"] if s["type"] == kind]


def _by_fixture(results: dict[str, Any], side: str = "head") -> dict[str, dict[str, Any]]:
    return {f["fixture"]: f for f in results["fixtures"] if f["side"] == side}


def test_a_stdio_server_acts_on_the_playground_and_is_asserted_replayed_and_shadowed(
    repo: GitRepo, tmp_path: Path
) -> None:
    _desk(repo)
    script = tmp_path / "mock.yaml"
    denied = "name: whoami, arguments: {}"
    script.write_text("replies:\n" + calls("desk", LOOKUP, REFUND, denied))

    code, results, said = run_for_results(repo.path, "--mock-script", str(script))

    assert code == 0, said
    runs = _by_fixture(results)
    acted = runs["refund-a1"]
    assert acted["status"] == "pass", [a["message"] for a in acted["assertions"]]
    called = _steps(acted, "tool_call")
    # the clash with the agent's own lookup_order: the server's is offered qualified
    assert [(s["tool"], s["server"]) for s in called] == [
        ("orders__lookup_order", "orders"),
        ("orders__refund_order", "orders"),
        ("whoami", None),
    ]
    lookup, refund, whoami = _steps(acted, "tool_result")
    assert json.loads(lookup["output"]) == {"amount": 25.0, "id": "A-1", "status": "delivered"}
    assert (lookup["source"], refund["output"]) == ("mcp", "refunded A-1 (damaged)")
    assert lookup["duration_ms"] > 0
    assert "no tool named 'whoami'" in whoami["output"]  # denied: never offered
    assert '"status": "refunded"' in acted["playground"]["final"]
    replayed = runs["replayed"]
    assert replayed["status"] == "pass", replayed
    outputs = [(s["source"], s["output"][:12]) for s in _steps(replayed, "tool_result")]
    assert outputs[:2] == [("replay", "replayed A-1"), ("shadow", '{"shadowed":')]


def test_a_side_effecting_mcp_tool_left_live_is_refused_before_any_run(
    repo: GitRepo, tmp_path: Path
) -> None:
    servers = DESK_SERVERS + "      sideEffects: [refund_order]\n"
    repo.commit(
        "live",
        {
            "agents.yaml": documents(
                mcp_agent("desk", servers),
                eval_for("desk", "fixtures: [live, shadowed]"),
                fixture("live", "desk"),
                fixture("shadowed", "desk", extra="  shadowTools: [orders.refund_order]\n"),
            ),
            "mcp/server.py": SDK_SERVER,
        },
    )
    done = evalward("validate", ".", cwd=repo.path)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "fixture 'live' would run the side-effecting tool 'refund_order'" in said
    assert "MCP server 'orders'" in said
    assert "'shadowed'" not in said


def test_http_servers_by_url_and_as_the_playground_service_answer_with_the_sdk(
    repo: GitRepo, tmp_path: Path, http_server: str
) -> None:
    service = f"""\
  playground:
    name: shop
    service:
      start: [{sys.executable}, mcp/server.py, http, "{{port}}"]
      ready: /ready
"""
    suite = documents(
        mcp_agent("remote", f"    orders:\n      url: {http_server}\n"),
        eval_for("remote", "fixtures: [remote-run]"),
        fixture("remote-run", "remote", "{ type: toolCalled, tool: lookup_order }"),
        mcp_agent("served", "    shop:\n      service: /mcp\n"),
        eval_for("served", "fixtures: [served-run]"),
        fixture(
            "served-run",
            "served",
            "{ type: stateValue, at: service.orders.B-2.status, equals: refunded }",
            extra=service,
        ),
    )
    repo.commit("http", {"agents.yaml": suite, "mcp/server.py": SDK_SERVER})
    script = tmp_path / "mock.yaml"
    refund_b2 = "name: refund_order, arguments: { order_id: B-2, reason: late }"
    script.write_text(
        "replies:\n"
        + calls("remote", "name: lookup_order, arguments: { order_id: B-2 }")
        + calls("served", refund_b2)
    )

    code, results, said = run_for_results(repo.path, "--mock-script", str(script))

    assert code == 0, said
    runs = _by_fixture(results)
    remote = _steps(runs["remote-run"], "tool_result")[0]
    assert (remote["tool"], remote["server"]) == ("orders__lookup_order", "orders")
    assert json.loads(remote["output"])["id"] == "B-2"
    served = _steps(runs["served-run"], "tool_result")[0]
    assert (served["tool"], served["output"]) == ("shop__refund_order", "refunded B-2 (late)")
    assert runs["served-run"]["status"] == "pass", runs["served-run"]["assertions"]


def test_each_side_runs_its_own_server_and_a_head_that_breaks_it_regresses(
    repo: GitRepo, tmp_path: Path
) -> None:
    _desk(repo)
    repo.branch("feature")
    assert SDK_SERVER.count("db.commit()") == 1
    repo.commit("break the refund", {"mcp/server.py": SDK_SERVER.replace("db.commit()", "")})
    script = tmp_path / "mock.yaml"
    script.write_text("replies:\n" + calls("desk", LOOKUP, REFUND))

    code, results, said = run_for_results(repo.path, "--mock-script", str(script), "--base", "main")

    assert code == 1, said
    base, head = _by_fixture(results, "base"), _by_fixture(results, "head")
    assert base["refund-a1"]["status"] == "pass"
    assert head["refund-a1"]["status"] == "fail"
    failed = [a["type"] for a in head["refund-a1"]["assertions"] if a["status"] == "fail"]
    assert failed == ["sql", "stateValue"], failed


def test_a_run_whose_agents_name_no_mcp_server_never_loads_the_sdk(
    repo: GitRepo, tmp_path: Path
) -> None:
    agent = mcp_agent("plain", "    orders: { command: [python3, mcp/server.py] }\n")
    plain = agent.replace("  mcpServers:\n    orders: { command: [python3, mcp/server.py] }\n", "")
    repo.commit(
        "plain",
        {
            "agents.yaml": documents(
                plain, eval_for("plain", "fixtures: [p]"), fixture("p", "plain")
            )
        },
    )
    script = tmp_path / "mock.yaml"
    script.write_text("replies:\n" + calls("plain"))
    code, _, said = run_for_results(
        repo.path, "--mock-script", str(script), PYTHONPROFILEIMPORTTIME="1"
    )
    assert code == 0, said
    imported = {line.split("|")[-1].strip() for line in said.splitlines() if "|" in line}
    assert "evalward.runtime.agents.runner" in imported
    assert not {name for name in imported if name.split(".")[0] in ("mcp", "mcp_types")}


def test_the_judge_reads_an_mcp_call_and_its_result_as_tool_steps(
    repo: GitRepo, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    judged = "judge: { model: openai/judge-m }"
    suite = documents(
        mcp_agent("desk", DESK_SERVERS),
        eval_for("desk", "fixtures: [judged]", judged),
        fixture("judged", "desk", "{ type: judge, rubric: 'MCP-RUBRIC: looks the order up' }"),
    )
    repo.commit("judged", {"agents.yaml": suite, "mcp/server.py": SDK_SERVER})
    verdict = {"score": 1.0, "confidence": 0.9, "summary": "looked it up", "violations": []}
    model.script("MCP-RUBRIC", text(json.dumps(verdict)))
    model.script("Do it.", tool_call("lookup_order", {"order_id": "A-1"}), text("done"))

    code, _, said = run_for_results(repo.path, **env)

    assert code == 0, said
    (asked,) = model.requests_mentioning("MCP-RUBRIC")
    seen = json.dumps(asked)
    assert "orders__lookup_order" in seen, seen
    assert "delivered" in seen, seen


def test_a_servers_tools_are_offered_in_each_vendors_shape_and_called(
    repo: GitRepo, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The server's tool, with the schema it lists, reaches an OpenAI model as a function
    and an Anthropic model as a tool with an `input_schema`; each calls it by the name it
    was offered."""
    desk = mcp_agent("desk", DESK_SERVERS)
    vendor_desk = desk.replace("desk", "vendor").replace("openai/gpt-test", "anthropic/claude-t")
    suite = documents(
        desk,
        eval_for("desk", "fixtures: [desk-run]"),
        fixture("desk-run", "desk", "{ type: toolCalled, tool: orders.lookup_order }"),
        vendor_desk,
        eval_for("vendor", "fixtures: [vendor-run]"),
        fixture("vendor-run", "vendor", "{ type: toolCalled, tool: orders.lookup_order }"),
    )
    repo.commit("vendors", {"agents.yaml": suite, "mcp/server.py": SDK_SERVER})
    model.script("Do it.", tool_call("lookup_order", {"order_id": "A-1"}), text("done"))
    keys = {"ANTHROPIC_BASE_URL": model.anthropic_url, "ANTHROPIC_API_KEY": "sk-ant-test"}

    code, results, said = run_for_results(repo.path, **env, **keys)

    assert code == 0, said
    for run in results["fixtures"]:
        result = _steps(run, "tool_result")[0]
        assert (result["tool"], json.loads(result["output"])["status"]) == (
            "orders__lookup_order",
            "delivered",
        ), run["fixture"]
    offered = {}
    for request in model.requests_mentioning("Do it."):
        for tool in request.get("tools", []):
            anthropic = "input_schema" in tool
            shape = tool if anthropic else tool["function"]
            offered[shape["name"], anthropic] = shape["input_schema" if anthropic else "parameters"]
    names = {"lookup_order", "refund_order", "write_note"}  # whoami denied
    assert set(offered) == {(name, anthropic) for name in names for anthropic in (False, True)}
    for shape in (False, True):
        schema = offered["lookup_order", shape]
        assert schema["properties"]["order_id"]["type"] == "string", schema
        assert schema["required"] == ["order_id"], schema


def test_a_server_writes_into_the_files_playground_and_file_criteria_read_it(
    repo: GitRepo, tmp_path: Path
) -> None:
    playground = "  playground: { name: notes, files: { seed: notes } }\n"
    suite = documents(
        mcp_agent("desk", DESK_SERVERS),
        eval_for("desk", "fixtures: [noted]"),
        fixture(
            "noted",
            "desk",
            "{ type: fileState, path: out/A-1.txt, contains: refunded }",
            "{ type: fileState, path: README.txt, contains: seeded }",
            extra=playground,
        ),
    )
    repo.commit(
        "notes",
        {"agents.yaml": suite, "mcp/server.py": SDK_SERVER, "notes/README.txt": "seeded\n"},
    )
    script = tmp_path / "mock.yaml"
    note = "name: write_note, arguments: { path: out/A-1.txt, text: A-1 refunded }"
    script.write_text("replies:\n" + calls("desk", note))

    code, results, said = run_for_results(repo.path, "--mock-script", str(script))

    assert code == 0, said
    (run,) = results["fixtures"]
    assert run["status"] == "pass", run["assertions"]
    assert _steps(run, "tool_result")[0]["output"] == "wrote out/A-1.txt"
