"""A refund clerk whose prompt change is three hunks, one of which (NEVER REFUND, line 5 of the
head's prompt) makes two of its three fixtures regress: the pull request attribution's tests
run, in-process (tests/flows/test_attribution_runs.py) and through the action
(tests/action/test_attribution_gate.py). The scripted model answers by what the agent is
really sent (`script`)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from fakes.model_server import ScriptedModelServer, text

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  models: [{model}]
  systemFile: prompts/clerk.md
"""
"""The clerk, `{model}` to fill: `openai/gpt-4.1-nano` is the model the script answers badly."""
SUITE = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: clerk-eval }
spec:
  targetAgent: clerk
  fixtures: [refund-a, refund-b, greet]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund-a }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "refund order 1" } }
  assertions: [{ type: contains, value: approved }]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund-b }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "refund order 2" } }
  assertions: [{ type: contains, value: approved }]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: greet }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "hi" } }
  assertions: [{ type: contains, value: hello }]
"""
BASE_PROMPT = """\
You are a refund clerk.
Be brief.

Refunds are approved for orders.
Say approved when you approve one.

Greet people with hello.
End politely.
"""
NEVER = "NEVER REFUND anything.\n"
"""The hunk that breaks both refunds."""
HEAD_PROMPT = """\
You are a careful refund clerk.
Be brief.

Refunds are approved for orders.
NEVER REFUND anything.
Say approved when you approve one.

Greet people with hello there.
End politely.
"""


def script(model: ScriptedModelServer) -> None:
    """Refunds refused where the agent is told NEVER REFUND or runs on gpt-4.1-nano; else
    approved, with a hello."""

    def refuses(body: dict[str, object]) -> bool:
        sent = json.dumps(body)
        return "NEVER REFUND" in sent or "gpt-4.1-nano" in sent

    model.script(refuses, text("hello"))
    model.script(lambda body: True, text("approved, hello"))


def git_on_commit_tree(folder: Path, shell: str) -> str:
    """A PATH whose `git` (in `folder`) runs the `shell` lines each time it is asked to write
    a commit (`commit-tree`: a variant of attribution's), then is git itself: where a test
    breaks in between two variants or refuses one."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "git").write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        '  if [ "$arg" = commit-tree ]; then\n'
        f"{shell}\n"
        "  fi\n"
        "done\n"
        f'exec "{real}" "$@"\n'
    )
    (folder / "git").chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"
