"""Bring-your-own agents and tool policies through `python -m evalward run` on real repos."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support.clirun import DEMO_PATH, evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[3]
AGENTS = Path(__file__).resolve().parents[2] / "agents"

HTTP_AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: searcher }}
spec:
  runtime:
    http:
      start: [{python}, agent/server.py, "{{port}}"]
      ready: http://127.0.0.1:{{port}}/ready
      url: http://127.0.0.1:{{port}}/run
      readyTimeoutSeconds: 20
      env: [PIDDIR]
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: searcher-eval }}
spec:
  targetAgent: searcher
  fixtures: [search-once]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: search-once }}
spec:
  targetAgent: searcher
  input: {{ type: prompt, payload: {{ prompt: "find shoes" }} }}
  shadowTools: [send_email]
  assertions:
    - {{ type: toolCalled, tool: search }}
    - {{ type: contains, value: "shadow ['send_email']" }}
"""

SIDE_EFFECTS = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: refunder }
spec:
  models: [openai/gpt-test]
  tools:
    - name: issue_refund
      command: [python3, tools/refund.py]
      sideEffects: true
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: refunder-eval }
spec:
  targetAgent: refunder
  fixtures: [refund]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund }
spec:
  targetAgent: refunder
  input: { type: prompt, payload: { prompt: "refund me" } }
  assertions:
    - { type: toolCalled, tool: issue_refund }
"""


def test_http_agents_of_base_and_head_run_side_by_side_and_are_stopped(
    repo: GitRepo, tmp_path: Path
) -> None:
    server = (AGENTS / "http_agent.py").read_text()
    files = {"agents.yaml": HTTP_AGENT.format(python=sys.executable), "agent/server.py": server}
    repo.commit("base", files)
    repo.branch("feature")
    repo.commit("head", {"agent/server.py": server + "\n# tuned\n"})
    pids = tmp_path / "pids"
    pids.mkdir()
    done = evalward("run", str(repo.path), "--base", "main", cwd=repo.path, PIDDIR=str(pids))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| searcher-eval | searcher | 1.00 → **1.00** |" in done.stdout
    servers = sorted(pids.glob("server-*.pid"))
    assert len(servers) == 2  # base and head, each on its own port
    for pid_file in servers:
        status = Path(f"/proc/{pid_file.read_text()}/status")
        assert not status.exists() or "zombie" in status.read_text()


def test_a_side_effecting_tool_that_is_neither_shadowed_nor_replayed_refuses_the_run(
    repo: GitRepo,
) -> None:
    repo.commit("agent", {"refunder.yaml": SIDE_EFFECTS})
    done = evalward(
        "run",
        str(repo.path),
        "--mock-script",
        str(REPO_ROOT / "examples/mock-replies.yaml"),
        cwd=repo.path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "fixture 'refund' would run the side-effecting tool 'issue_refund'" in done.stderr
    assert "shadowTools: [issue_refund]" in done.stderr


def test_the_bring_your_own_example_passes_in_the_demo() -> None:
    done = evalward(
        "run", ".", "--mock-script", "examples/mock-replies.yaml", "--no-cache",
        cwd=REPO_ROOT, PATH=DEMO_PATH,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| order-agent-eval | order-agent | **1.00** |" in done.stdout
