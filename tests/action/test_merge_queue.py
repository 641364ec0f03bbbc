"""A merge queue's group gated as GitHub starts the action for it: `merge_group` with its
commit and its parent in the payload, a real repository, the fake GitHub API and the
scripted model server. The check a pull request needs is written on the group's commit, under
the gate's name, so the queue waits for it as branch protection asks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import (
    ActionRun,
    merge_group_event,
    pull_request_event,
    queue_group,
    run_action,
    run_group,
)
from support.gitrepo import GitRepo
from support.suite import SUPPORT_BOT, make_pr, script_model

pytestmark = pytest.mark.e2e

LABEL = "force-eval-bypass"
MAINTAINER = "maintainer"
CHECKED = {"check-run": "true"}


def gate_group(
    repo: GitRepo, github: FakeGitHub, base: str, group: str, env: dict[str, str]
) -> ActionRun:
    """The group of pull request 7 at commit `group` on `base`, gated with a check run."""
    return run_group(
        repo, github, merge_group_event(github.repository, 7, base, group), env, CHECKED
    )


def label_the_pull_request(
    repo: GitRepo, github: FakeGitHub, base: str, head: str, env: dict[str, str]
) -> None:
    """A maintainer applies the bypass label on pull request 7 at `head`: its gate on the
    `labeled` event is bypassed and records that head in its comment."""
    github.permissions[MAINTAINER] = "maintain"
    github.add_label(7, LABEL, actor=MAINTAINER)
    labeled = pull_request_event(
        github.repository, 7, base, head, [LABEL], action="labeled", label=LABEL, sender=MAINTAINER
    )
    on_the_pull = run_action(repo.path, github, labeled, env=env)
    assert on_the_pull.outputs["result"] == "bypassed", on_the_pull.stdout


def test_a_group_whose_pull_request_regresses_fails_the_check_on_its_commit(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    group = queue_group(repo, base, head)
    script_model(model, head_greets_well=False)

    run = gate_group(repo, github, base, group, env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    assert run.stdout.startswith(f"::group::evalward: merge group of pull request #7 ({base}..")
    (check,) = github.check_runs
    assert (check["name"], check["head_sha"]) == ("evalward (evals/gate)", group)
    assert check["conclusion"] == "failure"
    (status,) = github.statuses
    assert (status["sha"], status["state"]) == (group, "failure")
    recorded = run.results()["run"]
    assert (recorded["event"], recorded["head_sha"], recorded["base_sha"]) == (
        "merge_group",
        group,
        base,
    )
    assert recorded["pull_request"] == 7
    # the base side ran the parent's agent, the head side the group's
    assert model.requests_mentioning("BASE-V1") and model.requests_mentioning("HEAD-V2")
    assert "support-bot-eval" in run.summary
    assert github.comments_on(7) == []  # the pull request's comment is its own gate's


def test_an_honest_group_passes_its_check(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    group = queue_group(repo, base, head)
    script_model(model, head_greets_well=True)

    run = gate_group(repo, github, base, group, env)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["result"] == "pass"
    (check,) = github.check_runs
    assert (check["head_sha"], check["conclusion"]) == (group, "success")
    assert github.comments_on(7) == []


@pytest.mark.parametrize("squash", [False, True], ids=["merged", "squashed"])
def test_the_bypass_label_of_the_pull_request_the_group_ends_with_lets_it_through_audited(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    squash: bool,
) -> None:
    """The maintainer's label, applied on the pull request's head (its gate records that head
    in its comment), covers the group that merges that head, whether the queue merges it or
    squashes it; the audit names the group's commit and the pull request."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    label_the_pull_request(repo, github, base, head, env)
    (comment,) = github.comments_on(7)
    group = queue_group(repo, base, head, squash=squash)

    run = gate_group(repo, github, base, group, env)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["result"] == "bypassed"
    record = json.loads(run.outputs["audit"])
    assert (record["event"], record["outcome"], record["actor"]) == (
        "eval_gate_bypass",
        "honoured",
        "maintainer",
    )
    assert (record["pull_request"], record["head_sha"]) == (7, group)
    assert record["base_ref"] == "main"  # by name, as a pull request's audit says it
    assert "::warning::evalward gate bypassed by maintainer" in run.stdout
    audit = (run.output_dir / "audit.jsonl").read_text().splitlines()
    assert json.loads(audit[-1])["head_sha"] == group
    (check,) = github.check_runs
    assert (check["head_sha"], check["conclusion"]) == (group, "neutral")
    assert github.comments_on(7) == [comment]  # its record stays the pull request gate's


def test_a_label_on_an_earlier_head_of_the_pull_request_does_not_bypass_its_group(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """`bypass-scope: sha` holds in the queue: the label covers the head it was applied on,
    and the pull request was pushed since, so the group that merges the new head fails,
    with the refusal audited."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    label_the_pull_request(repo, github, base, head, env)
    pushed = repo.commit("and a note", {"notes.txt": "more\n"})
    github.pulls[7].head_sha = pushed
    group = queue_group(repo, base, pushed)

    run = gate_group(repo, github, base, group, env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    record = json.loads(run.outputs["audit"])
    assert record["outcome"] == "refused" and "re-arms the gate" in record["reason"]


def test_a_label_recorded_into_another_branch_does_not_bypass_a_group_into_main(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The maintainer's label was applied (and recorded) while the pull request was into
    `stage`, and the API still says so while a group of main's queue ends with it: the group
    merges into main, which the label never covered. The record's branch was weighed against
    the pull request's, and main's gate on the group's commit went neutral."""
    base, head = make_pr(repo, github)
    github.pulls[7].base_ref = "stage"
    script_model(model, head_greets_well=False)
    github.permissions[MAINTAINER] = "maintain"
    github.add_label(7, LABEL, actor=MAINTAINER)
    labeled = pull_request_event(
        github.repository, 7, base, head, [LABEL], action="labeled", label=LABEL, sender=MAINTAINER
    )
    labeled["pull_request"]["base"]["ref"] = "stage"
    on_the_pull = run_action(repo.path, github, labeled, env=env)
    assert on_the_pull.outputs["result"] == "bypassed", on_the_pull.stdout
    group = queue_group(repo, base, head)

    run = gate_group(repo, github, base, group, env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    record = json.loads(run.outputs["audit"])
    assert record["outcome"] == "refused" and "stage" in record["reason"], record
    check = github.check_runs[-1]
    assert (check["head_sha"], check["conclusion"]) == (group, "failure")


def test_a_label_on_the_pull_requests_newer_head_does_not_bypass_a_group_of_its_older_one(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The group merges the head that was queued; the pull request was pushed since and the
    label applied on its new head. The label covers that head, not what the group merges:
    refused, and audited, with the two commits named."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    group = queue_group(repo, base, head)
    repo.checkout("feature")
    pushed = repo.commit("and a note", {"notes.txt": "more\n"})
    github.pulls[7].head_sha = pushed
    label_the_pull_request(repo, github, base, pushed, env)
    repo.git("checkout", "-q", "--detach", group)

    run = gate_group(repo, github, base, group, env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    record = json.loads(run.outputs["audit"])
    assert (record["outcome"], record["actor"], record["head_sha"]) == (
        "refused",
        MAINTAINER,
        group,
    )
    assert record["reason"] == (
        f"the group's commit {group[:12]} is not pull request #7's head {pushed[:12]} merged "
        f"onto the base branch's tip {base[:12]}: the label covers that head, not what the group "
        "merges; queue the pull request again"
    )
    (check,) = github.check_runs
    assert (check["head_sha"], check["conclusion"]) == (group, "failure")


def test_a_queue_branch_that_names_no_pull_request_is_no_bypass(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    label_the_pull_request(repo, github, base, head, env)
    group = queue_group(repo, base, head)
    asked = len(github.requests)
    unnamed = "refs/heads/gh-readonly-queue/main/pr-seven"
    event = merge_group_event(github.repository, 7, base, group, head_ref=unnamed)

    run = run_group(repo, github, event, env, CHECKED)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail" and "audit" not in run.outputs
    (warning,) = [line for line in run.stdout.splitlines() if "merge_group.head_ref" in line]
    assert warning.startswith("::warning::`merge_group.head_ref` 'refs/heads/gh-readonly-queue")
    assert "does not name a pull request" in warning and "no bypass label is weighed" in warning
    assert not any("/issues/7/" in r.path for r in github.requests[asked:])
    (check,) = github.check_runs
    assert (check["head_sha"], check["conclusion"]) == (group, "failure")


def test_a_destroyed_group_is_skipped_without_running(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    group = queue_group(repo, base, head)
    event = merge_group_event(github.repository, 7, base, group, action="destroyed")

    run = run_group(repo, github, event, env, CHECKED)

    assert run.returncode == 0, run.stderr
    assert run.outputs["result"] == "skipped"
    assert "the `destroyed` action of merge_group does not gate" in run.stdout
    assert model.requests == [] and github.requests == []


def test_a_group_without_its_commits_is_refused_by_name(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    group = queue_group(repo, base, head)
    event = merge_group_event(github.repository, 7, base, group)
    del event["merge_group"]["base_sha"]

    run = run_group(repo, github, event, env, CHECKED)

    assert run.returncode == 2, run.stderr
    assert "the merge_group event's `merge_group.base_sha` is missing, where" in run.stderr
    assert run.outputs["result"] == "incomplete"
    assert model.requests == []


def test_a_shallow_clone_of_the_group_is_refused_naming_fetch_depth(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    """`actions/checkout` with its default `fetch-depth: 1` clones the group's commit alone:
    the base branch's tip, what the group is gated against, is not there. Refused before
    anything runs, saying what to set, where git's own words named no setting."""
    base, head = make_pr(repo, github)
    group = queue_group(repo, base, head)
    repo.git("branch", "queued", group)
    shallow = tmp_path / "shallow"
    source = f"file://{repo.path}"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "-b", "queued", source, str(shallow)], check=True
    )
    event = merge_group_event(github.repository, 7, base, group)
    github.branches["main"] = base
    variables = {"GITHUB_SHA": group, "GITHUB_REF": event["merge_group"]["head_ref"], **env}

    run = run_action(
        shallow, github, event, env=variables, inputs=CHECKED, event_name="merge_group"
    )

    assert run.returncode == 2, run.stdout + run.stderr
    assert run.outputs["result"] == "incomplete"
    assert (
        f"merge_group: the base branch main is at {base[:12]} (GitHub's API), and its tip "
        f"{base[:12]} is not in the clone at {shallow}: the group is gated against that tip, "
        "so check out full history (`actions/checkout` with `fetch-depth: 0`)"
    ) in run.stderr
    assert model.requests == [] and github.check_runs == []


OLD_GIT = """\
#!/bin/sh
# git 2.34 as a runner may have it: no `merge-tree --write-tree`
for arg in "$@"; do
  if [ "$arg" = "--write-tree" ]; then
    echo "error: unknown option \\`write-tree'" >&2
    exit 129
  fi
  if [ "$arg" = "--version" ]; then
    echo "git version 2.34.1"
    exit 0
  fi
done
exec {git} "$@"
"""


def test_a_git_that_cannot_merge_in_memory_is_no_bypass_and_the_refusal_says_so(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    """The label is weighed on a runner whose git is older than 2.38: git cannot make the
    merge the group is compared with, which is no conflict and no reason to queue again.
    Refused, the refusal naming the git it needs and the one it found."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    label_the_pull_request(repo, github, base, head, env)
    group = queue_group(repo, base, head)
    folder = tmp_path / "old-git"
    folder.mkdir()
    (folder / "git").write_text(OLD_GIT.format(git=shutil.which("git")))
    (folder / "git").chmod(0o755)
    older = {**env, "PATH": f"{folder}:{os.environ['PATH']}"}

    run = gate_group(repo, github, base, group, older)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    reason = json.loads(run.outputs["audit"])["reason"]
    assert reason.startswith(
        f"git could not merge pull request #7's head {head[:12]} onto the base branch's tip "
        f"{base[:12]} to compare with the group's commit {group[:12]}, so the label cannot "
        "be shown to cover it: `git merge-tree --write-tree --no-messages"
    ), reason
    assert "unknown option `write-tree'" in reason
    assert reason.endswith(
        "(`merge-tree --write-tree` needs git 2.38 or later; this is git version 2.34.1)"
    )
    assert "queue the pull request again" not in reason


def test_a_labeled_head_that_conflicts_with_the_base_branch_is_no_bypass_saying_so(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The base branch changed the prompt the pull request changes, and a group commit
    resolves the conflict its own way: not the labeled head merged onto the tip, which git
    cannot make. Refused, saying they conflict, not that queueing again would help."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    label_the_pull_request(repo, github, base, head, env)
    repo.checkout("main")
    moved = SUPPORT_BOT.format(prompt="You are Jane of Acme. Prompt version BASE-V1, kind.")
    tip = repo.commit("main rewords the prompt", {"agents/support-bot.yaml": moved})
    resolved = repo.git("rev-parse", f"{head}^{{tree}}")  # the head's side of every conflict
    group = repo.git("commit-tree", resolved, "-p", tip, "-p", head, "-m", "Merge #7")
    repo.git("checkout", "-q", "--detach", group)

    run = gate_group(repo, github, tip, group, env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert json.loads(run.outputs["audit"])["reason"] == (
        f"pull request #7's head {head[:12]} conflicts with the base branch's tip "
        f"{tip[:12]}, so the group's commit {group[:12]} is not that head merged onto it and "
        "the label does not cover it; update the pull request and queue it again"
    )


def test_a_group_of_a_branch_whose_name_has_a_slash_is_gated_against_its_tip(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The queue of `release/2.x`: its tip is asked of GitHub's API with the name as one
    path segment, and the group gates against it as any other does."""
    base, head = make_pr(repo, github)
    group = queue_group(repo, base, head)
    script_model(model, head_greets_well=False)
    event = merge_group_event(github.repository, 7, base, group)
    event["merge_group"].update(
        base_ref="refs/heads/release/2.x",
        head_ref=f"refs/heads/gh-readonly-queue/release/2.x/pr-7-{base}",
    )
    github.branches["release/2.x"] = base

    run = run_group(repo, github, event, env, CHECKED)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["run"]["base_sha"] == base
    assert any(r.path.endswith("/branches/release%2F2.x") for r in github.requests)
    (check,) = github.check_runs
    assert (check["head_sha"], check["conclusion"]) == (group, "failure")
