"""An `except` path with `*` names any one key, never part of a key the agent spells: a
row the agent adds keyed by the rest of the pattern (`*.updated_at`, `A-1.*`) was read as a
place the pattern names, so the whole added row was excepted and a head that inserted a
refund of 99999 passed `stateUnchanged` (and `stateSnapshot`), exit 0. Through the action,
with a control keyed as any row is."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: clerk }
spec:
  runtime:
    command: { run: [python3, agent/a.py] }
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: clerk-eval }
spec:
  targetAgent: clerk
  fixtures: [touch]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: touch }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: touch order A-1 } }
  playground: { name: shop, sqlite: { seed: shop/seed.json } }
  assertions:
    - {criterion}
"""
UNCHANGED = '{ type: stateUnchanged, at: db.orders, except: ["db.orders.*.updated_at"] }'
ROW_FREE = '{ type: stateUnchanged, at: db.orders, except: ["db.orders.A-1.*"] }'
SNAPSHOT = (
    '{ type: stateSnapshot, at: db.orders, except: ["db.orders.*.updated_at"], value: '
    "{ A-1: { id: A-1, status: delivered, updated_at: t0, amount: 25 }, "
    "A-2: { id: A-2, status: delivered, updated_at: t0, amount: 90 } } }"
)

AGENT = """\
import os, sqlite3
db = sqlite3.connect(os.environ["EVALWARD_SQLITE_PATH"])
db.execute("UPDATE orders SET updated_at = 't1' WHERE id = 'A-1'")
{extra}
db.commit()
print("done")
"""
CLEAN = AGENT.format(extra="")
ADDS = AGENT.format(
    extra="db.execute(\"INSERT INTO orders VALUES ({key!r}, 'refunded', 't1', 99999)\")"
)


def _gate(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    head_agent: str,
    criterion: str = UNCHANGED,
) -> ActionRun:
    seed = {
        "orders": [
            {"id": "A-1", "status": "delivered", "updated_at": "t0", "amount": 25},
            {"id": "A-2", "status": "delivered", "updated_at": "t0", "amount": 90},
        ]
    }
    base = repo.commit(
        "base",
        {
            "evals.yaml": SUITE.replace("{criterion}", criterion),
            "agent/a.py": CLEAN,
            "shop/seed.json": json.dumps(seed),
        },
    )
    repo.branch("feature")
    head = repo.commit("head", {"agent/a.py": head_agent})
    github.add_pull(FakePull(number=5, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 5, base, head)
    return run_action(repo.path, github, event, env=provider_env(model))


def test_an_added_order_fails_the_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    run = _gate(repo, github, model, ADDS.format(key="A-9"))
    head = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert head["status"] == "fail", head
    assert run.returncode == 1


@pytest.mark.parametrize(
    ("criterion", "key"),
    [(UNCHANGED, "*.updated_at"), (ROW_FREE, "A-1.*"), (SNAPSHOT, "*.updated_at")],
    ids=["unchanged *.col", "unchanged row.*", "snapshot *.col"],
)
def test_an_added_order_keyed_as_the_except_pattern_fails_the_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, criterion: str, key: str
) -> None:
    # the agent adds a refunded order of 99999; its key is the except pattern's literal text
    run = _gate(repo, github, model, ADDS.format(key=key), criterion)
    head = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert head["status"] != "pass", head["assertions"]
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
