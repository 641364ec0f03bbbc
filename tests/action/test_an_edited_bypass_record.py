"""A maintainer's bypass label, recorded on the head it was applied on, laundered onto a later
head: anyone with write access may edit any comment on GitHub (its author stays evalward's
account), and the pull request's author edited evalward's comment so that its record named
the regressing head they pushed next. That head's gate was bypassed, audited in the
maintainer's name with `actor_is_author: false`. A record is read only where evalward edited
its comment last (GraphQL's `editor`); otherwise the label must be applied again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import commit_pr, script_model

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"
CHECKED = {"check-run": "true"}


def _labeled_by_the_maintainer(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> tuple[str, str, str, ActionRun]:
    """Pull request 7 by `author` (who may write), its head h1 labeled by a maintainer and
    bypassed; the author's next head h2 committed. Returns (base, h1, h2, the first run)."""
    base, h1 = commit_pr(repo)
    h2 = repo.commit("the regression", {"README.md": "h2\n"})
    repo.git("checkout", "-q", h1)
    github.add_pull(FakePull(number=7, head_sha=h1, base_sha=base, author="author"))
    script_model(model, head_greets_well=False)
    github.permissions["maintainer"] = "maintain"
    github.permissions["author"] = "write"
    github.add_label(7, LABEL, actor="maintainer")
    labeled = pull_request_event(
        github.repository, 7, base, h1, [LABEL], action="labeled", label=LABEL, sender="maintainer"
    )
    first = run_action(repo.path, github, labeled, env=env, inputs=CHECKED)
    assert first.outputs["result"] == "bypassed", first.stdout
    return base, h1, h2, first


def _pushed(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str], base: str, head: str, where: Path
) -> ActionRun:
    github.pulls[7].head_sha = head
    repo.git("checkout", "-q", head)
    event = pull_request_event(github.repository, 7, base, head, [LABEL])
    return run_action(repo.path, github, event, env=env, inputs=CHECKED, run_dir=where)


@pytest.mark.parametrize(
    "editor",
    ["author", "github-actions"],
    ids=["the author", "a person named as the workflow token's app is"],
)
def test_a_record_someone_else_edited_to_name_a_later_head_bypasses_nothing(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
    editor: str,
) -> None:
    """GraphQL names the workflow token's bot `github-actions`, as a person of that login
    would be named; only its `__typename` tells them apart."""
    base, h1, h2, _ = _labeled_by_the_maintainer(repo, github, model, env)
    ((comment_id, comment),) = github.comments.items()
    github.edit_comment(comment_id, comment["body"].replace(h1, h2), editor=editor)

    run = _pushed(repo, github, env, base, h2, tmp_path / "h2")

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    assert (
        f"::warning::evalward's comment was last edited by {editor}, not by evalward, so its "
        "bypass record is not read: a bypass of this head needs the label applied again"
    ) in run.stdout
    record = json.loads(run.outputs["audit"])
    assert (record["outcome"], record["head_sha"]) == ("refused", h2), record
    assert [(c["head_sha"], c["conclusion"]) for c in github.check_runs][-1] == (h2, "failure")


def test_control_a_record_evalward_edited_last_is_read_as_ever(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    """The labeled head gated again (a re-run on `synchronize`'s payload of it, after
    evalward rewrote its comment): the record evalward wrote covers it, its edit read as its
    own though GraphQL names its bot without the `[bot]` of its `viewer`."""
    base, h1, _, _ = _labeled_by_the_maintainer(repo, github, model, env)
    again = _pushed(repo, github, env, base, h1, tmp_path / "again")
    assert again.outputs["result"] == "bypassed", again.stdout
    ((_, comment),) = github.comments.items()
    assert comment["_editor"] == github.login  # evalward's own edit, read as its own
    once_more = _pushed(repo, github, env, base, h1, tmp_path / "once-more")
    assert once_more.outputs["result"] == "bypassed", once_more.stdout
    assert "last edited by" not in once_more.stdout
