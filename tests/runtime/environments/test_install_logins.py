"""A workflow behind a proxy with a login (`HTTPS_PROXY=http://user:password@proxy`) or with
a private index's token in a URL (`UV_EXTRA_INDEX_URL=https://__token__:TOKEN@host/simple`):
the pull request's install script (npm's `postinstall`) is given each URL without its login,
and when it prints them and fails, the run's message names the variables and why, and no
file, comment or summary holds the password or the token. They once reached the script, and
the failure it printed posted them. Needs root (the user switch) and Node.js; the package has
no dependency, so nothing is downloaded."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.agentenv import agent_yaml, open_pr, run_gate, workspace

__all__ = ["workspace"]

pytestmark = pytest.mark.hostile

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching to the agent user needs root")
needs_node = pytest.mark.skipif(shutil.which("npm") is None, reason="Node.js is not installed")

PASSWORD = "Pr0xyPassw0rd-4242"
PROXY = f"http://ci-bot:{PASSWORD}@127.0.0.1:9"
TOKEN = "IndexTok3n-777777"
INDEX = f"https://__token__:{TOKEN}@pypi.corp.example/simple"

INSTALL = """\
const seen = ["HTTPS_PROXY", "UV_EXTRA_INDEX_URL"].map((n) => `${n}=${process.env[n]}`);
console.log("THE INSTALL SAW " + seen.join(" "));
process.exit(1);
"""


def package(marker: str, install_script: bool) -> dict[str, str]:
    """An agent whose package has no dependency; with an install script that prints its
    environment and fails, when `install_script`."""
    manifest: dict[str, object] = {"name": "agent", "version": "1.0.0", "private": True}
    root: dict[str, object] = {"name": "agent", "version": "1.0.0"}
    manifest["description"] = marker
    if install_script:
        manifest["scripts"] = {"postinstall": "node install.cjs"}
        root["hasInstallScript"] = True
    lock = {"name": "agent", "lockfileVersion": 3, "requires": True, "packages": {"": root}}
    return {
        "agents/dep-agent.yaml": agent_yaml(
            ["node", "agent/agent.mjs"], {"node": "agent/package.json"}
        ),
        "agent/package.json": json.dumps(manifest),
        "agent/package-lock.json": json.dumps(lock),
        "agent/install.cjs": INSTALL,
        "agent/agent.mjs": 'console.log(JSON.stringify({type: "final", content: "hi"}));\n',
    }


@needs_root
@needs_node
def test_an_install_gets_no_login_of_a_url_and_its_failure_says_why(
    workspace: Path, github: FakeGitHub
) -> None:
    event = open_pr(workspace, github, package("base", False), package("head", True))

    run = run_gate(
        workspace,
        github,
        event,
        HTTPS_PROXY=PROXY,
        HTTP_PROXY=PROXY,
        NO_PROXY="127.0.0.1,localhost,::1",
        UV_EXTRA_INDEX_URL=INDEX,
    )

    written = {p.name: p.read_text() for p in run.output_dir.iterdir() if p.is_file()}
    written |= {"summary": run.summary, "stdout": run.stdout, "stderr": run.stderr}
    written |= {f"comment {i}": c["body"] for i, c in enumerate(github.comments_on(3))}
    results = json.loads(written["results.json"])
    (said,) = {f["message"] for f in results["fixtures"] if f["side"] == "head"}
    assert "THE INSTALL SAW HTTPS_PROXY=http://127.0.0.1:9 " in said, said
    assert "UV_EXTRA_INDEX_URL=https://pypi.corp.example/simple\n" in said, said
    assert "HTTPS_PROXY, HTTP_PROXY, UV_EXTRA_INDEX_URL gave a URL with a login" in said, said
    assert "evalward hands no credential to the pull request's code" in said
    leaks = sorted(where for where, text in written.items() if PASSWORD in text or TOKEN in text)
    assert leaks == [], leaks
