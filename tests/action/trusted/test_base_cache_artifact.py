"""A pull request's gate with `base-cache` reads the base branch's results only from the
artifact a push run on that branch uploaded, never from the workspace's `cache-dir`.

The workspace holds a planted cache: the head's passing runs, computed elsewhere under the
head's own keys (a workflow the pull request adds saves it in the pull request's own
`actions/cache` scope, which the gate restores first). The head now breaks its agent. Read,
that cache turns the gate green with no run; with `base-cache` the head runs and the gate
fails, and the base's runs come from the push run's artifact. An artifact that is not a push
run's on the base branch of this repository, or an archive that would write elsewhere, is
refused with a warning and every run is made. The token goes to GitHub's API alone, never to
the storage host its download redirects to. Model replies kept in the workspace are not read
either: they would answer the head's agent as the planted results do.
"""

from __future__ import annotations

import io
import json
import shutil
import stat
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fakes.github_api import FakeArtifact, FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support import head_strays
from support.actionrun import (
    ActionRun,
    merge_group_event,
    pull_request_event,
    queue_group,
    run_action,
    run_group,
)
from support.gitrepo import GitRepo
from support.suite import commit_pr, provider_env, script_model

pytestmark = pytest.mark.hostile

NAME = "evalward-cache"
YESTERDAY = "2026-11-19T10:00:00Z"
PUSH_RUN = 31337
"""The id of the push run on main whose cache `Planted.archive` is."""
EXPECTED = "::warning::result cache not used: action input `base-cache`: expected the newest"


@dataclass(frozen=True)
class Planted:
    """The change, the push run's cache as its artifact's archive, and the model server; the
    workspace's `cache-dir` holds the head's passing runs, and the head now breaks."""

    repo: GitRepo
    base: str
    head: str
    model: ScriptedModelServer
    archive: bytes

    def gate(self, github: FakeGitHub, tmp_path: Path, base: str = "", **inputs: str) -> ActionRun:
        """The pull request's gate, its base commit `base` (by default the planted one)."""
        base = base or self.base
        github.add_pull(FakePull(number=7, head_sha=self.head, base_sha=base))
        event = pull_request_event(github.repository, 7, base, self.head)
        return run_action(
            self.repo.path,
            github,
            event,
            env=provider_env(self.model),
            inputs=inputs,
            run_dir=tmp_path / "runner",
        )


def zipped(folder: Path) -> bytes:
    """`folder` as actions/upload-artifact zips it: paths relative to it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Planted]:
    from action.test_github_events import real_payload

    folder = tmp_path_factory.mktemp("base-cache")
    model = ScriptedModelServer()
    script_model(model, head_greets_well=True)
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))
    repo = GitRepo(folder / "repo")
    base, head = commit_pr(repo)
    cache = repo.path / ".evalward" / "cache"
    github = FakeGitHub()
    try:
        # A push to main runs every Eval: its cache is what the workflow uploads.
        repo.checkout("main")
        payload = {**real_payload("push"), "ref": "refs/heads/main", "after": base}
        payload["repository"] = {**payload["repository"], "default_branch": "main"}
        with head_strays.reading():
            pushed = run_action(
                repo.path,
                github,
                payload,
                env={**provider_env(model), "GITHUB_RUN_ID": str(PUSH_RUN)},
                event_name="push",
                run_dir=folder / "push",
            )
        assert pushed.returncode == 0, pushed.stdout + pushed.stderr
        made_by = {"ref": "refs/heads/main", "sha": base, "run_id": str(PUSH_RUN)}
        assert json.loads((cache / "made-by.json").read_text()) == made_by
        archive = zipped(cache)
        shutil.rmtree(cache)
        # The head's passing runs, computed where the head greets well, left in cache-dir.
        repo.checkout("feature")
        github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
        event = pull_request_event(github.repository, 7, base, head)
        honest = run_action(
            repo.path, github, event, env=provider_env(model), run_dir=folder / "honest"
        )
        assert honest.returncode == 0, honest.stdout + honest.stderr
    finally:
        github.close()
    model.rules.clear()
    script_model(model, head_greets_well=False)
    yield Planted(repo, base, head, model, archive)
    model.close()
    assert model.contract_violations == []


def test_the_planted_cache_is_not_read_and_the_base_comes_from_the_push_runs_artifact(
    planted: Planted, github: FakeGitHub, tmp_path: Path
) -> None:
    without = planted.gate(github, tmp_path / "without")
    # the hole: the workspace's cache answers the head, and the broken head passes unrun
    assert without.returncode == 0, without.stdout + without.stderr
    assert without.results()["cacheHits"] == 4
    (notice,) = [line for line in without.stdout.splitlines() if line.startswith("::notice")]
    assert "could have written" in notice and "Give `base-cache`" in notice, notice
    github.add_artifact(FakeArtifact(NAME, planted.archive, head_sha=planted.base, run_id=PUSH_RUN))

    run = planted.gate(github, tmp_path / "with", **{"base-cache": NAME})

    assert run.returncode == 1, run.stdout + run.stderr
    assert "the result cache is the base branch's, artifact 'evalward-cache'" in run.stdout
    assert "2 of 4 runs reused from the result cache (artifact 'evalward-cache'" in run.stdout
    fixtures = run.results()["fixtures"]
    assert {(f["side"], f["cached"]) for f in fixtures} == {("base", True), ("head", False)}
    assert "::warning::" not in run.stdout and "::notice" not in run.stdout
    # the token went to GitHub's API, and not to the storage host the download redirected to
    assert planted.model.requests_mentioning("HEAD-V2")
    assert github.storage_requests, "the archive was fetched from the storage host"
    for request in github.storage_requests:
        assert "authorization" not in request.headers, request.headers
        assert not any(github.token in value for value in request.headers.values())
        assert github.token not in request.target
    zipped_from = [r for r in github.requests if r.path.endswith("/zip")]
    assert zipped_from and zipped_from[0].headers["authorization"] == f"Bearer {github.token}"


def test_a_merge_queue_s_group_reads_the_base_branch_s_artifact_and_not_the_workspace(
    planted: Planted, github: FakeGitHub
) -> None:
    github.add_artifact(FakeArtifact(NAME, planted.archive, head_sha=planted.base, run_id=PUSH_RUN))
    group = queue_group(planted.repo, planted.base, planted.head)
    try:
        event = merge_group_event(github.repository, 7, planted.base, group)
        run = run_group(
            planted.repo, github, event, provider_env(planted.model), {"base-cache": NAME}
        )
    finally:
        planted.repo.checkout("feature")

    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 of 4 runs reused from the result cache (artifact 'evalward-cache'" in run.stdout
    assert {(f["side"], f["cached"]) for f in run.results()["fixtures"]} == {
        ("base", True),
        ("head", False),
    }


def test_an_artifact_no_push_run_on_the_base_branch_made_is_not_read(
    planted: Planted, github: FakeGitHub, tmp_path: Path
) -> None:
    """Each carries the planted cache (the head's passing runs): read, the gate would pass."""
    head_passes = zipped(planted.repo.path / ".evalward" / "cache")
    for refused in (
        FakeArtifact(NAME, head_passes, event="pull_request"),
        FakeArtifact(NAME, head_passes, head_branch="feature"),
        FakeArtifact(NAME, head_passes, head_repo="mallory/agents"),
        FakeArtifact(NAME, head_passes, expired=True),
    ):
        github.add_artifact(refused)

    run = planted.gate(github, tmp_path, **{"base-cache": NAME})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["cacheHits"] == 0
    assert EXPECTED in run.stdout
    assert "was started by 'pull_request', not a push" in run.stdout
    assert not github.storage_requests


def test_a_tag_named_like_the_base_branch_is_not_the_base_branch(
    planted: Planted, github: FakeGitHub, tmp_path: Path
) -> None:
    """Pushing a tag `main` starts a run GitHub calls a `push` with `head_branch` "main": an
    author who may push tags puts one on the pull request's own head, whose workflow uploads
    the head's passing runs under the name. Only a run on a commit of the base branch's
    history is read: the tag's artifact is refused and every run is made."""
    head_passes = zipped(planted.repo.path / ".evalward" / "cache")
    github.add_artifact(FakeArtifact(NAME, head_passes, head_sha=planted.head))

    run = planted.gate(github, tmp_path / "tag", **{"base-cache": NAME})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["cacheHits"] == 0
    assert EXPECTED in run.stdout
    assert f"ran on {planted.head[:12]}, not a commit of main's history" in run.stdout
    assert not github.storage_requests


def test_the_push_run_s_artifact_is_read_behind_a_newer_tag_s(
    planted: Planted, github: FakeGitHub, tmp_path: Path
) -> None:
    pushed = github.add_artifact(
        FakeArtifact(
            NAME, planted.archive, head_sha=planted.base, run_id=PUSH_RUN, created_at=YESTERDAY
        )
    )
    head_passes = zipped(planted.repo.path / ".evalward" / "cache")
    github.add_artifact(FakeArtifact(NAME, head_passes, head_sha=planted.head))

    run = planted.gate(github, tmp_path, **{"base-cache": NAME})

    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 of 4 runs reused from the result cache (artifact 'evalward-cache'" in run.stdout
    assert f"(id {pushed.id}) of the push run {pushed.run_id} on main" in run.stdout
    assert "::warning::" not in run.stdout


def test_a_commit_main_merged_from_a_branch_is_not_a_push_on_main(
    planted: Planted, github: FakeGitHub, tmp_path: Path
) -> None:
    """A branch's commit that a merge brought into main is in main's history, but no push
    on main ran it: its workflow is the branch's of that day (one the merge's review saw
    undone by a later commit). A tag `main` on it is refused as a tag on any commit is:
    only main's own line of commits, each parent its first, is the base branch's."""
    tree = planted.repo.git("rev-parse", f"{planted.head}^{{tree}}")
    side = planted.repo.git("commit-tree", tree, "-p", planted.base, "-m", "upload passes")
    base_tree = planted.repo.git("rev-parse", f"{planted.base}^{{tree}}")
    merged = planted.repo.git(
        "commit-tree", base_tree, "-p", planted.base, "-p", side, "-m", "merge, undone"
    )
    head_passes = zipped(planted.repo.path / ".evalward" / "cache")
    github.add_artifact(FakeArtifact(NAME, head_passes, head_sha=side))

    run = planted.gate(github, tmp_path, base=merged, **{"base-cache": NAME})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["cacheHits"] == 0
    assert EXPECTED in run.stdout
    assert f"ran on {side[:12]}, not a commit of main's history" in run.stdout
    assert not github.storage_requests


def test_a_tag_s_run_on_the_base_branch_s_tip_uploads_no_cache_of_evalward_s(
    planted: Planted, github: FakeGitHub, tmp_path: Path
) -> None:
    """A tag `main` first on a commit of the author's own, whose workflow saves the head's
    passing runs in the tag's cache scope, then moved to main's tip: main's own workflow
    runs for it, a `push` with `head_branch` "main" on a commit of main's line, restores
    that scope's cache and uploads it, while evalward skips a push to a tag. The archive
    names a run of evalward on main (an earlier one's, as the author wrote it), not the
    run that uploaded it, and is not read."""
    planted_cache = planted.repo.path / ".evalward" / "cache"
    stamp = {"ref": "refs/heads/main", "sha": planted.base, "run_id": str(PUSH_RUN)}
    (planted_cache / "made-by.json").write_text(json.dumps(stamp))
    try:
        head_passes = zipped(planted_cache)
    finally:
        (planted_cache / "made-by.json").unlink()
    uploaded = github.add_artifact(FakeArtifact(NAME, head_passes, head_sha=planted.base))

    run = planted.gate(github, tmp_path, **{"base-cache": NAME})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["cacheHits"] == 0
    assert EXPECTED in run.stdout
    assert f"made by evalward in the run {PUSH_RUN}, not in the run {uploaded.run_id}" in (
        run.stdout
    )


def test_artifacts_of_the_name_enough_to_push_the_push_run_s_off_the_page_fail_closed(
    planted: Planted, github: FakeGitHub, tmp_path: Path
) -> None:
    """A pull request's workflow uploads under the name from a hundred runs: the push run's
    artifact is no longer on the page evalward reads, which is no cache, never theirs."""
    github.add_artifact(FakeArtifact(NAME, planted.archive, head_sha=planted.base, run_id=PUSH_RUN))
    head_passes = zipped(planted.repo.path / ".evalward" / "cache")
    for _ in range(100):
        github.add_artifact(
            FakeArtifact(NAME, head_passes, event="pull_request", head_branch="feature")
        )

    run = planted.gate(github, tmp_path, **{"base-cache": NAME})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["cacheHits"] == 0
    assert EXPECTED in run.stdout and "GitHub has no such artifact" in run.stdout
    assert not github.storage_requests


def test_a_token_without_actions_read_is_a_warning_and_every_run_is_made(
    planted: Planted, github: FakeGitHub, tmp_path: Path
) -> None:
    github.add_artifact(FakeArtifact(NAME, planted.archive, head_sha=planted.base, run_id=PUSH_RUN))
    github.fail("GET", r"/actions/artifacts$", 403, "Resource not accessible by integration")

    run = planted.gate(github, tmp_path, **{"base-cache": NAME})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["cacheHits"] == 0
    assert EXPECTED in run.stdout
    assert "HTTP 403 Resource not accessible by integration" in run.stdout
    assert "`permissions: actions: read`" in run.stdout


def _hostile(kind: str, escape: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("results/ok.txt", "fine")
        if kind == "dot-dot":
            archive.writestr("../" * 30 + str(escape).lstrip("/"), "escaped")
        elif kind == "file-and-folder":  # results.sqlite, then a folder of that name
            archive.writestr("results/results.sqlite", "db")
            archive.writestr("results/results.sqlite/x", "y")
        elif kind == "symlink":
            link = zipfile.ZipInfo("results/results.sqlite")
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(link, str(escape))
        else:
            archive.writestr("results/big", "x")
    data = buffer.getvalue()
    if kind == "oversized":  # the central directory says 2 GiB unpacked
        at = data.rindex(b"PK\x01\x02")
        data = data[: at + 24] + struct.pack("<I", 0x7FFFFFFF) + data[at + 28 :]
    return data


@pytest.mark.parametrize("kind", ["dot-dot", "symlink", "file-and-folder", "oversized"])
def test_a_hostile_archive_is_refused_whole(
    planted: Planted, github: FakeGitHub, tmp_path: Path, kind: str
) -> None:
    escape = tmp_path / "escaped"
    github.add_artifact(
        FakeArtifact(NAME, _hostile(kind, escape), head_sha=planted.base, run_id=PUSH_RUN)
    )

    run = planted.gate(github, tmp_path, **{"base-cache": NAME})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["cacheHits"] == 0
    assert EXPECTED in run.stdout
    said = {
        "dot-dot": "is not a plain relative name",
        "symlink": "is not a file or a folder (mode 120000)",
        "file-and-folder": "is a file and a folder of other entries",
        "oversized": "bytes unpacked, more than the 1,073,741,824 allowed",
    }
    assert said[kind] in run.stdout
    assert not escape.exists()


def test_model_replies_planted_in_the_workspace_are_not_read(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The base's `evalward.yaml` keeps model replies outside `cache-dir`: replies the head's
    agent got where it greeted well, left in the workspace, answer its calls now that it
    greets badly, unless `base-cache` is set (no artifact here: every call is made)."""
    config = "cache: { mode: read-write, dir: .evalward/responses }\n"
    base, head = commit_pr(repo)
    repo.checkout("main")
    base = repo.commit("a response cache", {"evalward.yaml": config})
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge main")
    head = repo.head()
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 7, base, head)
    script_model(model, head_greets_well=True)
    good = run_action(repo.path, github, event, env=env, inputs={"cache": "off"})
    assert good.returncode == 0, good.stdout + good.stderr
    assert list((repo.path / ".evalward" / "responses").rglob("*.json"))
    model.rules.clear()
    script_model(model, head_greets_well=False)
    calls = len(model.requests)
    planted = run_action(repo.path, github, event, env=env, inputs={"cache": "off"})
    assert planted.returncode == 0, "without base-cache, the planted replies decide"
    assert len(model.requests) == calls

    run = run_action(repo.path, github, event, env=env, inputs={"base-cache": NAME})

    assert run.returncode == 1, run.stdout + run.stderr
    assert len(model.requests) > calls, "the replies came from the workspace"
    assert EXPECTED in run.stdout and "GitHub has no such artifact" in run.stdout
