"""A release as users get it: the sdist and the wheel install into a fresh virtualenv and run;
the release workflow publishes to PyPI by trusted publishing; and its release commit runs the
published image by digest, with the version tag and the moving major tag on it (the job's
own script, run against real git repositories)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from evalward import __version__
from evalward.runtime.environments.installers import NETWORK_ENV
from support.distributions import built, session_folder
from support.gitrepo import GIT_ENV, GitRepo

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
PIN = ROOT / "scripts" / "pin-action-image.py"
DIGEST = "sha256:" + "0123456789abcdef" * 4
IMAGE = f"docker://ghcr.io/evalward/evalward@{DIGEST}"


def pin(action: Path, image: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PIN), str(action), image], capture_output=True, text=True, timeout=60
    )


def jobs() -> dict[str, dict]:  # type: ignore[type-arg]
    workflow = yaml.safe_load(RELEASE.read_text())
    assert workflow[True] == {"push": {"tags": ["v*"]}}  # PyYAML reads the key `on` as True
    found: dict[str, dict] = workflow["jobs"]  # type: ignore[type-arg]
    return found


def test_the_release_commit_runs_the_image_by_digest_and_changes_nothing_else(
    tmp_path: Path,
) -> None:
    action = tmp_path / "action.yml"
    action.write_text((ROOT / "action.yml").read_text())

    done = pin(action, IMAGE)

    assert done.returncode == 0, done.stderr
    before, after = (ROOT / "action.yml").read_text().splitlines(), action.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [("  image: Dockerfile", f"  image: {IMAGE}")]
    metadata = yaml.safe_load(action.read_text())
    assert metadata["runs"]["image"] == IMAGE
    subprocess.run(
        [Path(sys.executable).parent / "check-jsonschema", "--builtin-schema",
         "vendor.github-actions", str(action)],
        check=True, capture_output=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("docker://ghcr.io/evalward/evalward:0.1.0", "not an image by digest"),  # a tag moves
        ("docker://ghcr.io/evalward/evalward@sha256:abc", "not an image by digest"),
        ("ghcr.io/evalward/evalward@" + DIGEST, "not an image by digest"),
        (f"docker://ghcr.io/x/y@{DIGEST}\n  env: {{}}", "not an image by digest"),
    ],
)
def test_anything_but_an_image_by_digest_is_refused(tmp_path: Path, image: str, why: str) -> None:
    action = tmp_path / "action.yml"
    action.write_text((ROOT / "action.yml").read_text())
    done = pin(action, image)
    assert done.returncode == 2 and why in done.stderr
    assert action.read_text() == (ROOT / "action.yml").read_text()


def test_a_release_commit_is_not_pinned_twice(tmp_path: Path) -> None:
    action = tmp_path / "action.yml"
    action.write_text((ROOT / "action.yml").read_text())
    assert pin(action, IMAGE).returncode == 0
    again = pin(action, IMAGE.replace("0123", "4567"))
    assert again.returncode == 2 and "is this a release already?" in again.stderr


def test_the_release_job_moves_the_version_and_major_tags_to_the_release_commit(
    tmp_path: Path,
) -> None:
    """The `release` job's own script, verbatim, in a checkout of the tag; its push goes to a
    bare repository standing in for GitHub (git's `insteadOf`)."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    source = GitRepo(tmp_path / "source")
    source.commit("the action", {
        "action.yml": (ROOT / "action.yml").read_text(),
        "scripts/pin-action-image.py": PIN.read_text(),
    })  # fmt: skip
    tagged = source.head()
    source.git("tag", "v0.3.1")
    source.git("tag", "v0")  # the major tag, say where an earlier release left it
    source.git("push", "-q", str(origin), "main", "v0.3.1", "v0")
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", "--branch", "v0.3.1", str(origin), str(checkout)],
                   check=True, capture_output=True)  # fmt: skip

    step = next(s for s in jobs()["release"]["steps"] if "pin-action-image" in s.get("run", ""))
    url = "https://x-access-token:ghs_token@github.com/evalward/evalward.git"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        **GIT_ENV,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{origin}.insteadOf",
        "GIT_CONFIG_VALUE_0": url,
        "TAG": "v0.3.1",
        "IMAGE": "ghcr.io/evalward/evalward",
        "DIGEST": DIGEST,
        "REPOSITORY": "evalward/evalward",
        "GH_TOKEN": "ghs_token",
    }
    done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr

    def at(ref: str) -> str:
        command = ["git", "-C", str(origin), "rev-parse", f"{ref}^{{commit}}"]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()

    release = at("v0.3.1")
    assert release != tagged and at("v0") == release
    assert at("main") == tagged  # main keeps `image: Dockerfile`
    assert at(f"{release}~1") == tagged
    shown = subprocess.run(["git", "-C", str(origin), "show", f"{release}:action.yml"],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert yaml.safe_load(shown)["runs"]["image"] == f"docker://ghcr.io/evalward/evalward@{DIGEST}"
    subject = subprocess.run(["git", "-C", str(origin), "log", "-1", "--format=%s", release],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert subject.strip() == f"Release v0.3.1: the action runs ghcr.io/evalward/evalward@{DIGEST}"
    assert "ghs_token" not in done.stdout + done.stderr


def test_pypi_gets_the_tags_version_by_trusted_publishing_before_any_tag_moves() -> None:
    found = jobs()
    build = "\n".join(s.get("run", "") for s in found["python"]["steps"])
    assert "python -m build" in build and "evalward-${version}-py3-none-any.whl" in build
    pypi = found["pypi"]
    assert pypi["permissions"] == {"id-token": "write"}  # no token, no other permission
    assert pypi["environment"]["name"] == "pypi"
    (publish,) = [s for s in pypi["steps"] if "gh-action-pypi-publish" in s.get("uses", "")]
    assert "with" not in publish or "password" not in publish["with"]
    assert set(pypi["needs"]) == {"image", "python"}
    # the tags move to the release commit only once the image and PyPI have the release
    assert set(found["release"]["needs"]) == {"image", "pypi"}
    assert found["release"]["permissions"] == {"contents": "write"}
    for name, job in found.items():
        for step in job["steps"]:
            if "uses" in step:
                assert len(step["uses"].split("@")[1].split()[0]) == 40, (name, step["uses"])


@pytest.mark.registries
def test_the_sdist_and_the_wheel_install_into_a_fresh_virtualenv_and_run(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    dist = built(session_folder(tmp_path_factory))  # the session's one build (docs test too)
    wheel, sdist = dist.wheel, dist.sdist
    assert wheel.is_file() and sdist.is_file()
    names = zipfile.ZipFile(wheel).namelist()
    assert "evalward/cli/init_files/workflow.yml" in names  # what `init` writes ships too
    assert "evalward/report/templates/comment.md.j2" in names

    # uv, not pip, installs: it resolves and fetches the declared dependencies from the
    # registry just as pip does (the sdist built by its declared backend), in parallel and
    # from its cache; the docs test runs pip itself on the same wheel. The machine's proxy,
    # CA bundle and mirror reach it, as they reach an installer in a run.
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", str(tmp_path))}
    env |= {name: os.environ[name] for name in NETWORK_ENV if name in os.environ}
    uv = Path(sys.executable).parent / "uv"
    for kind, artifact in (("wheel", wheel), ("sdist", sdist)):
        venv = tmp_path / kind
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
        installed = subprocess.run(
            [uv, "pip", "install", "--quiet", "--python", venv / "bin" / "python", artifact],
            capture_output=True, text=True, timeout=600, env=env,
        )  # fmt: skip
        assert installed.returncode == 0, installed.stderr[-3000:]
        version = subprocess.run([venv / "bin" / "evalward", "--version"],
                                 capture_output=True, text=True, env=env)  # fmt: skip
        assert version.stdout.strip() == f"evalward {__version__}", version.stderr

    # the installed CLI, from outside the checkout: a tiny suite validates, `init` works
    work = GitRepo(tmp_path / "work")
    work.write({"bot.yaml": BOT})
    evalward = tmp_path / "wheel" / "bin" / "evalward"
    validated = subprocess.run([evalward, "validate"], cwd=work.path, capture_output=True,
                               text=True, env=env)  # fmt: skip
    assert validated.returncode == 0, validated.stderr
    assert "1 agents, 1 fixtures, 1 evals OK" in validated.stdout
    fresh = GitRepo(tmp_path / "fresh")
    for command in (["init"], ["validate"], ["run", "--mock-script", "evals/mock-replies.yaml"]):
        done = subprocess.run([evalward, *command], cwd=fresh.path, capture_output=True,
                              text=True, env=env)  # fmt: skip
        assert done.returncode == 0, (command, done.stderr)


BOT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec: { models: [openai/gpt-4.1-mini] }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: hello }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: hi } }
  assertions: [{ type: contains, value: hello }]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec: { targetAgent: bot, fixtures: [hello] }
"""
