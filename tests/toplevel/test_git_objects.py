"""Commits evalward makes from objects (git.py: `write_blob`, `make_tree`, `tree_with`,
`commit_tree`, `working_tree_commit`), on a real repository: only the folders on the way
change, modes and odd names are kept, the same tree on the same parent is the same commit,
and a commit of the working tree leaves the checkout as it was."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from evalward.git import KEPT_BLOB_BYTES, STREAMED_BLOBS, Git
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

ODD = "prompts/a\nb -c.md"


def listing(repo: GitRepo, commit: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, content) of every file of `commit`."""
    out = repo.git("ls-tree", "-r", "-z", commit)
    found = {}
    for record in filter(None, out.split("\0")):
        meta, path = record.split("\t", 1)
        mode, _, oid = meta.split(" ")
        found[path] = (mode, repo.git("cat-file", "blob", oid))
    return found


def _asking_git(repo: GitRepo, tmp_path: Path) -> tuple[Git, Path]:
    """A `Git` of `repo` whose every git command is written, a line each, to the file
    returned beside it."""
    asked = tmp_path / "asked"
    wrapper = tmp_path / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {asked}\nexec {shutil.which("git")} "$@"\n')
    wrapper.chmod(0o755)
    return Git(repo.path, executable=str(wrapper)), asked


def test_a_tree_with_files_written_changes_only_them(repo: GitRepo) -> None:
    head = repo.commit(
        "head",
        {
            "tools/run.sh": "#!/bin/sh\necho old\n",
            "tools/gone/only.md": "alone\n",
            ODD: "odd\n",
            "other/keep.md": "kept\n",
        },
    )
    os.chmod(repo.path / "tools/run.sh", 0o755)
    head = repo.commit("executable")
    git = Git(repo.path)
    files: dict[str, bytes | None] = {
        "tools/run.sh": b"#!/bin/sh\necho new\n",
        "tools/gone/only.md": None,
        "new/deep/file.md": b"new\n",
        ODD: b"odder\n",
    }
    tree = git.tree_with(head, files)
    commit = git.commit_tree(tree, head, "variant")
    assert listing(repo, commit) == {
        "tools/run.sh": ("100755", "#!/bin/sh\necho new"),
        "new/deep/file.md": ("100644", "new"),
        ODD: ("100644", "odder"),
        "other/keep.md": ("100644", "kept"),
    }
    # a folder the change does not reach is the head's own tree
    assert repo.git("rev-parse", f"{commit}:other") == repo.git("rev-parse", f"{head}:other")
    assert repo.git("rev-parse", f"{commit}^") == head


def test_the_same_tree_on_the_same_parent_is_the_same_commit(repo: GitRepo) -> None:
    head = repo.commit("head", {"a.md": "a\n"})
    repo.git("config", "commit.gpgsign", "true")
    repo.git("config", "gpg.program", "false")  # signing would fail: commit_tree never signs
    git = Git(repo.path)
    tree = git.tree_with(head, {"a.md": b"b\n"})
    first = git.commit_tree(tree, head, "variant")
    assert git.commit_tree(tree, head, "variant") == first
    assert Git(repo.path).commit_tree(git.tree_with(head, {"a.md": b"b\n"}), head, "variant") == (
        first
    )
    assert git.commit_tree(tree, head, "another") != first
    assert "author evalward <evalward@localhost> 0 +0000" in repo.git("cat-file", "-p", first)


def test_removing_every_file_leaves_the_empty_tree(repo: GitRepo) -> None:
    head = repo.commit("head", {"only/one.md": "1\n"})
    git = Git(repo.path)
    tree = git.tree_with(head, {"only/one.md": None})
    assert tree == git.make_tree({})
    assert repo.git("ls-tree", tree) == ""
    assert git.write_blob(b"1\n") == repo.git("rev-parse", f"{head}:only/one.md")


def test_a_commit_of_the_working_tree_holds_its_tracked_files_and_changes_nothing(
    repo: GitRepo,
) -> None:
    """Staged and unstaged edits, a staged new file, a deletion, a mode change and an odd
    name are in the commit as the working tree has them; an untracked file is not, and the
    index, HEAD and the refs are as they were."""
    head = repo.commit("head", {"a.md": "a\n", "b.md": "b\n", "run.sh": "echo\n", ODD: "odd\n"})
    (repo.path / "a.md").write_text("a, staged\n")
    repo.git("add", "a.md")
    (repo.path / "a.md").write_text("a, staged, then edited\n")
    (repo.path / "new.md").write_text("new\n")
    repo.git("add", "new.md")
    (repo.path / "b.md").unlink()
    os.chmod(repo.path / "run.sh", 0o755)
    (repo.path / ODD).write_text("odder\n")
    (repo.path / "untracked.md").write_text("not tracked\n")
    git = Git(repo.path)
    index = (repo.path / ".git" / "index").read_bytes()
    refs = repo.git("for-each-ref")

    commit = git.working_tree_commit(head)

    assert listing(repo, commit) == {  # (`repo.git` strips the last line break)
        "a.md": ("100644", "a, staged, then edited"),
        "new.md": ("100644", "new"),
        "run.sh": ("100755", "echo"),
        ODD: ("100644", "odder"),
    }
    assert repo.git("rev-parse", f"{commit}^").strip() == head == repo.head()
    assert (repo.path / ".git" / "index").read_bytes() == index
    assert repo.git("for-each-ref") == refs
    assert git.untracked() == ["untracked.md"]
    (repo.path / "deps" / "pkg").mkdir(parents=True)
    (repo.path / "deps" / "pkg" / "index.js").write_text("x\n")
    (repo.path / "empty").mkdir()
    assert git.untracked() == ["deps/", "untracked.md"]  # a folder once; an empty one not


def test_a_working_tree_as_its_commit_has_it_is_that_commit(repo: GitRepo) -> None:
    head = repo.commit("head", {"a.md": "a\n", "run.sh": "echo\n"})
    (repo.path / "ignored.log").write_text("untracked: in no commit\n")

    assert Git(repo.path).working_tree_commit(head) == head


def test_a_full_object_id_is_asked_of_git_once_and_a_ref_every_time(
    repo: GitRepo, tmp_path: Path
) -> None:
    """What a full object id names never changes; what a ref names may (a branch moves), and
    an id git lacks now may be fetched later: those are asked each time."""
    first = repo.commit("first", {"a.md": "a\n"})
    git, asked = _asking_git(repo, tmp_path)
    missing = "0" * 40

    assert [git.commit_of(first) for _ in range(3)] == [first] * 3
    assert git.commit_of("HEAD") == first
    second = repo.commit("second", {"a.md": "b\n"})
    assert git.commit_of("HEAD") == second
    assert git.commit_of(missing) is None and git.commit_of(missing) is None

    asked_of = [line.split()[-1] for line in asked.read_text().splitlines()]
    assert asked_of == [
        f"{first}^{{commit}}",
        *["HEAD^{commit}"] * 2,
        *[f"{missing}^{{commit}}"] * 2,
    ]


def test_a_merge_base_and_a_folder_of_full_ids_are_asked_once_of_a_ref_every_time(
    repo: GitRepo, tmp_path: Path
) -> None:
    """Every variant attribution builds lists the same folders of the same head, and its
    plan asks the same merge base: of full commit ids, git is asked once; of a ref, each
    time (a branch moves). The trees made are the same either way."""
    base = repo.commit("base", {"agents/a.md": "a\n", "other/b.md": "b\n"})
    head = repo.commit("head", {"agents/a.md": "changed\n"})
    git, asked = _asking_git(repo, tmp_path)

    bases = [git.merge_base(base, head) for _ in range(3)] + [git.merge_base("HEAD~1", "HEAD")]
    trees = [git.tree_with(head, {"agents/a.md": f"v{n}\n".encode()}) for n in range(3)]
    by_ref = [git.tree_with("HEAD", {"agents/a.md": b"v0\n"}) for _ in range(2)]

    assert bases == [base] * 4
    assert len(set(trees)) == 3 and by_ref == [trees[0]] * 2
    lines = asked.read_text().splitlines()
    assert [line.split()[-2:] for line in lines if "merge-base" in line] == [
        [base, head],
        ["HEAD~1", "HEAD"],
    ]
    listed = [line.split("ls-tree -z ")[-1] for line in lines if "ls-tree -z" in line]
    assert sorted(listed) == sorted([head, f"{head} -- agents/", *["HEAD", "HEAD -- agents/"] * 2])


def test_a_small_blob_is_read_from_git_once_a_large_or_missing_one_each_time(
    repo: GitRepo, tmp_path: Path
) -> None:
    """An object id names one content, and a gate reads the same files again (its
    preflight, its seeds, each variant of attribution): a small blob is kept as read. One
    over the bound is not (memory), nor an id git lacks (a fetch may bring it)."""
    repo.commit("files", {"small.md": "small\n", "large.md": "x" * (KEPT_BLOB_BYTES + 1)})
    small, large = (
        repo.git("rev-parse", f"HEAD:{name}").strip() for name in ("small.md", "large.md")
    )
    git, asked = _asking_git(repo, tmp_path)
    missing = "0" * 40

    for _ in range(3):
        assert git.blobs({small, large, missing}) == {
            small: b"small\n",
            large: b"x" * (KEPT_BLOB_BYTES + 1),
        }
        assert git.blob(small) == b"small\n"

    reads = [line for line in asked.read_text().splitlines() if "cat-file --batch" in line]
    assert len(reads) == 3, reads  # the large one and the missing one, each time


@pytest.mark.parametrize("count", [7, STREAMED_BLOBS])
def test_blobs_written_together_are_each_its_own_content(
    repo: GitRepo, tmp_path: Path, count: int
) -> None:
    """Whatever a pull request's files hold (nothing, a NUL, lines that read like the stream
    they are written in, the same bytes twice), each blob is its content, in order: written
    as files (a few) or streamed (many)."""
    repo.commit("first", {"a.md": "a\n"})
    hostile = [
        b"",
        b"\0binary\xff",
        b"blob\nmark :1\ndata 3\nabc\ndone\n",
        b"no line end",
        b"same\n",
        b"same\n",
        b"x" * 100_000,
    ]
    contents = [*hostile, *(b"%d\n" % n for n in range(count - len(hostile)))]
    ids = Git(repo.path).write_blobs(contents)

    assert len(ids) == count
    for oid, content in zip(ids, contents, strict=True):
        (tmp_path / "one").write_bytes(content)
        assert oid == repo.git("hash-object", str(tmp_path / "one"))
    for oid, content in zip(ids, hostile, strict=False):
        shown = subprocess.run(
            ["git", "-C", str(repo.path), "cat-file", "blob", oid], capture_output=True, check=True
        )
        assert shown.stdout == content
