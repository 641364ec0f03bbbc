"""A regression traced to its hunk with no key: a mock script whose `system` key answers by what
the agent is told, through `python -m evalward run --base main --mock-script` on a real
repository. The clerk's prompt change is three hunks (support/clerk.py); the second (a NEVER
REFUND rule) makes the scripted reply refuse, so attribution's variants of the head are
answered by their own prompt: the head without the rule is fixed, the base with only it
regresses. Either agent kind: a native agent's `systemFile`, and a program that sends the
same file as Anthropic's `system` through the model proxy."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from support.clerk import AGENT, BASE_PROMPT, HEAD_PROMPT, SUITE
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

PROGRAM = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  runtime:
    command: {{ run: [{sys.executable}, agent/clerk.py, "{{input}}"] }}
  watch: [agent/*.py, prompts/*.md]
"""
CLERK_PY = """\
import json, os, sys, urllib.request
from pathlib import Path

prompt = (Path(__file__).resolve().parents[1] / "prompts" / "clerk.md").read_text()
body = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 200,
    "system": [{"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": sys.argv[1]}],
}
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
    data=json.dumps(body).encode(),
    headers={
        "content-type": "application/json",
        "x-api-key": os.environ["ANTHROPIC_API_KEY"],
        "anthropic-version": "2023-06-01",
    },
)
with urllib.request.urlopen(request, timeout=30) as reply:
    print(json.loads(reply.read())["content"][0]["text"])
"""
SCRIPT = """\
replies:
  - match: { agent: clerk, system: NEVER REFUND }
    turns: [{ content: "hello, sorry: no refunds." }]
  - match: { agent: clerk }
    turns: [{ content: "hello, your refund is approved." }]
"""
"""A refusal where the prompt holds the rule, else an approval."""


def _stricter(repo: GitRepo, agent: dict[str, str]) -> None:
    """main: the clerk; then a branch `stricter` with the three-hunk prompt committed."""
    repo.commit(
        "the clerk",
        {
            **agent,
            "prompts/clerk.md": BASE_PROMPT,
            "evals/clerk.yaml": SUITE,
            "script.yaml": SCRIPT,
            "evalward.yaml": "attribution: { mode: on-block, budget: 4 }\n",
            ".gitignore": ".evalward/\nout/\n",
        },
    )
    repo.branch("stricter")
    repo.commit("a stricter clerk", {"prompts/clerk.md": HEAD_PROMPT})


@pytest.mark.parametrize(
    "agent",
    [
        {"agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-mini")},
        {"agents/clerk.yaml": PROGRAM, "agent/clerk.py": CLERK_PY},
    ],
    ids=["native", "program-through-the-proxy"],
)
def test_a_regression_is_traced_to_the_prompt_hunk_the_script_answers_by(
    repo: GitRepo, agent: dict[str, str]
) -> None:
    _stricter(repo, agent)

    done = evalward(
        "run", "--base", "main", "--mock-script", "script.yaml", "--output-dir", "out",
        cwd=repo.path,
    )  # fmt: skip

    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr  # blocked by the refund's regression
    results: dict[str, Any] = json.loads((repo.path / "out" / "results.json").read_text())
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    assert regression["fixtures"] == ["refund-a", "refund-b"]
    # every hunk of the change; those tried: the first, found not to be it, then the rule
    assert [(h["path"], h["first"]) for h in regression["hunks"]] == [
        ("prompts/clerk.md", 1),
        ("prompts/clerk.md", 5),
        ("prompts/clerk.md", 8),
    ]
    assert sorted({i for t in regression["trials"] for i in t["hunks"]}) == [0, 1]
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"], culprit["last"]) == ("prompts/clerk.md", 5, 5)
    where = done.stdout[done.stdout.index("Where it regressed") :]
    assert "`prompts/clerk.md:5` — taken back, refund-a 1/1, refund-b 1/1" in where
    assert "the base with only it: refund-a 0/1, refund-b 0/1" in where
    assert "prompts/clerk.md:1" not in where and "prompts/clerk.md:8" not in where
    assert "evalward: attribution: 1 of 1 regressions traced to their hunks" in done.stderr
