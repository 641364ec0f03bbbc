"""Repositories of agents with dependencies, gated by the action as GitHub runs it
(tests/runtime/environments/test_agent_environments.py,
tests/runtime/environments/test_hostile_install.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import ActionRun, prepare, pull_request_event
from support.actionrun import execute as execute_action
from support.documents import labelled_suite
from support.gitrepo import GitRepo

needs_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="running agents as a second user needs root (the action's image and CI run as root)",
)
PYTHON = "/usr/bin/python3"
"""An interpreter every user may run (this test's own may live in root's home)."""
RUNNER_UID = 1001
CLERK_AGENT = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  runtime:
    command: [{PYTHON}, agent/clerk.py]
  watch: [agent/*.py]
"""
"""The Agent `clerk`: the program `agent/clerk.py`, run by `PYTHON`."""

PY_AGENT = """\
import importlib.util, json, os, pathlib, sys
import six

def compiled(module):
    # its .pyc is there and Python takes it: the same source time and size, or hash
    try:
        head = pathlib.Path(module.__cached__).read_bytes()[:16]
    except OSError:
        return False
    source = pathlib.Path(module.__file__)
    if int.from_bytes(head[4:8], "little") & 1:
        return head[8:16] == importlib.util.source_hash(source.read_bytes())
    info = source.stat()
    recorded = [int(info.st_mtime) & 0xFFFFFFFF, info.st_size & 0xFFFFFFFF]
    fields = [int.from_bytes(head[i : i + 4], "little") for i in (8, 12)]
    return head[:4] == importlib.util.MAGIC_NUMBER and fields == recorded

sys.stdin.read()
env = pathlib.Path(os.environ["VIRTUAL_ENV"]).parent
record = json.loads((env / "environment.json").read_text())
attempts = {}
beside = str(pathlib.Path(six.__file__).parent / "x.py")
for name, target in (("package", six.__file__), ("new file", beside)):
    try:
        open(target, "a").close()
        attempts[name] = "written"
    except OSError as exc:
        attempts[name] = type(exc).__name__
report = {"six": six.__version__, "uid": os.getuid(), "built": record["built"],
          "attempts": attempts, "where": six.__file__, "compiled": compiled(six)}
print(json.dumps({"type": "final", "content": "six " + json.dumps(report)}))
"""

NODE_AGENT = """\
import ms from "ms";
import { createRequire } from "node:module";
import process from "node:process";
const require = createRequire(import.meta.url);
const version = require("ms/package.json").version;
let chunks = "";
process.stdin.on("data", (c) => (chunks += c));
process.stdin.on("end", () => {
  const report = { ms: version, twoHours: ms("2h"), uid: process.getuid() };
  console.log(JSON.stringify({ type: "final", content: "ms " + JSON.stringify(report) }));
});
"""

SUITE = labelled_suite("dep-agent", "imports", "hi", "{ type: contains, value: '\"uid\"' }")


def agent_yaml(run: list[str], environment: dict[str, Any]) -> str:
    header = "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: dep-agent }\n"
    return (
        header
        + "spec:\n"
        + (
            f"  runtime: {{ command: {{ run: {json.dumps(run)} }} }}\n"
            f"  environment: {json.dumps(environment)}\n"
        )
    )


def requirements(version: str) -> dict[str, str]:
    return {
        "agents/dep-agent.yaml": agent_yaml(
            ["python", "agent/agent.py"], {"python": "agent/requirements.txt"}
        ),
        "agent/requirements.txt": f"six=={version}\n",
    }


def uv_project(version: str) -> dict[str, str]:
    """A pyproject.toml and the uv.lock `uv lock` writes for it."""
    lock = f"""\
version = 1
revision = 3
requires-python = ">=3.10"

[[package]]
name = "agent"
version = "0.1.0"
source = {{ virtual = "." }}
dependencies = [
    {{ name = "six" }},
]

[package.metadata]
requires-dist = [{{ name = "six", specifier = "=={version}" }}]

[[package]]
name = "six"
version = "{version}"
source = {{ registry = "https://pypi.org/simple" }}
wheels = [
    {{ url = "{SIX_WHEELS[version][0]}", hash = "{SIX_WHEELS[version][1]}" }},
]
"""
    project = f"""\
[project]
name = "agent"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = ["six=={version}"]
"""
    return {
        "agents/dep-agent.yaml": agent_yaml(
            ["python", "agent/agent.py"], {"python": "agent/pyproject.toml"}
        ),
        "agent/pyproject.toml": project,
        "agent/uv.lock": lock,
    }


SIX_WHEELS = {
    "1.17.0": (
        "https://files.pythonhosted.org/packages/b7/ce/"
        "149a00dd41f10bc29e5921b496af8b574d8413afcd5e30dfa0ed46c2cc5e/six-1.17.0-py2.py3-none-any.whl",
        "sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274",
    ),
}

MS_INTEGRITY = {
    "2.1.2": "sha512-sGkPx+VjMtmA6MX27oA4FBFELFCZZ4S4XqeGOXCv68tT+jb3vk/RyaKWP0PTKyWtmLSM0b+adUTE"
    "vbs1PEaH2w==",
    "2.1.3": "sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/"
    "tXtF3WRTlA==",
}


def node_package(version: str) -> dict[str, str]:
    package = {
        "name": "agent",
        "version": "1.0.0",
        "private": True,
        "type": "module",
        "dependencies": {"ms": version},
    }
    lock = {
        "name": "agent",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": {"name": "agent", "version": "1.0.0", "dependencies": {"ms": version}},
            "node_modules/ms": {
                "version": version,
                "resolved": f"https://registry.npmjs.org/ms/-/ms-{version}.tgz",
                "integrity": MS_INTEGRITY[version],
                "license": "MIT",
            },
        },
    }
    return {
        "agents/dep-agent.yaml": agent_yaml(
            ["node", "agent/agent.mjs"], {"node": "agent/package.json"}
        ),
        "agent/package.json": json.dumps(package, indent=2) + "\n",
        "agent/package-lock.json": json.dumps(lock, indent=2) + "\n",
        "agent/agent.mjs": NODE_AGENT,
    }


SCRIPTED_AGENT = """\
const fs = require("node:fs");
fs.readFileSync(0);
const report = JSON.stringify({ uid: process.getuid() });
console.log(JSON.stringify({ type: "final", content: "ran " + report }));
"""

HONEST = """\
const fs = require("node:fs");
fs.mkdirSync("node_modules", { recursive: true });
"""
"""A postinstall script that leaves what npm would (its package has no dependency)."""


def scripted_project(
    install: str,
    *,
    python: bool = True,
    bounds: dict[str, float] | None = None,
    agent: str = SCRIPTED_AGENT,
) -> dict[str, str]:
    """An agent whose package.json has no dependency and a postinstall script, `install`
    (code of the pull request, run as the agent user after the Python part, if any: an empty
    requirements file); `bounds` are more fields of its `environment`. Nothing downloads."""
    manifest = {
        "name": "agent",
        "version": "1.0.0",
        "private": True,
        "scripts": {"postinstall": "node install.cjs"},
        "description": hashlib.sha256(install.encode()).hexdigest(),  # the script changes it
    }
    lock = {
        "name": "agent",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {"": {"name": "agent", "version": "1.0.0", "hasInstallScript": True}},
    }
    environment: dict[str, Any] = {"node": "agent/package.json", **(bounds or {})}
    files = {
        "agents/dep-agent.yaml": agent_yaml(["node", "agent/agent.cjs"], environment),
        "agent/package.json": json.dumps(manifest),
        "agent/package-lock.json": json.dumps(lock),
        "agent/install.cjs": install,
        "agent/agent.cjs": agent,
    }
    if python:
        environment["python"] = "agent/requirements.txt"
        files["agents/dep-agent.yaml"] = agent_yaml(["node", "agent/agent.cjs"], environment)
        files["agent/requirements.txt"] = ""
    return files


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A workspace under a folder every user may enter."""
    # Open to every user, as GitHub's workspace is (pytest's tmp_path is 0700).
    root = Path(tempfile.mkdtemp(prefix="evalward-environments-"))
    root.chmod(0o755)
    yield root / "workspace"
    shutil.rmtree(root, ignore_errors=True)


def open_pr(
    workspace: Path,
    github: FakeGitHub,
    base: dict[str, str],
    head: dict[str, str],
    removed: tuple[str, ...] = (),
    suite: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pull request from `base` to `head` (files on top of it); `suite` is the base's
    evalward resources (the dependency agent's by default)."""
    repo = GitRepo(workspace)
    resources = {"evals/dep-agent.yaml": SUITE} if suite is None else suite
    base_sha = repo.commit(
        "an agent with dependencies", {**base, **resources, ".gitignore": ".evalward/\n"}
    )
    repo.branch("feature")
    if removed:
        repo.remove(*removed)
    head_sha = repo.commit("other dependencies", head)
    github.add_pull(FakePull(number=3, head_sha=head_sha, base_sha=base_sha))
    for path in [workspace, *workspace.rglob("*")]:  # the runner's user owns the checkout
        os.lchown(path, RUNNER_UID, RUNNER_UID)
    return pull_request_event(github.repository, 3, base_sha, head_sha)


def run_gate(
    workspace: Path,
    github: FakeGitHub,
    event: dict[str, Any],
    inputs: dict[str, str] | None = None,
    **env: str,
) -> ActionRun:
    launch = prepare(
        workspace,
        github,
        event,
        inputs={"output-dir": ".evalward/out", **(inputs or {})},
        env={
            "OPENAI_API_KEY": "sk-environment-secret-0123456789",
            **{
                k: os.environ[k]
                for k in ("SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS")
                if k in os.environ
            },
            **env,
        },
    )
    run = execute_action(workspace, launch)
    run.output_dir = workspace / ".evalward" / "out"
    return run


def finals(run: ActionRun, word: str) -> dict[str, dict[str, Any]]:
    """Each side's report, from its run's final answer."""
    found: dict[str, dict[str, Any]] = {}
    for fixture in run.results()["fixtures"]:
        for step in fixture["trace"]["steps"]:
            if step["type"] == "final" and step["content"].startswith(word + " "):
                found[fixture["side"]] = json.loads(step["content"][len(word) + 1 :])
    return found


def errors(run: ActionRun) -> dict[str, str]:
    return {
        f["side"]: s["content"]
        for f in run.results()["fixtures"]
        for s in f["trace"]["steps"]
        if s["type"] == "error"
    }
