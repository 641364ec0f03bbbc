"""The pull request whose agent would behave well only on the reps that count: it looks for
which rep (and which side) it is in everything evalward gives it — its request, its
environment, its arguments, its working folder, its HOME/TMPDIR, its playground — and finds
nothing that tells rep 1 from rep 5. Through the action, with five reps on each side: once
the names evalward makes at random (a proxy key, a temporary folder, a port) are set aside,
all ten runs saw exactly the same thing."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.actionrun import pull_request_event
from support.agentenv import PYTHON, needs_root, run_gate, workspace
from support.byoagent import pr_tuning
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

__all__ = ["workspace"]  # a fixture

LOOKER = r"""
import hashlib, json, os, sys

def listing(top):
    found = {}
    for folder, dirs, files in os.walk(top):
        for name in sorted(dirs + files):
            path = os.path.join(folder, name)
            found[os.path.relpath(path, top)] = (
                open(path).read() if os.path.isfile(path) else "folder"
            )
    return found

seen = {
    "request": json.loads(sys.stdin.read()),
    "argv": sys.argv,
    "env": {  # a long value by its hash: the run's output is kept up to 8 KiB
        name: value if len(value) < 200 else hashlib.sha256(value.encode()).hexdigest()
        for name, value in os.environ.items()
    },
    "cwd": os.getcwd(),
    "home": listing(os.environ["HOME"]),
    "playground": listing(os.environ["EVALWARD_PLAYGROUND_DIR"]),
}
print(json.dumps({"type": "final", "content": json.dumps(seen, sort_keys=True)}))
"""

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: looker }}
spec:
  runtime:
    command: {{ run: [{PYTHON}, agent/looker.py] }}
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: looker-eval }}
spec:
  targetAgent: looker
  fixtures: [look]
  execution: {{ repsPerFixture: 5, parallel: 1 }}
  playground: {{ name: desk, files: {{ seed: world }} }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: look }}
spec:
  targetAgent: looker
  input: {{ type: prompt, payload: {{ prompt: Which run is this? }} }}
  assertions:
    - {{ type: contains, value: request }}
"""

RANDOM = [
    (re.compile(r"evalward-proxy-[A-Za-z0-9_-]+"), "evalward-proxy-KEY"),
    (re.compile(r"(evalward-agents-|evalward-playground-|checkout-|home-)[a-z0-9_]{8}"), r"\1X"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (
        re.compile(r'"(/dev/fd/)?\d+", "EVALWARD_EVENTS_FD": "\d+"'),
        '"FD", "EVALWARD_EVENTS_FD": "FD"',
    ),
]
"""What each run gets that the system or evalward picks at random: set aside before the runs
are compared (the events pipe's descriptor is whatever number was free as it started)."""


def without_random_names(seen: str) -> str:
    for pattern, stands_for in RANDOM:
        seen = pattern.sub(stands_for, seen)
    return seen


@needs_root
def test_no_run_can_tell_which_rep_or_side_it_is(workspace: Path, github: FakeGitHub) -> None:
    files = {
        "evals/looker.yaml": SUITE,
        "agent/looker.py": LOOKER,
        "world/notes.txt": "a seeded note\n",
    }
    base, head = pr_tuning(GitRepo(workspace), github, 3, files, "agent/looker.py")
    for path in [workspace, *workspace.rglob("*")]:  # the runner's user owns the checkout
        os.lchown(path, 1001, 1001)
    event = pull_request_event(github.repository, 3, base, head)

    run = run_gate(workspace, github, event, {"cache": "off"})

    assert run.returncode == 0, run.stdout + run.stderr
    fixtures = run.results()["fixtures"]
    assert sorted((f["side"], f["rep"]) for f in fixtures) == [
        (side, rep) for side in ("base", "head") for rep in range(5)
    ]
    views = {(f["side"], f["rep"]): f["output"] for f in fixtures}
    assert len(set(views.values())) == 10  # each run has its own key, folders and port
    alike = {without_random_names(view) for view in views.values()}
    assert len(alike) == 1, "\n\n".join(sorted(alike))
    seen = json.loads(alike.pop())
    assert set(seen["request"]) == {
        "protocol",
        "agent",
        "fixture",
        "eval",
        "input",
        "messages",
        "shadowTools",
        "toolReplay",
        "playground",  # where the run's playground is: its random names, as in the env
    }
    assert not any("rep" in name.lower() for name in seen["env"]), seen["env"]
