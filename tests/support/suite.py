"""The pull request most end-to-end tests gate: a support bot and a math tutor, their Evals and
fixtures, the change that sharpens the support bot's prompt, and the model's scripted replies for
both sides. Also the provider variables every run that calls the scripted model server needs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import ActionRun, run_action
from support.gitrepo import GitRepo

PROVIDER_KEY = "sk-test-secret-value"
"""The key every test's runs hold; a test that looks for leaks searches for it."""


def provider_env(model: ScriptedModelServer, key: str = PROVIDER_KEY) -> dict[str, str]:
    """The variables that point evalward's `openai/...` models at the scripted model server."""
    return {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": key}


BASE_PROMPT = "You are Jane, the support agent of Acme. Prompt version BASE-V1."
HEAD_PROMPT = "You are Jane, the support agent of Acme. Prompt version HEAD-V2."

LOOKUP_ORDER = """\
    - name: lookup_order
      description: Look up an order by its id.
      parameters:
        type: object
        properties: {{ order_id: {{ type: string }} }}
        required: [order_id]
      mock:
        output: {{ status: shipped, eta: "2026-11-25" }}
"""
"""The support bot's order lookup tool (mocked), as a `tools` item in a `str.format` template."""

SUPPORT_BOT = (
    """\
apiVersion: evalward.dev/v1
kind: Agent
metadata:
  name: support-bot
spec:
  models: [openai/gpt-test]
  system: "{prompt}"
  tools:
"""
    + LOOKUP_ORDER
    + """\
    - {{ type: send_email, enabled: false }}
"""
)

MATH_TUTOR = """\
apiVersion: pai.io/v1
kind: Agent
metadata:
  name: math-tutor
spec:
  models: [openai/gpt-test]
  system: You are a math tutor. MATH-TUTOR-PROMPT.
---
apiVersion: pai.io/v1
kind: Eval
metadata:
  name: math-tutor-eval
spec:
  targetAgent: math-tutor
  fixtureSelector:
    matchLabels: { agent: math-tutor }
---
apiVersion: pai.io/v1
kind: EvalFixture
metadata:
  name: tutor-add
  labels: { agent: math-tutor }
spec:
  targetAgent: math-tutor
  input: { type: prompt, payload: { prompt: "What is 2 + 2?" } }
  assertions:
    - { type: contains, value: "answer:" }
"""

SUPPORT_EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata:
  name: support-bot-eval
spec:
  targetAgent: support-bot
  fixtureSelector:
    matchLabels: { agent: support-bot }
  scoring:
    passThreshold: 0.9
"""

ORDER_FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata:
  name: order-status
  labels: { agent: support-bot }
spec:
  targetAgent: support-bot
  kind: golden
  severity: high
  input:
    type: prompt
    payload: { prompt: "Where is my order 12345?" }
  assertions:
    - { type: toolCalled, tool: lookup_order }
    - { type: contains, value: shipped }
    - { type: regex, pattern: "2026-11-\\\\d\\\\d" }
"""

GREETING_FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata:
  name: greeting
  labels: { agent: support-bot }
spec:
  targetAgent: support-bot
  kind: edge
  severity: low
  input:
    type: prompt
    payload: { prompt: "Hello there!" }
  assertions:
    - { type: toolNotCalled, tool: lookup_order }
    - { type: contains, value: Hello, weight: 3 }
"""


def make_pr(repo: GitRepo, github: FakeGitHub) -> tuple[str, str]:
    base, head = commit_pr(repo)
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    return base, head


def commit_pr(repo: GitRepo) -> tuple[str, str]:
    """`make_pr`'s commits alone: the base, then on a branch `feature` the head that sharpens
    the support bot's prompt (base, head), for a module that gates one change in every test."""
    base = repo.commit(
        "agents and evals",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "agents/math-tutor.yaml": MATH_TUTOR,
            "evals/support-bot.yaml": SUPPORT_EVAL,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "sharpen the prompt",
        {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)},
    )
    return base, head


@dataclass(frozen=True)
class Shared:
    """`make_pr`'s change, its workspace and the model server its gates call, shared by the
    tests of a module (`shared_pr`)."""

    repo: GitRepo
    base: str
    head: str
    model: ScriptedModelServer

    def opened(self, github: FakeGitHub) -> None:
        """Pull request 7, as GitHub's API has it."""
        github.add_pull(FakePull(number=7, head_sha=self.head, base_sha=self.base))

    def gate(
        self, github: FakeGitHub, event: dict[str, Any], tmp_path: Path, **options: Any
    ) -> ActionRun:
        """The action on `event`; the runner's files are the test's own, in `tmp_path`."""
        return run_action(
            self.repo.path,
            github,
            event,
            env=provider_env(self.model),
            run_dir=tmp_path / "runner",
            **options,
        )


def shared_pr(folder: Path, *, head_greets_well: bool) -> Iterator[Shared]:
    """A module-scoped fixture's change, committed in `folder`, and its model server, for
    tests of what a gate does once its runs are done (the comment, the check run, GitHub's
    failures, the bypass): the result cache in the workspace keys runs by the model's
    endpoint, so every gate after the module's first reads the runs the first did, as a
    rerun of the job does, whichever test comes first."""
    model = ScriptedModelServer()
    script_model(model, head_greets_well=head_greets_well)
    repo = GitRepo(folder / "repo")
    base, head = commit_pr(repo)
    yield Shared(repo, base, head, model)
    model.close()
    assert model.contract_violations == []


def script_model(model: ScriptedModelServer, *, head_greets_well: bool) -> None:
    order_replies = (
        tool_call("lookup_order", {"order_id": "12345"}),
        text("Your order has shipped and arrives on 2026-11-25."),
    )
    model.script(lambda b: "BASE-V1" in json.dumps(b) and "12345" in json.dumps(b), *order_replies)
    model.script(lambda b: "HEAD-V2" in json.dumps(b) and "12345" in json.dumps(b), *order_replies)
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello! How can I help you today?"))
    if head_greets_well:
        model.script(lambda b: "HEAD-V2" in json.dumps(b), text("Hello! What can I do for you?"))
    else:
        model.script(
            lambda b: "HEAD-V2" in json.dumps(b),
            tool_call("lookup_order", {"order_id": "unknown"}),
            text("Hello! I looked everything up for you."),
        )


def answered(results: dict[str, Any], fixture: str) -> dict[str, tuple[str, bool]]:
    """Each side's run of `fixture` in a results.json: (its output, whether the result cache
    answered it)."""
    return {
        f["side"]: (f["output"], f["cached"])
        for f in results["fixtures"]
        if f["fixture"] == fixture
    }
