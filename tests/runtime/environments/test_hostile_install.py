"""A pull request's install step attacks the action that builds its environment, and gets
nothing: npm runs the package's own `postinstall` script (code from the pull request) as the
agent user, with the environment an installer gets; it looks for secrets and tries to write
evalward's cache and the workspace, and its agent later tries to change the environment it
runs from. The package has no dependency, so nothing is downloaded. Needs root (the user
switch) and Node.js."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from support.agentenv import agent_yaml, finals, open_pr, run_gate, workspace
from support.agentuser import AGENT_UID

pytestmark = pytest.mark.hostile

__all__ = ["workspace"]  # a fixture

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="running agents as a second user needs root (as in the image)"
)
needs_node = pytest.mark.skipif(shutil.which("npm") is None, reason="no npm on PATH")

INSTALL = """\
const fs = require("node:fs");
const path = require("node:path");
const target = JSON.parse(fs.readFileSync(path.join(__dirname, "target.json"), "utf8"));
const attempts = {};
for (const [name, file] of Object.entries(target.write)) {
  try { fs.writeFileSync(file, "pwned"); attempts[name] = "written"; }
  catch (e) { attempts[name] = e.code; }
}
const loot = { uid: process.getuid(), env: process.env, attempts };
fs.mkdirSync(path.join(__dirname, "node_modules"), { recursive: true });
fs.writeFileSync(path.join(__dirname, "node_modules", ".loot.json"), JSON.stringify(loot));
"""

AGENT = """\
import fs from "node:fs";
import path from "node:path";
const modules = path.join(path.dirname(new URL(import.meta.url).pathname), "node_modules");
const loot = JSON.parse(fs.readFileSync(path.join(modules, ".loot.json"), "utf8"));
const later = {};
for (const [name, file] of Object.entries({
  "the install's file": path.join(modules, ".loot.json"),
  "a new file": path.join(modules, "planted.js"),
  "the environment's record": path.join(process.env.NODE_PATH, "..", "environment.json"),
})) {
  try { fs.appendFileSync(file, "x"); later[name] = "written"; } catch (e) { later[name] = e.code; }
}
try { fs.chmodSync(process.env.NODE_PATH, 0o777); later.chmod = "changed"; }
catch (e) { later.chmod = e.code; }
process.stdin.resume();
process.stdin.on("end", () => {
  const content = "loot " + JSON.stringify({ loot, later });
  console.log(JSON.stringify({ type: "final", content }));
});
"""


def package(workspace: Path, marker: str) -> dict[str, str]:
    manifest = {
        "name": "agent",
        "version": "1.0.0",
        "private": True,
        "scripts": {"postinstall": "node install.cjs"},
        "description": marker,
    }
    lock = {
        "name": "agent",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {"": {"name": "agent", "version": "1.0.0", "hasInstallScript": True}},
    }
    cache = workspace / ".evalward" / "cache"
    target = {
        "write": {
            "the cache": str(cache / "environments" / "pwned"),
            "the result cache": str(cache / "results" / "pwned.json"),
            "the workspace": str(workspace / "pwned.txt"),
            "the agent's folder in the workspace": str(workspace / "agent" / "pwned.txt"),
        }
    }
    return {
        "agents/dep-agent.yaml": agent_yaml(
            ["node", "agent/agent.mjs"], {"node": "agent/package.json"}
        ),
        "agent/package.json": json.dumps(manifest),
        "agent/package-lock.json": json.dumps(lock),
        "agent/install.cjs": INSTALL,
        "agent/agent.mjs": AGENT,
        "agent/target.json": json.dumps(target),
    }


@needs_root
@needs_node
def test_an_install_script_gets_no_secret_and_cannot_change_what_runs(
    workspace: Path, github: FakeGitHub
) -> None:
    event = open_pr(workspace, github, package(workspace, "base"), package(workspace, "head"))
    secret = "sk-environment-secret-0123456789"
    first = run_gate(workspace, github, event, DEPLOY_TOKEN="dpl-0a1b2c3d4e5f6a7b")
    assert first.returncode == 0, first.stdout + first.stderr
    head: dict[str, Any] = finals(first, "loot")["head"]

    loot = head["loot"]
    assert loot["uid"] == AGENT_UID, "the install ran as the agent user"
    said = json.dumps(loot["env"])
    assert secret not in said and "dpl-0a1b2c3d4e5f6a7b" not in said
    assert not [n for n in loot["env"] if n.startswith(("GITHUB_", "INPUT_", "ACTIONS_"))]
    assert set(loot["attempts"].values()) == {"EACCES"}, loot["attempts"]
    assert not (workspace / "pwned.txt").exists()
    assert not (workspace / ".evalward" / "cache" / "environments" / "pwned").exists()
    assert head["later"] == {
        "the install's file": "EACCES",
        "a new file": "EACCES",
        "the environment's record": "EACCES",
        "chmod": "EPERM",
    }, head["later"]

    # What is kept for the next run is what was sealed, and comes back the same.
    kept = workspace / ".evalward" / "cache" / "environments"
    for folder in kept.iterdir():
        record = json.loads((folder / "environment.json").read_text())
        assert record["key"] == folder.name and record["side"] in ("base", "head")
        assert not [
            p for p in folder.rglob("*") if p.lstat().st_mode & (stat.S_ISUID | stat.S_ISGID)
        ]
    shutil.rmtree(workspace / ".evalward" / "cache" / "results")
    second = run_gate(workspace, github, event)
    assert second.returncode == 0, second.stdout + second.stderr
    again = finals(second, "loot")["head"]
    assert again["loot"] == loot, "the environment a later run restores is the one sealed"
    assert again["later"] == head["later"]
