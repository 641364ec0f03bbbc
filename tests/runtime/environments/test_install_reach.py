"""A pull request's requirements file points the installer at the runner's own files: a `-r`
line, an index URL and a `git+` URL naming a private file or repository of the runner's
user. The install runs as the agent user, who may read none of them; its failure is that
side's error, and nothing of what those files hold reaches the log, the comment or the run's
files. Needs root (the user switch). Nothing is downloaded."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.agentenv import RUNNER_UID, agent_yaml, errors, open_pr, run_gate, workspace

pytestmark = pytest.mark.hostile

__all__ = ["workspace"]  # a fixture

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="running agents as a second user needs root (as in the image)"
)

SECRET = "ghs_RunnerOnly0123456789abcdef"

AGENT = {
    "agents/dep-agent.yaml": agent_yaml(
        ["python", "agent/agent.py"], {"python": "agent/requirements.txt"}
    ),
    "agent/agent.py": "import json, sys\nsys.stdin.read()\n"
    'print(json.dumps({"type": "final", "content": \'"uid"\'}))\n',
    "agent/requirements.txt": "",
}


def runner_files(workspace: Path) -> dict[str, str]:
    """The runner's private files beside the workspace: a credentials file, a package index
    folder and a git repository, readable by the runner's user only."""
    private = workspace.parent / "runner-home"
    (private / "index" / "six").mkdir(parents=True)
    (private / "credentials").write_text(f"token={SECRET}\n")
    (private / "index" / "six" / "index.html").write_text(f"<a href='{SECRET}.whl'>six</a>\n")
    repo = private / "tool"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "setup.py").write_text(f"raise SystemExit({SECRET!r})\n")
    for path in [private, *private.rglob("*")]:
        os.lchown(path, RUNNER_UID, RUNNER_UID)
    private.chmod(0o700)
    return {
        "requirements": f"-r {private / 'credentials'}\n",
        "index": f"--index-url file://{private / 'index'}\nsix\n",
        "git": f"tool @ git+file://{repo}\n",
    }


@needs_root
@pytest.mark.parametrize("reach", ["requirements", "index", "git"])
def test_a_requirement_that_reaches_for_the_runners_files_leaks_nothing(
    workspace: Path, github: FakeGitHub, reach: str
) -> None:
    workspace.mkdir(parents=True)
    lines = runner_files(workspace)[reach]
    base = AGENT
    head = {"agent/requirements.txt": lines}
    run = run_gate(workspace, github, open_pr(workspace, github, base, head))
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, run.stdout + run.stderr
    message = errors(run)["head"]
    assert message.startswith("the agent's environment could not be built"), message
    refused = {"requirements": "Permission denied", "index": "Permission denied"}
    assert refused.get(reach, "Git operation failed") in message, message
    written = [p.read_text(errors="replace") for p in run.output_dir.rglob("*") if p.is_file()]
    comments = [c["body"] for c in github.comments.values()]
    for text in [run.stdout, run.stderr, *written, *comments]:
        assert SECRET not in text
