"""A group of checks (`assertSet`) reads what its `turn:` and its `transform:` give, as each
of its members alone would: a group on a conversation's turn 1 reads turn 1's reply, one on
a turn the conversation never reached fails, and one with a transform reads what it gives.
Otherwise a pull request's agent passes the base's per-turn checks by saying the forbidden
thing early (the group read the last reply) or by handing off before the turn that checks
it. Each attack beside the same checks ungrouped, through the action."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  models: [openai/gpt-agent]
  system: {prompt}
  tools:
    - name: escalate_to_human
      description: Hand the customer to a human.
      parameters: {{ type: object, properties: {{}} }}
      mock: {{ output: escalated }}
"""
CONVERSATION = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: clerk-eval }}
spec:
  targetAgent: clerk
  fixtures: [talk]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: talk }}
spec:
  targetAgent: clerk
  conversation:
    handoffTools: [escalate_to_human]
    turns:
      - user: I want my money back.
        assertions:
{turn1}
      - user: It is order 12345, the jug arrived cracked.
        assertions:
{turn2}
"""
TURN_CHECKS = {
    False: (
        "          - { type: notContains, value: refunded }",
        "          - { type: contains, value: '12345' }",
    ),
    True: (
        "          - { type: assertSet, assertions: [ { type: notContains, value: refunded } ] }",
        "          - { type: assertSet, assertions: [ { type: contains, value: '12345' } ] }",
    ),
}
HEAD_REPLIES = {
    # turn 1 says what its check forbids; turn 2's reply is fine
    "says-it-early": [text("Done, I refunded it."), text("Noted: order 12345.")],
    # hands off on turn 1, naming the order nobody gave yet: turn 2 never happens
    "hands-off-first": [
        tool_call("escalate_to_human", {}),
        text("A human will handle order 12345."),
    ],
}


def asked(prompt: str) -> Any:
    return lambda body: (
        body.get("model") == "gpt-agent" and prompt in json.dumps(body["messages"][0])
    )


def gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, base_files: dict[str, str]
) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """The pull request changing the clerk's prompt, gated; the exit code and each side's
    run of the one fixture."""
    base = repo.commit("base", {"agents.yaml": AGENT.format(prompt="BASE careful."), **base_files})
    repo.branch("feature")
    head = repo.commit("hasty", {"agents.yaml": AGENT.format(prompt="HEAD hasty.")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 7, base, head)
    run = run_action(repo.path, github, event, env=provider_env(model))
    runs = {f["side"]: f for f in run.results()["fixtures"]}
    return run.returncode, runs["base"], runs["head"]


@pytest.mark.parametrize("grouped", [False, True], ids=["alone", "grouped"])
@pytest.mark.parametrize("attack", sorted(HEAD_REPLIES))
def test_a_turn_s_checks_read_that_turn_grouped_or_not(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, attack: str, grouped: bool
) -> None:
    turn1, turn2 = TURN_CHECKS[grouped]
    model.script(
        asked("BASE careful."),
        text("What is your order number and what went wrong?"),
        text("Thanks, order 12345: the refund has started."),
    )
    model.script(asked("HEAD hasty."), *HEAD_REPLIES[attack])
    code, base, head = gate(
        repo, github, model, {"evals.yaml": CONVERSATION.format(turn1=turn1, turn2=turn2)}
    )
    assert (base["status"], head["status"], code) == ("pass", "fail", 1), head["assertions"]
    failed = [(a["turn"], a["status"]) for a in head["assertions"] if a["status"] != "pass"]
    if attack == "says-it-early":
        assert failed == [(1, "fail")]
    else:
        assert failed == [(2, "fail")]
        (turn_2,) = [a for a in head["assertions"] if a["turn"] == 2]
        if not grouped:  # a group's message counts its members; its turn says why here
            assert turn_2["message"].startswith("turn 2 never happened"), turn_2


TRANSFORMED = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: clerk-eval }}
spec:
  targetAgent: clerk
  fixtures: [decision]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: decision }}
spec:
  targetAgent: clerk
  input: {{ type: prompt, payload: {{ prompt: Refund order 1 please. }} }}
  assertions:
{check}
"""
SPLIT = "transform: { language: python, source: 'output.split(\"|\")[0]' }"


@pytest.mark.parametrize("grouped", [False, True], ids=["alone", "grouped"])
def test_a_group_s_transform_is_what_its_members_read(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, grouped: bool
) -> None:
    member = "{ type: contains, value: declined }"
    check = (
        f"    - {{ type: assertSet, {SPLIT}, assertions: [ {member} ] }}"
        if grouped
        else f"    - {{ type: contains, value: declined, {SPLIT} }}"
    )
    model.script(asked("BASE careful."), text("declined|no refund"))
    # the decision, before the `|`, is a refund; "declined" comes only after it
    model.script(asked("HEAD hasty."), text("refunded|not declined"))
    code, base, head = gate(repo, github, model, {"evals.yaml": TRANSFORMED.format(check=check)})
    assert (base["status"], head["status"], code) == ("pass", "fail", 1), head["assertions"]
