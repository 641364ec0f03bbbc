"""The bypass label is weighed as it stands when the gate decides: a label taken off the pull
request while its runs were going bypasses nothing, so a run that started under the label can
never turn the head's check green after someone withdrew it (the `unlabeled` run that decides
again may well finish first, its runs coming from the result cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import text
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
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
