"""The one door to files a definition names (files/committed.py), on real repositories: a
commit's side reads git's objects only; the working tree reads what git would commit; a
working copy of a commit holds its files, with git's modes, and nothing else."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.errors import NotCommitted, ResourceError
from evalward.files.committed import RepoFiles
from evalward.files.trees import TreeBounds
from evalward.git import Git
from evalward.resources.yamlsource import too_large
from evalward.runtime.isolation.checkout_copy import copy_side
from support.gitrepo import GitRepo


@pytest.fixture
def planted(repo: GitRepo) -> str:
    """A commit with a prompt, a link to it, a link out, an executable and a submodule; then,
    in the workspace only: an ignored 0600 file, an untracked file and a changed prompt."""
    repo.write(
        {
            ".gitignore": "gha-creds-*.json\n",
            "prompts/bot.md": "committed prompt",
            "tools/run.sh": "#!/bin/sh\n",
        }
    )
    (repo.path / "tools" / "run.sh").chmod(0o700)
    os.symlink("bot.md", repo.path / "prompts" / "current.md")
    os.symlink("../../etc/passwd", repo.path / "prompts" / "out.md")
    commit = repo.commit("prompts")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{commit},vendor/lib")
    repo.git("commit", "-q", "-m", "a submodule")
    commit = repo.head()
    (repo.path / "gha-creds-1.json").write_text("PRIVATE")
    (repo.path / "gha-creds-1.json").chmod(0o600)
    (repo.path / "notes.md").write_text("untracked")
    (repo.path / "prompts" / "bot.md").write_text("changed on disk")
    return commit


def test_a_commit_is_read_from_git_objects_only(repo: GitRepo, planted: str) -> None:
    files = RepoFiles.at_commit(Git(repo.path), planted)

    assert files.read("prompts/bot.md", 100) == b"committed prompt"
    assert files.read("/prompts/current.md", 100) == b"committed prompt"
    refused = {
        "gha-creds-1.json": "is not a file of commit",
        "notes.md": "is not a file of commit",
        "prompts/out.md": "leads out of the repository",
        "../outside": "leads out of the repository",
        "vendor/lib": "is a submodule",
        "prompts": "is a folder",
    }
    for path, reason in refused.items():
        with pytest.raises(NotCommitted) as caught:
            files.read(path, 100)
        assert caught.value.reason.startswith(reason), (path, caught.value.reason)
    with pytest.raises(NotCommitted, match="larger than 4 bytes"):
        files.read("prompts/bot.md", 4)


def test_many_files_of_a_commit_are_read_at_once_within_a_limit(
    repo: GitRepo, planted: str
) -> None:
    files = RepoFiles.at_commit(Git(repo.path), planted)
    asked = ["prompts/bot.md", "prompts/current.md", "tools/run.sh", "gha-creds-1.json"]
    asked += ["notes.md", "prompts/out.md", "vendor/lib", "prompts"]

    found = files.read_committed(asked, limit=12)

    assert set(found) == {"prompts/bot.md", "prompts/current.md", "tools/run.sh"}
    assert found["tools/run.sh"].content == b"#!/bin/sh\n"
    assert found["prompts/bot.md"].size == len("committed prompt")
    assert found["prompts/bot.md"].content is None  # larger than asked: not held
    assert files.start("prompts/current.md", 9) == b"committed"
    assert RepoFiles.working_tree(repo.path).read_committed(asked, limit=12) == {}


RESOURCE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: bot }}
spec:
  models: [openai/gpt-4.1-mini]
  system: "{system}"
"""


def test_definitions_of_a_commit_are_its_own_not_the_workspaces(repo: GitRepo) -> None:
    """What another step rewrote in the workspace is not the commit's definition; a committed
    file past the size bound is refused as it would be on disk."""
    huge = RESOURCE.format(system="x" * (5 * 1024 * 1024))
    commit = repo.commit(
        "an agent",
        {"agents/bot.yaml": RESOURCE.format(system="committed"), "agents/huge.yaml": huge},
    )
    (repo.path / "agents" / "bot.yaml").write_text(RESOURCE.format(system="rewritten"))
    (repo.path / "agents" / "huge.yaml").write_text("# small on disk\n")
    door = RepoFiles.at_commit(Git(repo.path), commit)

    with pytest.raises(ResourceError) as caught:
        load_resources(repo.path, door=door)
    (problem,) = caught.value.problems
    assert (problem.file, problem.message) == ("agents/huge.yaml", too_large(len(huge)))

    (repo.path / "agents" / "huge.yaml").unlink()
    loaded = load_resources(repo.path, door=RepoFiles.at_commit(Git(repo.path), commit))
    assert loaded.agents["bot"].resource.spec.system == "committed"


def test_the_working_tree_reads_what_git_would_commit(repo: GitRepo, planted: str) -> None:
    files = RepoFiles.working_tree(repo.path)

    assert files.read("prompts/bot.md", 100) == b"changed on disk"
    assert files.read("notes.md", 100) == b"untracked"
    with pytest.raises(NotCommitted, match="is ignored by git"):
        files.read("gha-creds-1.json", 100)
    with pytest.raises(NotCommitted, match="leads out of the repository"):
        files.read("prompts/out.md", 100)


def _listing(tree: Path) -> dict[str, int]:
    found = {}
    for folder, dirs, names in os.walk(tree):
        for name in [*names, *dirs]:
            path = Path(folder) / name
            found[path.relative_to(tree).as_posix()] = path.lstat().st_mode
    return found


@pytest.mark.parametrize("reads", [None, ["prompts/current.md", "tools"]])
def test_a_copy_of_a_commit_holds_its_files_with_gits_modes(
    repo: GitRepo, planted: str, tmp_path: Path, reads: list[str] | None
) -> None:
    target = tmp_path / "copy"
    old = os.umask(0)  # git's modes, whatever evalward's umask
    try:
        copy_side(
            RepoFiles.at_commit(Git(repo.path), planted),
            repo.path,
            target,
            reads,
            frozenset({".gitignore"}),
            TreeBounds(),
        )
    finally:
        os.umask(old)

    listing = _listing(target)
    expected = {"prompts", "prompts/bot.md", "prompts/current.md", "tools", "tools/run.sh"}
    if reads is None:
        expected |= {"prompts/out.md"}
    assert set(listing) == expected
    assert (target / "prompts" / "bot.md").read_text() == "committed prompt"
    assert os.readlink(target / "prompts" / "current.md") == "bot.md"
    assert stat.S_IMODE(listing["prompts/bot.md"]) == 0o644
    assert stat.S_IMODE(listing["tools/run.sh"]) == 0o755
    assert stat.S_IMODE(listing["tools"]) == 0o755


def test_a_copy_of_the_working_tree_leaves_out_what_git_ignores(
    repo: GitRepo, planted: str, tmp_path: Path
) -> None:
    target = tmp_path / "copy"
    copy_side(
        RepoFiles.working_tree(repo.path),
        repo.path,
        target,
        None,
        frozenset({".git"}),
        TreeBounds(),
    )

    listing = _listing(target)
    assert "gha-creds-1.json" not in listing
    assert (target / "notes.md").read_text() == "untracked"
