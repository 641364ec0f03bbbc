"""Moving an agent's MCP servers to evalward: a promptfoo provider's `config.mcp` imported as
the Agent's `mcpServers` and run with the SDK's server; what has no equivalent (a credential
for the server, one filter over several servers) refused at its line; and `evalward init
--mcp` writing a suite whose agent's tools come from an MCP server of the repository."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.clirun import evalward, run_for_results
from support.gitrepo import GitRepo
from support.mcpsuite import SDK_SERVER

pytestmark = pytest.mark.e2e

PROMPTFOO = f"""\
description: Order desk
prompts: ["Where is order {{{{order}}}}?"]
providers:
  - id: openai:gpt-4.1-mini
    config:
      mcp:
        enabled: true
        timeout: 20000
        server:
          name: order desk
          command: {sys.executable}
          args: [mcp/server.py]
        tools: [lookup_order]
tests:
  - vars: {{ order: A-1 }}
    assert:
      - {{ type: contains, value: delivered }}
"""


def _agents(repo: GitRepo) -> list[dict[str, Any]]:
    found = []
    for path in repo.path.rglob("*.yaml"):
        if ".evalward" in path.parts or path.name == "promptfooconfig.yaml":
            continue
        found += [
            d
            for d in yaml.safe_load_all(path.read_text())
            if isinstance(d, dict) and d.get("kind") == "Agent"
        ]
    return found


def test_a_promptfoo_providers_mcp_servers_are_imported_and_run(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.commit("promptfoo", {"promptfooconfig.yaml": PROMPTFOO, "mcp/server.py": SDK_SERVER})
    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    (agent,) = _agents(repo)
    assert agent["spec"]["mcpServers"] == {
        "order-desk": {
            "command": [sys.executable, "mcp/server.py"],
            "timeoutSeconds": 20.0,
            "tools": {"allow": ["lookup_order"]},
        }
    }
    repo.commit("imported")
    script = tmp_path / "mock.yaml"
    script.write_text(
        "replies:\n  - turns:\n"
        "      - toolCalls: [{ name: lookup_order, arguments: { order_id: A-1 } }]\n"
        "      - content: A-1 is delivered.\n"
    )
    code, results, said = run_for_results(repo.path, "--mock-script", str(script))
    assert code == 0, said
    (run,) = results["fixtures"]
    steps = {s["type"]: s for s in run["trace"]["steps"]}
    assert steps["tool_result"]["tool"] == "order-desk__lookup_order"
    assert '"status": "delivered"' in steps["tool_result"]["output"]


def test_a_credential_for_an_mcp_server_is_refused_at_its_line(repo: GitRepo) -> None:
    config = PROMPTFOO.replace(
        "        tools: [lookup_order]\n",
        "        tools: [lookup_order]\n"
        "        servers:\n"
        "          - url: https://mcp.example.test/mcp\n"
        "            headers: { Authorization: Bearer sk-abc }\n",
    )
    repo.commit("promptfoo", {"promptfooconfig.yaml": config})
    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)
    assert done.returncode != 0
    assert "promptfooconfig.yaml:16" in done.stderr, done.stderr
    assert "evalward sends no credential to an MCP server" in done.stderr
    assert "sk-abc" not in done.stderr


def test_init_mcp_writes_a_suite_whose_tools_come_from_an_mcp_server(repo: GitRepo) -> None:
    repo.commit("empty", {"README.md": "hi\n"})
    done = evalward("init", "--mcp", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    (agent,) = _agents(repo)
    (server,) = agent["spec"]["mcpServers"].values()
    program = server["command"][-1]
    assert (repo.path / program).is_file()
    validated = evalward("validate", cwd=repo.path)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    # with the SDK where `python3` finds it (this virtualenv's), the mock run passes through it
    repo.commit("init")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    code, results, said = run_for_results(
        repo.path, "--mock-script", "evals/mock-replies.yaml", PATH=path
    )
    assert code == 0, said
    served = [
        s
        for f in results["fixtures"]
        for s in f["trace"]["steps"]
        if s["type"] == "tool_result" and s["source"] == "mcp"
    ]
    assert served and served[0]["tool"] == "orders__lookup_order", served
    assert '"status": "shipped"' in served[0]["output"]
