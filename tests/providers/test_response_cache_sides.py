"""The response cache of `evalward.yaml` against a pull request's program, through `evalward
run`: a head run of a comparison keeps its forwarded calls apart, so a push's run of the same
agent, once it is merged, asks the model again rather than read the reply the pull request's
program chose to keep (a program picks its requests and a stream it cuts is not kept)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fakes.model_server import ScriptedModelServer, text
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENTS = Path(__file__).resolve().parents[1] / "agents"

RESOURCES = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: caller }}
spec:
  runtime:
    command: [{sys.executable}, agent/proxy_agent.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: caller-eval }}
spec:
  targetAgent: caller
  fixtures: [greets]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: greets }}
spec:
  targetAgent: caller
  input: {{ type: prompt, payload: {{ prompt: "calls 1: hello" }} }}
  assertions: [{{ type: contains, value: "200" }}]
"""


def _run(repo: GitRepo, model: ScriptedModelServer, *args: str) -> None:
    done = evalward(
        "run",
        ".",
        "--no-history",
        *args,
        cwd=repo.path,
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY="sk-response-cache-sides-0123456789",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_a_push_after_the_merge_never_reads_the_pull_request_s_kept_reply(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    model.script("hello", text("hi there"))
    program = (AGENTS / "proxy_agent.py").read_text()
    repo.commit(
        "a caller and its eval, the response cache on",
        {
            "evalward.yaml": "cache: { mode: read-write, dir: .evalward/responses }\n",
            ".gitignore": ".evalward/\n",
            "agents.yaml": RESOURCES,
            "agent/proxy_agent.py": program,
        },
    )
    repo.branch("feature")
    repo.commit("the same call, another program", {"agent/proxy_agent.py": program + "# v2\n"})

    _run(repo, model, "--base", "main")
    assert len(model.calls) == 2  # the base's run and the head's, the same request each
    kept = list((repo.path / ".evalward" / "responses").rglob("*.json"))
    assert len(kept) == 2, kept  # each side's reply, apart

    repo.checkout("main")
    repo.git("merge", "-q", "--ff-only", "feature")
    _run(repo, model)

    # the merged agent's result is no result a push computed, so it runs; its call is the
    # very one the pull request's program made, and is asked of the model again
    assert len(model.calls) == 3
