"""A suite whose fixtures a scripted model answers right or wrong by plan: the `helper` agent
(its prompt naming a version, so each side's requests can be told apart), an Eval selecting
its fixtures by label, fixtures asking "question about <name>", and the replies for each."""

from __future__ import annotations

import json
from typing import Any

from fakes.model_script import Reply, Rule
from fakes.model_server import ScriptedModelServer, text
from support.documents import by_label, eval_for
from support.gitrepo import GitRepo

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: helper }}
spec:
  models: [openai/gpt-4.1-mini]
  system: You are a helper ({version}). Answer in one sentence.
"""
FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: helper }} }}
spec:
  targetAgent: helper
  input: {{ type: prompt, payload: {{ prompt: "question about {name}" }} }}
  assertions:
    - {{ type: contains, value: "the answer" }}
"""


BOUNDED_AGENT = AGENT + "  maxTokens: 100\n"
"""The helper with an output limit: under `max-cost-usd` each of its calls holds its cost at
its worst until its reply, 100 tokens written at most where the unbounded one is held for
128,000 (about $0.20 a call at gpt-4.1-mini's price)."""


def helper_eval(*settings: str) -> str:
    """The helper's Eval over the fixtures labelled `agent: helper`, with more `spec` lines."""
    return eval_for("helper", by_label("helper"), *settings)


ADAPTIVE_EVAL = helper_eval("execution: { reps: { min: 2, max: 8 } }")


def commit_suite(repo: GitRepo, eval_yaml: str, names: list[str], agent: str = AGENT) -> str:
    """The suite at version v1 with fixtures `names` (and `agent`), committed: its commit."""
    return repo.commit(
        "suite",
        {
            "agent.yaml": agent.format(version="v1"),
            "eval.yaml": eval_yaml,
            "fixtures.yaml": "---\n".join(FIXTURE.format(name=name) for name in names),
            ".gitignore": ".evalward/\n",
        },
    )


def scripted(model: ScriptedModelServer, version: str, answers: dict[str, list[bool]]) -> None:
    """Each fixture's replies for one side's agent, in the order its requests arrive."""
    for name, rights in answers.items():
        replies: list[Reply] = [text("the answer" if right else "no idea") for right in rights]

        def asks(body: dict[str, Any], name: str = name) -> bool:
            said = json.dumps(body)
            return f"question about {name}" in said and f"({version})" in said

        model.rules.append(Rule(asks, replies, sequence=True))
