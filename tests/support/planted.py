"""A pull request's agent that plants a `uv.toml` where every user may write, naming a folder
of its own wheels, and the gate that runs it with evalward's temporary folder (`TMPDIR`) one
every user may write (tests/runtime/environments/test_install_config_above.py,
tests/runtime/playground/test_service_environment_keys.py)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo

_PLANTING = """\
import base64, hashlib, json, os, sys, zipfile
from pathlib import Path

sys.stdin.readline()
# the machine's temporary folder (/tmp in the action), which every user may write
shared = Path("SHARED")
wheels = shared / "WHEELS"
wheels.mkdir(exist_ok=True)
wheels.chmod(0o755)
info = "NAME-9.0.dist-info"
files = {
    "NAME/__init__.py": MODULE,
    f"{info}/METADATA": "Metadata-Version: 2.1\\nName: NAME\\nVersion: 9.0\\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
def digest(text):
    raw = hashlib.sha256(text.encode()).digest()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
record = [f"{p},sha256={digest(t)},{len(t.encode())}" for p, t in files.items()]
files[f"{info}/RECORD"] = "\\n".join([*record, f"{info}/RECORD,,"]) + "\\n"
built = wheels / "NAME-9.0-py3-none-any.whl"
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


def planting_agent(name: str, module: str, wheels: str) -> str:
    """An agent that builds a wheel of `name` 9.0 (`name/__init__.py` holding `module`) in
    `SHARED/wheels` and plants a `uv.toml` naming that folder in `SHARED` and in every folder
    above its HOME that it may write; `SHARED` is for `gate` to fill."""
    return _PLANTING.replace("WHEELS", wheels).replace("NAME", name).replace("MODULE", repr(module))


@pytest.fixture
def shared() -> Iterator[Path]:
    """evalward's temporary folder (`TMPDIR`): every user may write it, as /tmp; a folder
    of the test's own, so no other program's uv reads what the head plants in it."""
    folder = Path(tempfile.mkdtemp(prefix="evalward-tmpdir-"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def gate(
    repo: GitRepo,
    github: FakeGitHub,
    shared: Path,
    number: int,
    base: str,
    program: str,
    *,
    inputs: dict[str, str] | None = None,
) -> ActionRun:
    """Pull request `number`: a branch from `base` whose clerk (`agent/clerk.py`) runs
    `program`, `SHARED` in it naming `shared`, gated with `shared` as `TMPDIR`."""
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
        inputs=inputs,
    )
