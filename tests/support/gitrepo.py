"""Real git repositories in temp dirs, for tests."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}

IDENTITY = (
    "[user]\n\tname = Test Author\n\temail = author@example.com\n[commit]\n\tgpgsign = false\n"
)
"""What each repository's own configuration says: who commits, and that nothing is signed."""

OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class GitRepo:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        config = path / ".git" / "config"
        if config.is_file() and "[user]" not in config.read_text():
            # written as `git config` writes them: a git process fewer for each, and every
            # test makes a repository
            with config.open("a") as settings:
                settings.write(IDENTITY)
            return
        self.git("config", "user.name", "Test Author")
        self.git("config", "user.email", "author@example.com")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str) -> str:
        # git names paths as their bytes in what it says (a warning on stderr about a link
        # loop under a Latin-1 name): read, never refused
        done = subprocess.run(
            ["git", "-C", str(self.path), *args],
            capture_output=True,
            encoding="utf-8",
            errors="surrogateescape",
            check=True,
        )
        return done.stdout.strip()

    def write(self, files: dict[str, str]) -> None:
        for name, content in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")

    def remove(self, *names: str) -> None:
        self.git("rm", "-q", *names)

    def commit(self, message: str, files: dict[str, str] | None = None) -> str:
        if files:
            self.write(files)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.head()

    def head(self) -> str:
        """HEAD's commit: read from the files git keeps it in (a branch's loose ref, or a
        detached HEAD), a git process fewer for each of the suite's commits; asked of git
        wherever it is kept otherwise (a packed ref, a worktree's HEAD)."""
        folder = self.path / ".git"
        if folder.is_dir():
            said = (folder / "HEAD").read_text().strip()
            ref = folder / said.removeprefix("ref: ") if said.startswith("ref: ") else None
            sha = ref.read_text().strip() if ref is not None and ref.is_file() else said
            if OBJECT_ID.fullmatch(sha):
                return sha
        return self.git("rev-parse", "HEAD")

    def branch(self, name: str) -> None:
        self.git("checkout", "-q", "-b", name)

    def checkout(self, ref: str) -> None:
        self.git("checkout", "-q", ref)

    def pull_files(self, base: str, head: str) -> list[dict[str, str]]:
        """The files of a pull request from `base` to `head` as GitHub's API lists them: each
        changed path's status and patch (git's diff from its first `@@`, three lines of
        context; a file renamed is listed at its new name, `previous_filename` the old, its
        patch the lines the rename changed), what the fake GitHub takes a review comment's
        lines from."""
        listed = self.git("diff", "--find-renames", "--name-status", base, head)
        status = {"A": "added", "D": "removed", "R": "renamed"}
        files = []
        for row in listed.splitlines():
            letter, *names = row.split("\t")
            diff = subprocess.run(
                ["git", "-C", str(self.path), "diff", "--find-renames", base, head, "--", *names],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            patch = diff[diff.index("@@") :].rstrip("\n") if "@@" in diff else ""
            entry = {"filename": names[-1], "status": status.get(letter[0], "modified")}
            if letter.startswith("R"):
                entry["previous_filename"] = names[0]
            files.append({**entry, "patch": patch})
        return files

    def diff_blocks(self, base: str, head: str, path: str) -> list[set[int]]:
        """The head's lines of each block of GitHub's diff of `path` (`pull_files`: added and
        context lines): where GitHub lets a review comment sit, its first and last line in
        one block."""
        (entry,) = [f for f in self.pull_files(base, head) if f["filename"] == path]
        blocks: list[set[int]] = []
        line = 0
        for text in entry["patch"].splitlines():
            if found := re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", text):
                line = int(found[1])
                blocks.append(set())
            elif not text.startswith(("-", "\\")):
                blocks[-1].add(line)
                line += 1
        return blocks
