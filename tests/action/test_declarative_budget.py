"""`max-model-calls` and `max-cost-usd` hold a declarative agent's own calls: a run makes the
calls the plan's estimate counted for it, and each past them draws from what the budget
leaves, as bring-your-own agents' calls through the model proxy do. A pull request whose
agent loops on a tool cannot spend past the budget, and its run is an error naming the
limit; an agent that keeps within its estimate runs as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import gate_pull_request
from support.answered import AGENT, BOUNDED_AGENT, FIXTURE, commit_suite, helper_eval, scripted
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

ONE_REP = helper_eval("execution: { repsPerFixture: 1 }")

LOOPING_AGENT = (
    BOUNDED_AGENT.format(version="v2")
    + """\
  maxTurns: 200
  tools:
    - name: ping
      description: Ping.
      parameters: { type: object, properties: {} }
      mock: { output: pong }
"""
)
"""The pull request's agent: its model calls `ping` 150 times before it answers."""


def results(repo: GitRepo) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo.path / ".evalward/out/results.json").read_text())
    return document


def head_run(document: dict[str, Any]) -> dict[str, Any]:
    (run,) = [f for f in document["fixtures"] if f["side"] == "head"]
    return run


SPENT = {"max-model-calls": "model_calls", "max-cost-usd": "cost_usd"}
"""What results.json says the job spent, under each limit."""


@pytest.mark.parametrize(
    ("inputs", "refusal"),
    [
        ({"max-model-calls": "5"}, "the job's model-call budget is spent"),
        # a run is estimated at ~$0.0002 (a 100-token answer); each call costs $0.000012,
        # and holds about $0.0011 while in flight (2,000 tokens more than its request's
        # bytes, and its 100 output tokens): the pings fit while what is left holds that
        ({"max-cost-usd": "0.002"}, "the job's cost budget cannot hold this call"),
    ],
)
def test_a_declarative_agent_that_loops_on_a_tool_is_stopped_at_the_budget(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    inputs: dict[str, str],
    refusal: str,
) -> None:
    """The head's run may make the one call the base's agent is estimated at; the rest of
    the budget is what its pings draw from, and the first past it is never sent."""
    base = commit_suite(repo, ONE_REP, ["f0"], BOUNDED_AGENT)
    repo.branch("change")
    head = repo.commit("a looping agent", {"agent.yaml": LOOPING_AGENT})
    scripted(model, "v1", {"f0": [True]})
    model.script(
        lambda b: "(v2)" in json.dumps(b),
        *([tool_call("ping", {})] * 150 + [text("the answer")]),
    )

    run = gate_pull_request(repo, github, base, head, env, {**inputs, "cache": "off"})

    document = results(repo)
    (limit,) = inputs
    spent = document["run"]["spent"][SPENT[limit]]
    assert spent <= float(inputs[limit]), spent
    assert len(model.requests) < 10
    looped = head_run(document)
    assert looped["status"] == "error"
    assert f"a model call was refused: {refusal}" in looped["message"]
    assert f"({limit})" in looped["message"]
    assert (run.returncode, run.outputs["result"]) == (1, "fail")


def test_rounds_of_adaptive_reps_are_not_paid_from_what_a_looping_agent_already_spent(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Under adaptive reps the head's failing run asks for more reps: a round is run only
    if what the budget leaves still holds it once the looping run's calls are counted. It
    does not, so the fixture is left undecided: the gate is incomplete, never green."""
    adaptive = helper_eval("execution: { reps: { min: 1, max: 8 } }")
    base = commit_suite(repo, adaptive, ["f0"])
    repo.branch("change")
    head = repo.commit("a looping agent", {"agent.yaml": LOOPING_AGENT})
    scripted(model, "v1", {"f0": [True] * 10})
    model.script(
        lambda b: "(v2)" in json.dumps(b),
        *([tool_call("ping", {})] * 150 + [text("the answer")]),
    )

    run = gate_pull_request(repo, github, base, head, env, {"max-model-calls": "5", "cache": "off"})

    document = results(repo)
    assert document["run"]["spent"]["model_calls"] == len(model.requests) <= 5
    assert "adaptive reps stopped early" in document["reason"] + " ".join(document["notes"])
    assert (run.returncode, run.outputs["result"]) == (1, "incomplete")


TOOL_AGENT = (
    AGENT
    + """\
  tools:
    - name: lookup
      description: Look the answer up.
      parameters: {{ type: object, properties: {{}} }}
      mock: {{ output: the answer }}
"""
)
TOOL_FIXTURE = FIXTURE + "    - {{ type: toolCalled, tool: lookup }}\n"


def test_a_declarative_agent_within_its_estimate_passes_under_a_budget_that_holds_the_plan(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Each run calls its tool once, then answers: the two calls the estimate counts for it
    (the fixture names one tool). The budget holds the plan's four calls and no more, so
    none is left to draw from: nothing is refused."""
    base = repo.commit(
        "suite",
        {
            "agent.yaml": TOOL_AGENT.format(version="v1"),
            "eval.yaml": ONE_REP,
            "fixtures.yaml": TOOL_FIXTURE.format(name="f0"),
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("change")
    head = repo.commit("a new prompt", {"agent.yaml": TOOL_AGENT.format(version="v2")})
    for version in ("v1", "v2"):
        model.script(f"({version})", tool_call("lookup", {}), text("the answer"))

    run = gate_pull_request(repo, github, base, head, env, {"max-model-calls": "4", "cache": "off"})

    document = results(repo)
    assert [f["status"] for f in document["fixtures"]] == ["pass", "pass"]
    assert document["run"]["spent"]["model_calls"] == len(model.requests) == 4
    assert (run.returncode, run.outputs["result"]) == (0, "pass")


CONVERSATION_FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: talk, labels: { agent: helper } }
spec:
  targetAgent: helper
  conversation:
    turns:
      - user: question about talk
      - user: and once more
  assertions:
    - { type: contains, value: "the answer" }
"""


def test_a_conversation_with_a_declarative_agent_is_held_to_the_budget_across_its_turns(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """`evalward run` alone: the estimate counts two calls a turn (a tool is offered), four,
    and the budget holds them with one to spare; the agent answers its first turn at once,
    and pings on its second until it is stopped."""
    repo.commit(
        "suite",
        {
            "agent.yaml": LOOPING_AGENT,
            "eval.yaml": ONE_REP,
            "fixtures.yaml": CONVERSATION_FIXTURE,
        },
    )
    model.script_sequence(
        lambda b: "and once more" not in json.dumps(b), text("the answer")
    )  # the first turn
    model.script_sequence(
        lambda b: "and once more" in json.dumps(b),
        *([tool_call("ping", {})] * 50 + [text("the answer")]),
    )
    out = tmp_path / "out"

    def run() -> tuple[int, dict[str, Any]]:
        done = evalward(
            "run", str(repo.path), "--no-history", "--max-model-calls", "5",
            "--output-dir", str(out),
            cwd=repo.path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-test",
        )  # fmt: skip
        (talk,) = json.loads((out / "results.json").read_text())["fixtures"]
        return done.returncode, talk

    code, talk = run()

    assert (code, talk["status"]) == (1, "error"), talk
    assert "a model call was refused: the job's model-call budget is spent" in talk["message"]
    assert len(model.requests) == 5
    # an error is never kept in the result cache: the next run runs it again
    code, talk = run()
    assert (code, talk["status"], talk["cached"]) == (1, "error", False)
    assert len(model.requests) == 10
