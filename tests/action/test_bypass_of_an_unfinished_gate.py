"""The bypass label is weighed wherever the gate cannot pass on its own (docs/github.md: "When
the gate would fail … and the label is on the PR"): a gate the budget left incomplete is
honoured by a writer's label like a failing one (`gate.decide` bypasses an incomplete gate),
and audited."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, script_model

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"


def test_a_writer_s_label_bypasses_a_gate_the_budget_left_incomplete(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    github.permissions["maintainer"] = "write"
    github.add_label(7, LABEL, actor="maintainer")
    event = pull_request_event(
        github.repository,
        7,
        base,
        head,
        [LABEL],
        action="labeled",
        label=LABEL,
        sender="maintainer",
    )

    # the budget holds order-status (high) and leaves greeting (low) out: incomplete
    run = run_action(
        repo.path, github, event, env=env, inputs={"max-model-calls": "4", "cache": "off"}
    )

    assert {r["fixture"] for r in run.results()["skippedRuns"]} == {"greeting"}
    assert run.outputs["result"] == "bypassed", run.stdout
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.outputs["audit"])["outcome"] == "honoured"
