"""Each playground the definitions name, provisioned once as a run provisions it
(`authoring.playground_trials`), on definitions loaded from a real repository: its seeds
applied and its state read, two Evals with the same playground made once, and one whose
seed does not load told at its playground's line, in the words a run would use."""

from __future__ import annotations

import asyncio
import json

import pytest

from evalward.authoring.playground_trials import Trials, try_playgrounds
from evalward.definitions.loader import load_resources
from support.gitrepo import GitRepo
from support.greeter import greeter_agent

pytestmark = pytest.mark.integration

SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT);
INSERT INTO orders VALUES ('A-1', 'delivered');
"""
AGENT = (
    greeter_agent("openai/gpt-4.1-mini")
    + """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund }
spec:
  targetAgent: greeter
  input: { type: prompt, payload: { prompt: "Refund A-1." } }
  assertions:
    - { type: stateValue, at: db.orders.A-1.status, equals: refunded }
"""
)
EVAL = """\
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: {name} }}
spec:
  targetAgent: greeter
  fixtures: [refund]
  playground:
    name: shop
    sqlite: {{ seed: {seed} }}
"""


TYPO = "CREATE TABLE fine (x);\n-- the next one is misspelt\nCRATE TABLE x;\n"
"""A seed whose third line does not load."""


def tried(repo: GitRepo, *evals: tuple[str, str]) -> Trials:
    text = AGENT + "".join(EVAL.format(name=name, seed=seed) for name, seed in evals)
    repo.commit(
        "suite",
        {"evals/suite.yaml": text, "shop/seed.sql": SEED, "shop/typo.sql": TYPO},
    )
    return asyncio.run(try_playgrounds(load_resources(repo.path), {"PATH": "/usr/bin:/bin"}))


def test_a_playground_is_made_once_for_every_eval_that_names_it_and_its_state_read(
    repo: GitRepo,
) -> None:
    trials = tried(repo, ("first", "shop/seed.sql"), ("second", "shop/seed.sql"))

    assert trials.problems == []
    assert trials.tried == 1
    (state,) = trials.served.values()
    assert '"delivered"' in json.dumps(state)


def test_a_seed_that_does_not_load_is_told_at_the_playgrounds_line(repo: GitRepo) -> None:
    trials = tried(repo, ("good", "shop/seed.sql"), ("broken", "shop/typo.sql"))

    assert trials.tried == 2 and len(trials.served) == 1
    (problem,) = trials.problems
    text = AGENT + EVAL.format(name="good", seed="") + EVAL.format(name="broken", seed="")
    playground_lines = [
        n + 1 for n, line in enumerate(text.splitlines()) if line == "  playground:"
    ]
    assert (problem.file, problem.line, problem.path) == (
        "evals/suite.yaml",
        playground_lines[1],
        "spec.playground",
    )
    assert "shop/typo.sql" in problem.message
    assert problem.message.endswith("(the statement at shop/typo.sql:3)"), problem.message
