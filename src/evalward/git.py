"""Every git command evalward runs, in one place.

Commands pass `-c safe.directory=*`: inside the action's container the workspace belongs to
another user, and git would otherwise refuse to read it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from evalward.errors import GitError


@dataclass(frozen=True)
class FileChange:
    """One entry of `git diff --name-status`: A, M, D, R (with `old_path`), T, C."""

    status: str
    path: str
    old_path: str | None = None


class Git:
    def __init__(self, repo: Path, executable: str = "git") -> None:
        self.repo = repo
        self._git = shutil.which(executable) or executable

    def run(self, *args: str, check: bool = True) -> str:
        command = [self._git, "-c", "safe.directory=*", "-C", str(self.repo), *args]
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise GitError("git is not installed or not on PATH") from None
        if check and done.returncode != 0:
            detail = done.stderr.strip() or done.stdout.strip()
            raise GitError(f"`git {' '.join(args)}` failed: {detail}")
        return done.stdout

    def resolve(self, ref: str) -> str:
        """The full SHA of a commit-ish, or a GitError that says it is missing."""
        out = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        sha = out.strip()
        if not sha:
            raise GitError(
                f"commit {ref!r} is not in the repository at {self.repo}. In a workflow, "
                "check out full history: `actions/checkout` with `fetch-depth: 0`."
            )
        return sha

    def merge_base(self, base: str, head: str) -> str:
        out = self.run("merge-base", base, head, check=False).strip()
        if not out:
            raise GitError(
                f"no merge base between {base[:12]} and {head[:12]}: the history is "
                "incomplete. Check out full history with `fetch-depth: 0`."
            )
        return out

    def changed_files(self, base: str, head: str | None) -> list[FileChange]:
        """Files changed from `base` to `head` (to the working tree when head is None)."""
        revisions = [base] if head is None else [base, head]
        out = self.run("diff", "--name-status", "-z", "--find-renames", *revisions, "--")
        fields = out.split("\0")
        changes: list[FileChange] = []
        index = 0
        while index < len(fields) and fields[index]:
            status = fields[index]
            kind = status[0]
            if kind in "RC":
                changes.append(FileChange(kind, fields[index + 2], old_path=fields[index + 1]))
                index += 3
            else:
                changes.append(FileChange(kind, fields[index + 1]))
                index += 2
        return changes

    def read_files(self, commit: str, paths: list[str]) -> dict[str, bytes]:
        """The contents of `paths` at `commit` (missing ones left out), in one git process."""
        if not paths:
            return {}
        command = [self._git, "-c", "safe.directory=*", "-C", str(self.repo)]
        request = "".join(f"{commit}:{path}\n" for path in paths).encode()
        done = subprocess.run(
            [*command, "cat-file", "--batch"], input=request, capture_output=True, check=False
        )
        if done.returncode != 0:
            raise GitError(f"`git cat-file --batch` failed: {done.stderr.decode(errors='replace')}")
        out, contents, offset = done.stdout, {}, 0
        for path in paths:
            end = out.index(b"\n", offset)
            header = out[offset:end].split()
            offset = end + 1
            if len(header) < 3 or header[-1] == b"missing" or header[1] != b"blob":
                continue
            size = int(header[2])
            contents[path] = out[offset : offset + size]
            offset += size + 1
        return contents

    def credential_settings(self) -> list[str]:
        """The names (never the values) of settings that hand git an HTTP credential, as
        actions/checkout's `persist-credentials` leaves behind."""
        out = self.run(
            "config", "--name-only", "--get-regexp", r"^http\..*extraheader$", check=False
        )
        return [name for name in out.splitlines() if name]

    def tracked(self, path: str) -> list[str]:
        """Files at or below `path` (relative to the repository) that the checkout tracks."""
        out = self.run("ls-files", "-z", "--", path)
        return [name for name in out.split("\0") if name]

    def gitlinks(self) -> set[str]:
        """Paths the index records as submodules (mode 160000): another repository's files."""
        out = self.run("ls-files", "--stage", "-z")
        return {
            entry.split("\t", 1)[1]
            for entry in out.split("\0")
            if entry.startswith("160000 ") and "\t" in entry
        }

    def links_among(self, commit: str, paths: list[str]) -> set[str]:
        """Which of `paths` are symbolic links at `commit` (mode 120000)."""
        if not paths:
            return set()
        out = self.run("ls-tree", "-r", "-z", "--full-tree", commit)  # no argument-length limit
        links = {
            entry.split("\t", 1)[1]
            for entry in out.split("\0")
            if entry.startswith("120000 ") and "\t" in entry
        }
        return links & set(paths)

    def files_in(self, commit: str, folder: str) -> list[str]:
        """The files directly in `folder` (repository path, "" for the root) at `commit`."""
        prefix = f"{folder.rstrip('/')}/" if folder else ""
        out = self.run("ls-tree", "-z", "--name-only", commit, "--", prefix or ".")
        return [name for name in out.split("\0") if name]

    def dirty_paths(self) -> set[str]:
        """Paths the working tree has changed, added or left untracked since HEAD."""
        out = self.run("status", "--porcelain", "-z", "--untracked-files=all")
        paths: set[str] = set()
        entries = iter(out.split("\0"))
        for entry in entries:
            if len(entry) < 4:
                continue
            paths.add(entry[3:])
            if entry[0] in "RC":
                paths.add(next(entries, ""))
        paths.discard("")
        return paths

    @contextmanager
    def worktree(self, commit: str) -> Iterator[Path]:
        """A detached worktree at `commit`, always removed afterwards."""
        parent = Path(tempfile.mkdtemp(prefix="evalward-base-"))
        path = parent / "tree"
        self.run("worktree", "add", "--detach", "--force", str(path), commit)
        try:
            yield path
        finally:
            self.run("worktree", "remove", "--force", str(path), check=False)
            shutil.rmtree(parent, ignore_errors=True)
            self.run("worktree", "prune", check=False)
