"""A `labeled` event whose fields GitHub's API documents as an object or a date, answered with
another shape (what a proxy between the runner and the API can send), refuses the bypass with
a warning naming the request, as any undocumented answer does: never exit 4, never an
"internal error" with a traceback, and the results of the runs are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.http import Response
from fakes.model_script import text
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.greeter import model_change
from support.suite import provider_env

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"
MAINTAINER = "maintainer"


def labelled_change(tmp_path: Path, github: FakeGitHub) -> tuple[GitRepo, str, str]:
    repo = GitRepo(tmp_path / "repo")
    base, head = model_change(repo)
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    github.permissions[MAINTAINER] = "admin"
    github.add_label(7, LABEL, MAINTAINER)
    return repo, base, head


def actor(login: str) -> dict[str, object]:
    return {"login": login, "id": 1, "type": "User"}


SHAPES = {
    "events: a label that is a string": (
        r"/issues/7/events$",
        [
            {
                "id": 1,
                "event": "labeled",
                "actor": actor(MAINTAINER),
                "label": LABEL,
                "created_at": "2026-11-20T10:00:00Z",
            }
        ],
    ),
    "events: a time that is not a date": (
        r"/issues/7/events$",
        [
            {
                "id": 1,
                "event": "labeled",
                "actor": actor(MAINTAINER),
                "label": {"name": LABEL, "color": "ff0000"},
                "created_at": "yesterday",
            }
        ],
    ),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_an_undocumented_labeled_event_refuses_the_bypass_with_a_warning(
    shape: str, tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    repo, base, head = labelled_change(tmp_path, github)
    model.script(lambda body: body.get("model") == "gpt-4.1", text("Bye."))
    model.script(lambda body: True, text("Hello!"))
    github.login = "release-bot-person"
    path, answer = SHAPES[shape]
    github.answer("GET", path, Response(200, answer))
    event = pull_request_event(
        github.repository, 7, base, head, [LABEL], action="labeled", label=LABEL, sender=MAINTAINER
    )

    run = run_action(repo.path, github, event, env=provider_env(model), run_dir=tmp_path / "r")

    assert "internal error" not in run.stdout + run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    assert run.results()["result"] == "fail"
    assert "greeter-eval" in run.summary
    warnings = [line for line in run.stdout.splitlines() if line.startswith("::warning::")]
    assert any("read the events of pull request #7" in w for w in warnings), warnings
    assert any("The bypass label could not be checked: no bypass." in w for w in warnings)
