"""A change to a tool, dry-run with no key: a mock script whose `toolResult` key answers by what
the agent's tools said, through `python -m evalward run --base main --mock-script` on the
project `evalward init --mcp` writes. The pull request changes what the MCP server (the real
SDK, run where `python3` finds it) says of an order; the scripted agent repeats it, the gate
blocks, and attribution's variants, answered by their own server, trace the regression to the
server's line. Without the key every variant would get the same reply, and the change would
pass unseen."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

SCRIPT_HEAD = """\
replies:
  - match: { purpose: agent, toolResult: '"status": "delayed"' }
    always: { content: Order 12345 is delayed. }
"""


def test_a_tool_s_changed_answer_is_a_regression_traced_to_the_server_s_line(
    repo: GitRepo, tmp_path: Path
) -> None:
    done = evalward("init", "--mcp", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    # the entry goes first; init's own answer every call it did before
    script = (repo.path / "evals/mock-replies.yaml").read_text()
    scripted = script.replace("replies:\n", SCRIPT_HEAD, 1)
    repo.commit("init", {"evals/mock-replies.yaml": scripted})
    server = (repo.path / "mcp/orders_server.py").read_text()
    line = next(n for n, text in enumerate(server.splitlines(), 1) if '"12345": "shipped"' in text)
    repo.git("switch", "-q", "-c", "delayed")
    repo.commit(
        "delayed",
        {"mcp/orders_server.py": server.replace('"12345": "shipped"', '"12345": "delayed"')},
    )

    out = tmp_path / "out"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    ran = evalward(
        *("run", "--base", "main", "--no-history", "--output-dir", str(out)),
        *("--mock-script", "evals/mock-replies.yaml"),
        cwd=repo.path,
        PATH=path,
    )
    said = ran.stdout + ran.stderr
    assert ran.returncode == 1, said
    assert "Traceback" not in said
    results = json.loads((out / "results.json").read_text())
    status = {(f["side"], f["fixture"]): f for f in results["fixtures"] if f["rep"] == 0}
    head = status[("head", "assistant-order-status")]
    assert head["status"] == "fail"
    finals = [s["content"] for s in head["trace"]["steps"] if s["type"] == "final"]
    assert finals == ["Order 12345 is delayed."]
    assert status[("base", "assistant-order-status")]["status"] == "pass"
    # the fixture that asks for the order number calls no tool: its reply is unchanged
    assert status[("head", "assistant-asks-for-the-order")]["status"] == "pass"

    (traced,) = results["attribution"]["regressions"]
    assert traced["fixtures"] == ["assistant-order-status"]
    assert traced["result"] == "attributed", traced
    (culprit,) = [traced["hunks"][i] for i in traced["culprit"]]
    assert (culprit["path"], culprit["first"], culprit["last"]) == (
        "mcp/orders_server.py",
        line,
        line,
    )
    assert f"`mcp/orders_server.py:{line}`" in said
