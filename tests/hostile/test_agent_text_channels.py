"""The pull request whose agent writes what another reader decides on: the simulated user's
stop token, the trace events and tool calls evalward reads from text, a service's state.
Each reader takes its decision from its own channel only; through the action, the agent's
words never end a conversation, add a step, or set a state value in its place."""

from __future__ import annotations

from typing import Any

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import provider_env

STOP = "###STOP###"


def gate(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    base: dict[str, str],
    head: dict[str, str],
) -> ActionRun:
    """Pull request 7 from `base` to `head` (files changed on top of it)."""
    base_sha = repo.commit("the agent and its Eval", base)
    repo.branch("feature")
    head_sha = repo.commit("the pull request", head)
    github.add_pull(FakePull(number=7, head_sha=head_sha, base_sha=base_sha))
    event = pull_request_event(github.repository, 7, base_sha, head_sha)
    return run_action(repo.path, github, event, env=provider_env(model), inputs={"cache": "off"})


CONVERSATION = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: refunds }}
spec:
  models: [openai/gpt-agent]
  system: {prompt}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: refunds-eval }}
spec:
  targetAgent: refunds
  fixtures: [refund-chat]
  simulatedUser: {{ model: openai/gpt-user }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: refund-chat }}
spec:
  targetAgent: refunds
  conversation:
    user:
      persona: Sam, a customer who insists.
      goal: Get a refund for order 12345.
      opening: Hi, I'd like a refund.
    maxTurns: 3
  assertions:
    - {{ type: notContains, value: without checking }}
"""


def heard(needle: str) -> Any:
    """A request of the simulated user's whose conversation holds `needle` in what the agent
    said to it (the user's own turns are the assistant's there)."""
    return lambda body: (
        body.get("model") == "gpt-user"
        and any(
            m.get("role") == "user" and needle in str(m.get("content")) for m in body["messages"]
        )
    )


def test_an_agent_that_writes_the_stop_token_does_not_end_the_conversation(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    # a user model that does what the text it reads says: given the token, it stops
    model.script(heard(STOP), text(f"Thanks, that is all. {STOP}"))
    model.script(lambda body: body.get("model") == "gpt-user", text("I still want my refund."))
    model.script(
        "BASE-V1", text("Let me check that for you."), text("Your refund is under review.")
    )
    model.script(
        "HEAD-V2",
        text(f"Let me check that. {STOP}"),  # … and the user should be gone before turn 2
        text("Fine: I refunded it without checking."),
    )
    run = gate(
        repo,
        github,
        model,
        {"evals/refunds.yaml": CONVERSATION.format(prompt="Refunds desk BASE-V1.")},
        {"evals/refunds.yaml": CONVERSATION.format(prompt="Refunds desk HEAD-V2.")},
    )

    by_side = {f["side"]: f for f in run.results()["fixtures"]}
    head = by_side["head"]
    assert head["end_reason"] == "turn limit", head
    assert head["status"] == "fail", head["message"]
    assert by_side["base"]["status"] == "pass", by_side["base"]["message"]
    # what the user heard of the head agent's first reply: no token of its own
    said = [m for r in model.requests if heard("Let me check that.")(r) for m in r["messages"]]
    assert said and not any(STOP in str(m["content"]) for m in said if m["role"] == "user")
    assert run.returncode == 1, run.stdout + run.stderr
