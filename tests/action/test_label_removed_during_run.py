"""The bypass label is weighed as it stands when the gate decides: a label taken off the pull
request while its runs were going bypasses nothing, so a run that started under the label can
never turn the head's check green after someone withdrew it (the `unlabeled` run that decides
again may well finish first, its runs coming from the result cache)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from action.test_attribution_gate import PATCH
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import text
from fakes.model_server import Rule, ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.clerk import AGENT, BASE_PROMPT, HEAD_PROMPT, SUITE, script
from support.gitrepo import GitRepo
from support.greeter import model_change
from support.suite import provider_env

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"
MAINTAINER = "maintainer"


def test_a_label_removed_while_the_runs_went_on_does_not_bypass(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    repo = GitRepo(tmp_path / "repo")
    base, head = model_change(repo)
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    github.permissions[MAINTAINER] = "admin"
    github.add_label(7, LABEL, MAINTAINER, at="2026-11-20T10:00:00Z")

    def head_call_withdraws_the_label(body: dict[str, Any]) -> bool:
        """The head's run is under way when the maintainer takes the label off again."""
        if body.get("model") != "gpt-4.1":
            return False
        if LABEL in github.pulls[7].labels:
            github.remove_label(7, LABEL, MAINTAINER, at="2026-11-20T10:01:00Z")
        return True

    model.script(head_call_withdraws_the_label, text("Bye."))
    model.script(lambda body: True, text("Hello!"))
    event = pull_request_event(
        github.repository, 7, base, head, [LABEL], action="labeled", label=LABEL, sender=MAINTAINER
    )

    run = run_action(
        repo.path,
        github,
        event,
        env=provider_env(model),
        inputs={"check-run": "true"},
        run_dir=tmp_path / "runner",
    )

    assert LABEL not in github.pulls[7].labels  # withdrawn before the gate decided
    assert run.outputs["result"] == "fail", run.stdout
    assert run.returncode == 1, run.stdout + run.stderr
    assert [c["conclusion"] for c in github.check_runs] == ["failure"]
    assert [s["state"] for s in github.statuses] == ["failure"]


def test_a_label_removed_while_attribution_runs_does_not_bypass(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The base asks for attribution on every regression (`mode: always`), and it runs after
    the label was weighed: the maintainer takes the label off while a variant runs. The check
    is written as the label stands then, and what attribution found is still reported."""
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit(
        "the clerk",
        {
            "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-mini"),
            "prompts/clerk.md": BASE_PROMPT,
            "evals/suite.yaml": SUITE,
            "evalward.yaml": "attribution: { mode: always, budget: 4 }\n",
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("feature")
    head = repo.commit("a stricter clerk", {"prompts/clerk.md": HEAD_PROMPT})
    diff = [{"filename": "prompts/clerk.md", "status": "modified", "patch": PATCH}]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=diff))
    github.permissions[MAINTAINER] = "admin"
    github.add_label(7, LABEL, MAINTAINER, at="2026-11-20T10:00:00Z")
    withdrawn: list[bool] = []

    def a_variant_withdraws_the_label(body: dict[str, Any]) -> bool:
        """A variant's call (the base's first line with the head's NEVER REFUND): attribution
        is running. Answers nothing: the clerk's script does."""
        sent = json.dumps(body)
        if "You are a refund clerk." in sent and "NEVER REFUND" in sent and not withdrawn:
            withdrawn.append(True)
            github.remove_label(7, LABEL, MAINTAINER, at="2026-11-20T10:09:00Z")
        return False

    model.rules.append(Rule(a_variant_withdraws_the_label, [text("unused")]))
    script(model)
    event = pull_request_event(
        github.repository, 7, base, head, [LABEL], action="labeled", label=LABEL, sender=MAINTAINER
    )

    run = run_action(
        repo.path,
        github,
        event,
        env=provider_env(model),
        inputs={"check-run": "true", "cache": "off", "output-dir": ".evalward/out"},
        run_dir=tmp_path / "runner",
    )

    assert withdrawn and LABEL not in github.pulls[7].labels
    assert run.outputs["result"] == "fail", run.stdout
    assert run.returncode == 1, run.stdout + run.stderr
    assert [c["conclusion"] for c in github.check_runs] == ["failure"]
    assert [s["state"] for s in github.statuses] == ["failure"]
    results = json.loads((repo.path / ".evalward/out/results.json").read_text())
    assert results["result"] == "fail"
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed"
