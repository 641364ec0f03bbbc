"""The base side is the base commit's, whole: a pull request that edits a file a base resource
reads — an AgentV suite's cases file, a file content part, a grader's prompt, a prompt file,
any of them behind a symbolic link — does not change the definitions that gate it, though
the resource's own file is unchanged. Each pull request also breaks the agent (its greeting
calls a tool and no longer offers help), and the base's cases catch that; so each must fail.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from action.test_gate_evasion import comment, gate
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.gitrepo import GitRepo
from support.suite import BASE_PROMPT, HEAD_PROMPT, SUPPORT_BOT, script_model

pytestmark = pytest.mark.hostile

EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: support-eval }
spec:
  targetAgent: support-bot
  fixtureSelector: { matchLabels: { agent: support-bot } }
  judge: { model: openai/judge-m }
  scoring: { passThreshold: 0.9 }
"""
STRICT = "  - { type: contains, value: help you }\n"
LENIENT = "  - { type: contains, value: Hello }\n"
CASES = """\
- id: greeting
  input: Hello there!
  assertions:
{check}- id: order-status
  input: Where is my order 12345?
  assertions:
    - {{ type: contains, value: shipped }}
"""


def _cases(check: str) -> str:
    return CASES.format(check="  " + check)


SUITE_WITH_CASES_FILE = "execution: { target: support-bot }\ntests: ./support-cases.yaml\n"
SUITE_WITH_LINKED_CASES = "execution: { target: support-bot }\ntests: ./cases/support-cases.yaml\n"
SUITE_WITH_FILE_PART = """\
execution: { target: support-bot }
tests:
  - id: greeting
    input:
      - role: user
        content:
          - { type: file, value: ./greeting.yaml }
    assertions:
      - { type: contains, value: help you }
"""
SUITE_WITH_GRADER = """\
execution: { target: support-bot }
tests:
  - id: greeting
    input: Hello there!
    assertions:
      - { type: llm-grader, prompt: ./grader.yaml }
"""


def _verdict(score: float) -> Any:
    return text(json.dumps({"score": score, "confidence": 0.9, "summary": f"scored {score}"}))


def _has(*needles: str) -> Any:
    return lambda body: all(n in json.dumps(body) for n in needles)


# What each kind of reference starts as on the base, and what the pull request makes of it.
KINDS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "a cases file": (
        {
            "evals/support.eval.yaml": SUITE_WITH_CASES_FILE,
            "evals/support-cases.yaml": _cases(STRICT),
        },
        {"evals/support-cases.yaml": _cases(LENIENT)},
    ),
    "a cases file behind a linked folder": (
        {
            "evals/support.eval.yaml": SUITE_WITH_LINKED_CASES,
            "shared/cases/support-cases.yaml": _cases(STRICT),
        },
        {"shared/cases/support-cases.yaml": _cases(LENIENT)},
    ),
    "a file content part": (
        {"evals/support.eval.yaml": SUITE_WITH_FILE_PART, "evals/greeting.yaml": "Hello there!\n"},
        {"evals/greeting.yaml": "Hello there! PLEASE-BEHAVE\n"},
    ),
    "a grader prompt": (
        {"evals/support.eval.yaml": SUITE_WITH_GRADER, "evals/grader.yaml": "STRICT-RUBRIC\n"},
        {"evals/grader.yaml": "LENIENT-RUBRIC\n"},
    ),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_file_a_base_resource_reads_is_read_at_the_base_commit(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    kind: str,
) -> None:
    on_base, edited = KINDS[kind]
    base_files = {
        "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
        "evals/eval.yaml": EVAL,
        **on_base,
    }
    repo.write(base_files)
    if kind == "a cases file behind a linked folder":
        os.symlink("../shared/cases", repo.path / "evals" / "cases")
    base = repo.commit("an AgentV suite")
    repo.branch("feature")
    head = repo.commit(
        "break the agent; ease what the unchanged suite reads",
        {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT), **edited},
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    # The judge holds the head's tool-calling greeting to the strict rubric; the broken agent
    # would greet well if the pull request could add to what it is asked.
    model.script(_has("STRICT-RUBRIC", "looked everything up"), _verdict(0.0))
    model.script(_has("STRICT-RUBRIC"), _verdict(1.0))
    model.script(_has("LENIENT-RUBRIC"), _verdict(1.0))
    model.script(_has("HEAD-V2", "PLEASE-BEHAVE"), text("Hello! How can I help you today?"))
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    head_greeting = next(
        f for f in run.results()["fixtures"] if f["side"] == "head" and f["fixture"] == "greeting"
    )
    assert head_greeting["status"] != "pass", head_greeting
    assert "| support-eval |" in comment(github)
