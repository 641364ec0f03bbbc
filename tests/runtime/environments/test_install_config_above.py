"""An environment is built from its side's own files and nothing a pull request's program
left on the machine: a `uv.toml` the head's agent plants where every user may write (the
machine's temporary folder, and any folder above its HOME that it may write) does not choose the
packages of the base branch's code scorer that grades the head, nor those a later job's base
restores from the cache.

uv reads its configuration from the nearest `uv.toml` in the folder it runs in or any folder
above it. evalward builds every environment in a folder whose every ancestor only root may
write (runtime/isolation/sandbox.py's `AGENTS_PLACE`), never under `TMPDIR` (`/tmp` in the
action, every user's), and the build holds an empty `uv.toml` of evalward's where uv's search
ends. Under `baseRuns: whereRead` the base side's code scorer first runs on the head's runs, so
its environment is built as the base side's user once the head's agent has run. A head whose
agent regresses plants a `uv.toml` naming a folder of its own wheels: the base's scorer still
imports the base's package and fails the head. An environment whose install a head program
could have reached is not kept in the cache (`cache-dir`, which actions/cache keeps), so
another pull request on the same base, whose agent regresses the same way and plants nothing,
is failed too.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import ActionRun, pull_request_event, run_action
from support.agentenv import PYTHON, needs_root
from support.gitrepo import GitRepo
from support.scorerpackages import package_folder, wheel

pytestmark = pytest.mark.hostile

__all__ = ["package_folder"]  # a fixture

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  runtime:
    command: [{PYTHON}, agent/clerk.py]
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: clerk-eval }}
spec:
  targetAgent: clerk
  fixtures: [refund]
  scoring: {{ passThreshold: 1, gate: {{ failOnRegression: none, baseRuns: whereRead }} }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: refund }}
spec:
  targetAgent: clerk
  input: {{ type: prompt, payload: {{ prompt: "Can I get my money back?" }} }}
  assertions:
    - {{ type: code, file: scorers/policy.py, environment: {{ python: scorers/requirements.txt }} }}
"""
SCORER = """\
import policykit

def get_assert(output, context):
    return {"pass": policykit.mentions_policy(output), "reason": "policykit " + policykit.VERSION}
"""
HONEST = (
    'VERSION = "1.0"\n\ndef mentions_policy(text):\n    return "refund policy" in text.lower()\n'
)
BASE_AGENT = """\
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "final", "content": "See our refund policy."}), flush=True)
"""
HEAD_AGENT = """\
import base64, hashlib, json, os, sys, zipfile
from pathlib import Path

sys.stdin.readline()
# the machine's temporary folder (/tmp in the action), which every user may write
shared = Path("SHARED")
wheels = shared / "clerk-wheels"
wheels.mkdir(exist_ok=True)
wheels.chmod(0o755)
info = "policykit-9.0.dist-info"
files = {
    "policykit/__init__.py": 'VERSION = "9.0"\\ndef mentions_policy(text):\\n    return True\\n',
    f"{info}/METADATA": "Metadata-Version: 2.1\\nName: policykit\\nVersion: 9.0\\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
def digest(text):
    raw = hashlib.sha256(text.encode()).digest()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
record = [f"{p},sha256={digest(t)},{len(t.encode())}" for p, t in files.items()]
files[f"{info}/RECORD"] = "\\n".join([*record, f"{info}/RECORD,,"]) + "\\n"
built = wheels / "policykit-9.0-py3-none-any.whl"
with zipfile.ZipFile(built, "w") as archive:
    for path, text in files.items():
        archive.writestr(path, text)
built.chmod(0o644)
# there, and in every folder above this process's HOME that it may write
for folder in [shared, *Path(os.environ["HOME"]).resolve().parents]:
    try:
        (folder / "uv.toml").write_text(f'find-links = ["{wheels}"]\\n')
        (folder / "uv.toml").chmod(0o644)
    except OSError:
        pass
print(json.dumps({"type": "final", "content": "Sure, no problem!"}), flush=True)
"""


@pytest.fixture
def shared() -> Iterator[Path]:
    """evalward's temporary folder (`TMPDIR`): every user may write it, as /tmp; a folder
    of the test's own, so no other program's uv reads what the head plants in it."""
    folder = Path(tempfile.mkdtemp(prefix="evalward-tmpdir-"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def base_branch(repo: GitRepo, wheels: Path) -> str:
    """The clerk and its policy scorer, whose package comes by name from the base's own
    wheelhouse."""
    return repo.commit(
        "a clerk graded by a policy scorer",
        {
            ".gitignore": ".evalward/\n",
            "agents.yaml": SUITE,
            "agent/clerk.py": BASE_AGENT,
            "scorers/policy.py": SCORER,
            "scorers/requirements.txt": f"--no-index\n--find-links {wheels}\npolicykit>=1.0\n",
        },
    )


def gate(
    repo: GitRepo, github: FakeGitHub, shared: Path, number: int, base: str, program: str
) -> ActionRun:
    """Pull request `number`: a branch from `base` whose clerk runs `program`."""
    repo.checkout(base)
    repo.branch(f"feature-{number}")
    head = repo.commit(
        "a friendlier clerk", {"agent/clerk.py": program.replace("SHARED", str(shared))}
    )
    github.add_pull(FakePull(number=number, head_sha=head, base_sha=base))
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, number, base, head),
        env={"OPENAI_API_KEY": "sk-unused-0123456789", "TMPDIR": str(shared)},
    )


def graded(run: ActionRun) -> tuple[str, str]:
    """The policy scorer's status and message on the head's run."""
    (head_run,) = [f for f in run.results()["fixtures"] if f["side"] == "head"]
    (scorer,) = head_run["assertions"]
    return scorer["status"], scorer["message"]


@needs_root
def test_a_uv_toml_the_head_plants_above_the_builds_does_not_pick_the_base_scorers_packages(
    repo: GitRepo, github: FakeGitHub, package_folder: Path, shared: Path
) -> None:
    honest = wheel(package_folder, "policykit", "1.0", HONEST)
    base = base_branch(repo, honest.parent)

    run = gate(repo, github, shared, 5, base, HEAD_AGENT)

    planted = shared / "uv.toml"
    assert not planted.exists(), "the head's file is swept at its turn's end"
    # The base's scorer grades the head with the base's package, and the head fails it.
    assert graded(run) == ("fail", "policykit 1.0"), run.stdout
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    assert "policykit 9.0" not in json.dumps(run.results())


@needs_root
def test_the_base_environment_a_later_job_restores_holds_nothing_an_earlier_head_planted(
    repo: GitRepo, github: FakeGitHub, package_folder: Path, shared: Path
) -> None:
    honest = wheel(package_folder, "policykit", "1.0", HONEST)
    base = base_branch(repo, honest.parent)
    gate(repo, github, shared, 5, base, HEAD_AGENT)  # plants, in a job of its own

    # Another pull request on the same base, the same cache: its clerk regresses and
    # plants nothing.
    later = gate(repo, github, shared, 6, base, BASE_AGENT.replace("See our refund policy.", "Ok!"))

    assert graded(later) == ("fail", "policykit 1.0"), later.stdout
    # What the first job built while the head's programs could reach its install is not kept.
    assert "(base): restored from the cache" not in later.stdout, later.stdout
    assert later.returncode == 1, later.stdout + later.stderr
    assert later.outputs["result"] == "fail"
