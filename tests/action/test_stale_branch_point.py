"""A pull request that branches off before the base branch added a fixture or an Eval, so
that the base side (its merge base) has no run of it to compare with, and hopes a regression
of it goes unseen. What gates is the base branch's tip; the base side runs the tip's
definitions the merge base lacks with the merge base's agent, so the change is compared on
them as on the rest."""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import (
    BASE_PROMPT,
    GREETING_FIXTURE,
    HEAD_PROMPT,
    ORDER_FIXTURE,
    SUPPORT_BOT,
    script_model,
)

pytestmark = pytest.mark.hostile

EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata:
  name: {name}
spec:
  targetAgent: support-bot
  fixtureSelector:
    matchLabels: {{ agent: support-bot }}
  scoring:
    passThreshold: 0.75
    gate: {{ failOnRegression: any }}
"""


@pytest.mark.parametrize("branch_point", ["the tip", "before the fixture"])
def test_a_fixture_the_base_branch_added_after_the_branch_point_is_compared(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    branch_point: str,
) -> None:
    """The head's prompt breaks `greeting`, which main added after the branch point: it is a
    regression (the merge base's agent greets well on it) wherever the branch starts."""
    old = repo.commit(
        "agent and eval",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/support-bot.yaml": EVAL.format(name="support-bot-eval"),
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
        },
    )
    tip = repo.commit("a greeting fixture", {"evals/fixtures/greeting.yaml": GREETING_FIXTURE})
    repo.checkout(tip if branch_point == "the tip" else old)
    repo.branch("feature")
    head = repo.commit(
        "a new prompt (it greets by looking an order up)",
        {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)},
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=tip))
    script_model(model, head_greets_well=False)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, tip, head), env=env
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    results = run.results()
    greeting = sorted(
        (f["side"], f["status"]) for f in results["fixtures"] if f["fixture"] == "greeting"
    )
    assert greeting == [("base", "pass"), ("head", "fail")], greeting
    assert "greeting" in results["reason"], results["reason"]


def test_an_eval_the_base_branch_added_after_the_branch_point_is_compared(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Main added a whole Eval (of the agent the merge base has) after the branch point: the
    base side runs it with the merge base's agent, and its regression blocks."""
    old = repo.commit(
        "agent, and an order Eval",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/orders.yaml": EVAL.format(name="orders-eval").replace(
                "fixtureSelector:\n    matchLabels: { agent: support-bot }",
                "fixtures: [order-status]",
            ),
        },
    )
    tip = repo.commit(
        "a greeting Eval",
        {
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
            "evals/support-bot.yaml": EVAL.format(name="support-bot-eval"),
        },
    )
    repo.checkout(old)
    repo.branch("feature")
    head = repo.commit(
        "a new prompt", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)}
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=tip))
    script_model(model, head_greets_well=False)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, tip, head), env=env
    )

    assert run.returncode == 1, run.stdout + run.stderr
    sides = sorted(
        (f["side"], f["eval"], f["status"])
        for f in run.results()["fixtures"]
        if f["fixture"] == "greeting"
    )
    assert sides == [("base", "support-bot-eval", "pass"), ("head", "support-bot-eval", "fail")]


AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: clerk }
spec:
  models: [openai/gpt-4.1-mini]
  system: %s
"""
CLERK_EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: clerk-eval }
spec:
  targetAgent: clerk
  fixtureSelector: { matchLabels: { agent: clerk } }
  scoring: { passThreshold: 0.5, gate: { failOnRegression: any } }
"""
FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: %s, labels: { agent: clerk } }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: go } }
%s  assertions:
    - { type: contains, value: PASS }
"""
FILES_FIXTURE = (
    FIXTURE
    % (
        "reads-the-shelf",
        "  playground: { files: { seed: shelf } }\n",
    )
    + "    - { type: fileState, path: note.txt, contains: hello }\n"
)
MOCK = """\
replies:
  - { match: { fixture: reads-the-shelf, side: base }, turns: [{ content: PASS }] }
  - { match: { fixture: reads-the-shelf, side: head }, turns: [{ content: FAIL }] }
  - { match: { fixture: answers }, turns: [{ content: PASS }] }
"""


def test_a_playground_fixture_the_base_branch_added_later_is_made_from_its_tree_on_both_sides(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """Main added a fixture with a files playground, and its seed, after the branch point:
    the merge base's tree has no seed, so the base side makes that playground from the base
    branch's tree, as the head side does, and the head's failure is a regression."""
    old = repo.commit(
        "a clerk",
        {
            "agents/clerk.yaml": AGENT % "Answer.",
            "evals/clerk.yaml": CLERK_EVAL,
            "evals/answers.yaml": FIXTURE % ("answers", ""),
            "evals/mock.yaml": MOCK,
        },
    )
    tip = repo.commit(
        "a fixture that reads the shelf",
        {"evals/shelf.yaml": FILES_FIXTURE, "shelf/note.txt": "hello\n"},
    )
    repo.checkout(old)
    repo.branch("feature")
    head = repo.commit("a terser clerk", {"agents/clerk.yaml": AGENT % "Answer briefly."})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=tip))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, tip, head),
        env=env,
        inputs={"mock-script": "evals/mock.yaml"},
    )

    assert run.returncode == 1, run.stdout + run.stderr
    shelf = sorted(
        (f["side"], f["status"])
        for f in run.results()["fixtures"]
        if f["fixture"] == "reads-the-shelf"
    )
    assert shelf == [("base", "pass"), ("head", "fail")], run.stdout
    assert "reads-the-shelf" in run.results()["reason"]
