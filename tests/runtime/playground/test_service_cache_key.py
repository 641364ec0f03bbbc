"""A service playground's runs are answered from the result cache only while every file its
program may read is unchanged, through `evalward run` twice: a service names no `watch`, so
a module it imports (or a program named by a plain name) is as much what the run is made
from as its seed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENT = """\
import json, sys
json.load(sys.stdin)
print(json.dumps({"type": "final", "content": "done"}))
"""

SERVER = """\
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from rules import STATUS


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"status": STATUS}).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""

EVALS = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  runtime:
    command: {{ run: [{python}, agent.py] }}
  watch: [agent.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: crm-eval }}
spec:
  targetAgent: clerk
  fixtures: [ticket-open]
  playground:
    name: crm
    service: {{ start: [python3, {program}, "{{port}}"], ready: /state, state: /state }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: ticket-open }}
spec:
  targetAgent: clerk
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions:
    - {{ type: stateValue, at: service.status, equals: open }}
"""


def run(repo: GitRepo, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    out = tmp_path / "out"
    done = evalward("run", ".", "--output-dir", str(out), cwd=repo.path)
    assert "Traceback" not in done.stderr, done.stderr
    (result,) = json.loads((out / "results.json").read_text())["fixtures"]
    return done.stdout + done.stderr, result


@pytest.mark.parametrize(
    ("program", "changed"),
    [
        ("crm/server.py", "crm/rules.py"),  # a module the program imports
        ("server.py", "server.py"),  # the program, named without a folder
    ],
)
def test_a_service_whose_code_changed_runs_again(
    repo: GitRepo, tmp_path: Path, program: str, changed: str
) -> None:
    folder = program.rpartition("/")[0]
    rules = f"{folder}/rules.py" if folder else "rules.py"
    repo.commit(
        "crm",
        {
            "evals.yaml": EVALS.format(python=sys.executable, program=program),
            "agent.py": AGENT,
            program: SERVER,
            rules: 'STATUS = "open"\n',
            ".gitignore": ".evalward/\n__pycache__/\n",
        },
    )
    said, first = run(repo, tmp_path)
    assert first["status"] == "pass", said
    said, again = run(repo, tmp_path)  # nothing changed: the cache answers
    assert again["status"] == "pass" and "1 of 1 runs reused" in said, said

    text = (repo.path / changed).read_text()
    edited = (
        text.replace('"open"', '"closed"')
        if changed == rules
        else text.replace('{"status": STATUS}', '{"status": "closed"}')
    )
    assert edited != text
    repo.commit("the service closes tickets", {changed: edited})
    said, after = run(repo, tmp_path)
    assert "reused" not in said, said
    assert after["status"] == "fail", said


WATCHING = EVALS.replace(
    "ready: /state, state: /state }}", "ready: /state, state: /state, watch: [shop/**] }}"
)
"""The same suite, its service naming what it reads: `shop/**`."""


@pytest.mark.parametrize(
    ("changed", "reused"),
    [
        ("docs/notes.md", True),  # a file its `watch` does not match
        ("shop/rules.py", False),  # a module it imports, which its `watch` matches
    ],
)
def test_a_watching_service_runs_again_only_when_what_it_watches_changed(
    repo: GitRepo, tmp_path: Path, changed: str, reused: bool
) -> None:
    """A service that names a `watch` is keyed on what it names and what its `watch`
    matches, not on the whole tree: a change elsewhere reads the cache, one to a module it
    imports runs it again."""
    repo.commit(
        "crm",
        {
            "evals.yaml": WATCHING.format(python=sys.executable, program="shop/server.py"),
            "agent.py": AGENT,
            "shop/server.py": SERVER,
            "shop/rules.py": 'STATUS = "open"\n',
            "docs/notes.md": "notes\n",
            ".gitignore": ".evalward/\n__pycache__/\n",
        },
    )
    said, first = run(repo, tmp_path)
    assert first["status"] == "pass", said

    edited = {"docs/notes.md": "other notes\n", "shop/rules.py": 'STATUS = "closed"\n'}
    repo.commit(f"{changed} changed", {changed: edited[changed]})
    said, after = run(repo, tmp_path)
    if reused:
        assert after["status"] == "pass" and "1 of 1 runs reused" in said, said
    else:
        assert "reused" not in said, said
        assert after["status"] == "fail", said
