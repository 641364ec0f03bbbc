"""P7: building an agent's environment in the action, cold and warm.

A pull request adds an agent whose `environment.python` names a requirements file with a real
framework (the OpenAI Agents SDK); the action (tests/support/actionrun.py, as root: the user switch
happens) builds it as the agent user: cold (nothing in the cache directory) and warm (a rerun
whose results are not cached, so the agent runs again and its environment is restored from
the cache directory). The figures are what the action logs ("built in …", "restored … in …").
Needs root and PyPI.

    python bench/p7_environments.py [--package openai-agents==0.24.0] [--runs 3]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakes.github_api import FakeGitHub
from support.agentenv import SUITE, agent_yaml, open_pr, run_gate

AGENT = """\
import json, sys
import agents
sys.stdin.read()
print(json.dumps({"type": "final", "content": '"uid" ' + agents.__name__}))
"""


BASE_AGENT = """\
import json, sys
sys.stdin.read()
print(json.dumps({"type": "final", "content": '"uid" base'}))
"""


def once(package: str) -> tuple[float, float]:
    root = Path(tempfile.mkdtemp(prefix="evalward-p7-"))
    root.chmod(0o755)
    workspace = root / "workspace"
    github = FakeGitHub()
    try:
        head = {
            "agents/dep-agent.yaml": agent_yaml(
                ["python", "agent/agent.py"], {"python": "agent/requirements.txt"}
            ),
            "agent/requirements.txt": f"{package}\n",
            "agent/agent.py": AGENT,
            "evals/dep-agent.yaml": SUITE,
        }
        base = {**head, "agent/requirements.txt": "\n", "agent/agent.py": BASE_AGENT}
        event = open_pr(workspace, github, base, head)
        cold = run_gate(workspace, github, event)
        built = re.search(r"environment of dep-agent \(head\): built in ([\d.]+) s", cold.stdout)
        assert cold.returncode == 0 and built, cold.stdout + cold.stderr
        shutil.rmtree(workspace / ".evalward" / "cache" / "results")
        warm = run_gate(workspace, github, event)
        restored = re.search(r"\(head\): restored from the cache in ([\d.]+) s", warm.stdout)
        assert warm.returncode == 0 and restored, warm.stdout + warm.stderr
        return float(built.group(1)), float(restored.group(1))
    finally:
        github.close()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", default="openai-agents==0.24.0")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results = [once(args.package) for _ in range(args.runs)]
    cold = statistics.median(r[0] for r in results)
    warm = statistics.median(r[1] for r in results)
    print(
        f"{args.package}: cold build {cold:.1f} s, warm (restored) {warm:.1f} s, "
        f"median of {args.runs}: {results}"
    )


if __name__ == "__main__":
    main()
