"""A playground service the base branch defines runs, for a pull request's head, with
packages that pull request's head user built or the base's: never with an environment another
pull request's head user built.

Under `gate-config: base` the head's runs of a base fixture get the base's playground: its
service is the base's program, built from the base's tree, though as the head side's user
(runtime/playground/service_environment.py). The install runs as that user, who is the pull
request's: its programs can reach the build as their own user, or plant what an install reads
where every user may write (here a `uv.toml` in the machine's temporary folder). So the
environment is only as trustworthy as that pull request (runtime/environments/environment.py),
and its key names the head's commit, not only the base's its files come from: a second pull
request on the same base never restores the first one's, and its service answers as the base's
packages say.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import ActionRun, pull_request_event, run_action
from support.agentenv import PYTHON, needs_root
from support.gitrepo import GitRepo
from support.jsonserver import json_server
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
  fixtures: [greeting, refund]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: greeting }}
spec:
  targetAgent: clerk
  input: {{ type: prompt, payload: {{ prompt: "Hello" }} }}
  assertions:
    - {{ type: contains, value: "o" }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: refund }}
spec:
  targetAgent: clerk
  input: {{ type: prompt, payload: {{ prompt: "Can I get my money back?" }} }}
  playground:
    name: shop
    service:
      start: [python3, shop/service.py, "{{port}}"]
      ready: /health
      environment: {{ python: shop/requirements.txt }}
  assertions:
    - {{ type: stateValue, at: service.policy, equals: lenient }}
"""
SERVICE = json_server(
    """\
    def do_GET(self):
        self.reply({"policy": shopkit.POLICY})
""",
    preamble="import json, sys\nimport shopkit\n",
)
AGENT = """\
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "final", "content": "Sure, no problem!"}), flush=True)
"""
PLANTING = """\
import base64, hashlib, json, os, sys, zipfile
from pathlib import Path

sys.stdin.readline()
# the machine's temporary folder (/tmp in the action), which every user may write
shared = Path("SHARED")
wheels = shared / "shop-wheels"
wheels.mkdir(exist_ok=True)
wheels.chmod(0o755)
info = "shopkit-9.0.dist-info"
files = {
    "shopkit/__init__.py": 'POLICY = "lenient"\\n',
    f"{info}/METADATA": "Metadata-Version: 2.1\\nName: shopkit\\nVersion: 9.0\\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
def digest(text):
    raw = hashlib.sha256(text.encode()).digest()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
record = [f"{p},sha256={digest(t)},{len(t.encode())}" for p, t in files.items()]
files[f"{info}/RECORD"] = "\\n".join([*record, f"{info}/RECORD,,"]) + "\\n"
built = wheels / "shopkit-9.0-py3-none-any.whl"
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


def gate(
    repo: GitRepo, github: FakeGitHub, shared: Path, number: int, base: str, program: str
) -> ActionRun:
    """Pull request `number`: a branch from `base` whose clerk runs `program`, one run at a
    time (the greeting's head run before the refund's)."""
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
        inputs={"parallel": "1"},
    )


@needs_root
def test_another_pull_requests_head_never_chooses_the_packages_of_the_bases_service(
    repo: GitRepo, github: FakeGitHub, package_folder: Path, shared: Path
) -> None:
    honest = wheel(package_folder, "shopkit", "1.0", 'POLICY = "strict"\n')
    base = repo.commit(
        "a clerk and its shop",
        {
            ".gitignore": ".evalward/\n",
            "agents.yaml": SUITE,
            "agent/clerk.py": AGENT.replace("Sure, no problem!", "Hello, no."),
            "shop/service.py": SERVICE,
            "shop/requirements.txt": f"--no-index\n--find-links {honest.parent}\nshopkit>=1.0\n",
        },
    )
    gate(repo, github, shared, 5, base, PLANTING)  # a pull request that plants

    later = gate(repo, github, shared, 6, base, AGENT)  # another, on the same base

    refund = {f["side"]: f for f in later.results()["fixtures"] if f["fixture"] == "refund"}
    (policy,) = refund["head"]["assertions"]
    # The base's shop, built from the base's packages, holds to its strict policy.
    assert policy["status"] == "fail", later.stdout
    # The head-side build is the first pull request's: never restored for the second.
    assert "service (head): restored from the cache" not in later.stdout, later.stdout
    assert later.returncode == 1, later.stdout + later.stderr
    assert later.outputs["result"] == "fail"
