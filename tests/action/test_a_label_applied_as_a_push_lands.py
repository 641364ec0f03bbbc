"""A maintainer reads evalward's comment on head h1 (one fixture failing) and applies the
bypass label; the pull request's author pushed h2, worse, a second before. GitHub's `labeled`
payload shows the pull request as it is, h2, whose run had not reported (the label's run
cancels it): h2 was bypassed in the maintainer's name, its audit listing failures they never
saw. A label now covers the payload's head only where evalward's comment showed that head's
result when the label was applied, and evalward wrote it last; else it is refused and must be
applied again, which covers h2 once its result stands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import SUPPORT_BOT, make_pr, script_model

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"
CHECKED = {"check-run": "true"}
WORSE = "You are Jane, the support agent of Acme. Prompt version HEAD-V3."
"""h2's prompt: both fixtures fail with it."""


def _h1_reported_then_h2_pushed(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str], at: Path
) -> tuple[str, str, str]:
    """Pull request 7's head h1 gated (the greeting fails; the comment reports h1), then h2
    pushed. Returns (base, h1, h2)."""
    base, h1 = make_pr(repo, github)
    github.pulls[7].author = "author"
    github.permissions["maintainer"] = "maintain"
    github.permissions["author"] = "write"
    script_model(model, head_greets_well=False)
    model.script(lambda body: "HEAD-V3" in json.dumps(body), text("I cannot help."))
    first = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, h1), env=env,
        inputs=CHECKED, run_dir=at / "h1",
    )  # fmt: skip
    assert first.outputs["result"] == "fail", first.stdout
    h2 = repo.commit("v3", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=WORSE)})
    github.pulls[7].head_sha = h2
    return base, h1, h2


def _labeled(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str], base: str, head: str, *,
    when: str, at: Path,
) -> ActionRun:  # fmt: skip
    """The maintainer applies the label at `when`, and its `labeled` run gates `head`."""
    github.add_label(7, LABEL, actor="maintainer", at=when)
    event = pull_request_event(
        github.repository, 7, base, head, [LABEL], action="labeled", label=LABEL,
        sender="maintainer", updated_at=when,
    )  # fmt: skip
    return run_action(repo.path, github, event, env=env, inputs=CHECKED, run_dir=at)


def test_a_label_applied_beside_another_head_s_result_does_not_cover_the_head_pushed_before_it(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    base, h1, h2 = _h1_reported_then_h2_pushed(repo, github, model, env, tmp_path)

    run = _labeled(repo, github, env, base, h2, when="2026-11-20T10:00:01Z", at=tmp_path / "h2")

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    record = json.loads(run.outputs["audit"])
    assert (record["outcome"], record["head_sha"]) == ("refused", h2), record
    assert (
        f"the label was applied while evalward's comment showed the result of head {h1[:12]}, "
        f"not of this head {h2[:12]}"
    ) in run.stdout
    assert [(c["head_sha"], c["conclusion"]) for c in github.check_runs][-1] == (h2, "failure")
    ((_, comment),) = github.comments.items()
    assert h2[:12] in comment["body"] and "Bypass refused" in comment["body"]

    # applied again beside h2's result, which now stands: it covers h2
    github.remove_label(7, LABEL, actor="maintainer", at="2026-11-20T10:05:00Z")
    again = _labeled(
        repo, github, env, base, h2, when="2026-11-20T10:05:01Z", at=tmp_path / "again"
    )

    assert again.outputs["result"] == "bypassed", again.stdout
    record = json.loads(again.outputs["audit"])
    assert (record["outcome"], record["actor"], record["head_sha"]) == (
        "honoured",
        "maintainer",
        h2,
    )


def test_a_comment_whose_foot_the_author_edited_to_name_the_new_head_covers_nothing(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    """The author, who may write, also edits evalward's comment so that its foot names h2:
    the comment a maintainer reads still shows h1's result, and evalward did not write it."""
    base, h1, h2 = _h1_reported_then_h2_pushed(repo, github, model, env, tmp_path)
    ((comment_id, comment),) = github.comments.items()
    github.edit_comment(comment_id, comment["body"].replace(h1[:12], h2[:12]), editor="author")

    run = _labeled(repo, github, env, base, h2, when="2026-11-20T10:00:01Z", at=tmp_path / "h2")

    assert run.outputs["result"] == "fail", run.stdout
    assert "was last edited by author, not by evalward: apply the label again" in run.stdout


def test_control_a_label_applied_before_any_result_covers_the_head_it_was_applied_on(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    """No comment yet: nothing was there to misread, and the label covers its head."""
    base, head = make_pr(repo, github)
    github.permissions["maintainer"] = "maintain"
    script_model(model, head_greets_well=False)

    run = _labeled(repo, github, env, base, head, when="2026-11-20T10:00:01Z", at=tmp_path / "run")

    assert run.outputs["result"] == "bypassed", run.stdout
