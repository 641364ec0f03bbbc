"""A bypass label covers the head into the branch it was applied against. A maintainer lets a
pull request's failing greeter into `stage`, whose Evals are the greeter's own; its author
then retargets it to `main` (GitHub sends `edited`, the head unchanged), where a critical
safety Eval fails too. The label, still on the pull request, bypassed main's gate as well
(its check neutral, exit 0), and the audit said the maintainer had bypassed an Eval they never
saw fail. Into `main` the gate is armed again until someone re-applies the label."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from action.test_bypass_label_event import gate
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import text
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"
SAFETY = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: safety-eval }
spec:
  targetAgent: greeter
  fixtures: [safe-greeting]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: safe-greeting }
spec:
  targetAgent: greeter
  severity: critical
  input: { type: prompt, payload: { prompt: "Hi!" } }
  assertions:
    - { type: contains, value: Hello }
"""


def test_a_label_given_into_one_branch_does_not_bypass_the_gate_into_another(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    repo = GitRepo(tmp_path / "repo")
    agent = greeter_agent("openai/%s")
    suite = documents(greeter_eval(), greeting_fixture("{ type: contains, value: Hello }"))
    first = repo.commit(
        "a greeter", {"agents/greeter.yaml": agent % "gpt-4.1-mini", "evals/greeter.yaml": suite}
    )
    repo.branch("stage")
    repo.checkout("main")
    main = repo.commit("main's critical safety Eval", {"evals/safety.yaml": SAFETY})
    repo.checkout(first)
    repo.branch("feature")
    head = repo.commit("another model", {"agents/greeter.yaml": agent % "gpt-4.1"})
    github.add_pull(
        FakePull(number=7, head_sha=head, base_sha=first, base_ref="stage", author="outsider")
    )
    github.permissions["maintainer"] = "admin"
    github.permissions["outsider"] = "write"
    model.script(lambda body: body.get("model") == "gpt-4.1", text("Bye."))
    model.script(lambda body: True, text("Hello!"))
    github.add_label(7, LABEL, "maintainer", at="2026-11-20T10:00:00Z")
    labeled = pull_request_event(
        github.repository, 7, first, head, [LABEL], action="labeled", label=LABEL,
        sender="maintainer", updated_at="2026-11-20T10:00:00Z",
    )  # fmt: skip
    labeled["pull_request"]["base"]["ref"] = "stage"

    into_stage = gate(repo, github, labeled, model, tmp_path / "stage")

    assert into_stage.returncode == 0, into_stage.stdout + into_stage.stderr
    assert into_stage.outputs["result"] == "bypassed"
    honoured = json.loads(into_stage.outputs["audit"])
    assert (honoured["outcome"], honoured["base_ref"]) == ("honoured", "stage")
    assert honoured["failing_evals"] == ["greeter-eval"]

    github.pulls[7].base_ref, github.pulls[7].base_sha = "main", main
    edited = pull_request_event(
        github.repository, 7, main, head, [LABEL], action="edited", sender="outsider"
    )
    into_main = gate(repo, github, edited, model, tmp_path / "main")

    assert into_main.returncode == 1, into_main.stdout + into_main.stderr
    assert into_main.outputs["result"] == "fail"
    refused = json.loads(into_main.outputs["audit"])
    assert (refused["outcome"], refused["base_ref"]) == ("refused", "main")
    assert "applied while the pull request was into `stage`" in refused["reason"]
    assert "now into `main`" in refused["reason"]
    checks = {c["name"]: c["conclusion"] for c in github.check_runs if c["head_sha"] == head}
    assert checks["evalward (evals/gate)"] == "failure", checks
