"""Every git command evalward runs, in one place.

Commands pass `-c safe.directory=*`: inside the action's container the workspace belongs to
another user, and git would otherwise refuse to read it.

File names are bytes, and the commit under test chooses them: a newline, a tab, a leading
dash, `*` or bytes that are not UTF-8 are all allowed. So every command that lists paths
separates them with NUL (`-z`), pathspecs are literal (`--literal-pathspecs`: `*` and `:(…)`
mean themselves), git's output is decoded as the operating system decodes file names
(`os.fsdecode`: a byte that is not UTF-8 is kept as a surrogate and encodes back to the same
byte), and no path is ever written to a line-based protocol: contents are read by object id,
found in the commit's tree listing (`git cat-file --batch` echoes a request it cannot answer,
so a path holding a newline could forge the answers that follow it).
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from evalward.errors import GitError
from evalward.text.escaping import printable

PATH_BYTES = 64 * 1024
"""Bytes of paths one git command is given at most: Linux takes 2 MiB of arguments and
environment together, and refuses more with E2BIG."""
MAX_LINK_HOPS = 40
"""Symbolic links followed for one path before giving up, as the kernel does (ELOOP)."""
STREAMED_BLOBS = 128
"""Blobs written at once from which they go to git as one `fast-import` stream, which stores
them in a pack: creating a file costs 0.2 ms on a virtual machine's disk, so 10,000 blobs
written as files first took 6 s, streamed 0.5 s. Fewer are written as files, which git reads
(`hash-object --stdin-paths`): below about a hundred, fast-import writes loose objects too,
and its start costs more (2 blobs: 3 ms as files, 7 ms streamed)."""
KEPT_BLOB_BYTES = 1024 * 1024
"""A blob read this large at most is kept for the next read of it (`Git.blobs`)."""
KEPT_BLOBS_BYTES = 32 * 1024 * 1024
"""Kept blobs' bytes at most, together, per `Git`."""
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
Block = tuple[int, int, int, int]
"""`(i1, i2, j1, j2)`: the old text's lines `i1:i2` (0-based, half-open) became the new
text's `j1:j2`, one changed block as git's diff shows it (`Git.changed_blocks`)."""

FILE_MODES = frozenset({"100644", "100755"})
LINK_MODE = "120000"
SUBMODULE_MODE = "160000"
FOLDER_MODE = "040000"


@dataclass(frozen=True)
class FileChange:
    """One entry of `git diff --name-status`: A, M, D, R (with `old_path`), T, C."""

    status: str
    path: str
    old_path: str | None = None


@dataclass(frozen=True)
class TreeEntry:
    """One path of a commit's tree: a file, a symbolic link (its blob is the target) or a
    submodule (its id is the commit it points at)."""

    mode: str
    oid: str

    @property
    def is_file(self) -> bool:
        return self.mode in FILE_MODES

    @property
    def is_link(self) -> bool:
        return self.mode == LINK_MODE

    @property
    def is_submodule(self) -> bool:
        return self.mode == SUBMODULE_MODE

    @property
    def is_folder(self) -> bool:
        """A folder (only `Git.entry` answers with folders; `Git.tree` lists what is in them)."""
        return self.mode == FOLDER_MODE


class Index:
    """The paths of one reading of the index, with their modes (`Git.index`): a check that
    asks two questions of it spawns git once."""

    def __init__(self, entries: list[tuple[str, str]]) -> None:
        self.entries = entries

    def gitlinks(self) -> set[str]:
        """Paths recorded as submodules (mode 160000): another repository's files."""
        return {path for mode, path in self.entries if mode == SUBMODULE_MODE}

    def under(self, path: str) -> list[str]:
        """The files at or below `path`, as `git ls-files -- <path>` lists them (`Git.tracked`)."""
        path = path.rstrip("/")
        paths = (p for _, p in self.entries)
        if path not in ("", "."):
            paths = (p for p in paths if p == path or p.startswith(f"{path}/"))
        return list(paths)


class Git:
    def __init__(self, repo: Path, executable: str = "git") -> None:
        self.repo = repo
        self._git = shutil.which(executable) or executable
        self._trees: dict[str, dict[str, TreeEntry]] = {}
        self._commits: dict[str, str] = {}
        """The commit each full object id asked of names (`commit_of`)."""
        self._known: dict[str, dict[str, TreeEntry | None]] = {}
        """Entries looked up one by one (`entry`), folders included; None: not in the tree."""
        self._sizes: dict[str, int] = {}
        """Blob sizes by object id, as asked (`blob_sizes`): an id names one content."""
        self._targets: dict[str, bytes | None] = {}
        """Where each symbolic link leads, by its blob's id (`link_targets`)."""
        self._resolved: dict[tuple[str, str], tuple[str | None, list[str]]] = {}
        """Where a path of a commit leads (`_resolve`), for a commit's full id only."""
        self._kept: dict[str, bytes] = {}
        """Small blobs' contents by id, as read (`blobs`): an id names one content, and a
        gate reads the same files again, its preflight, its seeds, each variant of
        attribution."""
        self._kept_bytes = 0
        self._format: str | None = None
        self._bases: dict[tuple[str, str], str] = {}
        """The merge base of two full commit ids, as asked (`merge_base`)."""
        self._folders: dict[tuple[str, str], dict[str, TreeEntry]] = {}
        """A folder's entries at a full commit id, as listed (`_folder_with`): every
        variant attribution builds lists the same folders of the same head."""

    def object_format(self) -> str:
        """The hash the repository names its objects by: "sha1", or "sha256"."""
        if self._format is None:
            self._format = self.run("rev-parse", "--show-object-format").strip() or "sha1"
        return self._format

    def _command(self, args: Iterable[str]) -> list[str]:
        return [
            self._git,
            "--literal-pathspecs",
            "-c",
            "safe.directory=*",
            "-C",
            str(self.repo),
            *args,
        ]

    def _done(
        self,
        args: tuple[str, ...],
        data: bytes | None = None,
        env: Mapping[str, str] | None = None,
        umask: int = -1,
    ) -> subprocess.CompletedProcess[bytes]:
        """git run to its end, whatever its exit code (`umask` -1: the process's own)."""
        try:
            return subprocess.run(
                self._command(args),
                input=data,
                capture_output=True,
                check=False,
                env=env,
                umask=umask,
            )
        except FileNotFoundError:
            raise GitError("git is not installed or not on PATH") from None
        except OSError as exc:  # E2BIG, EAGAIN, ENOMEM: git did not start
            raise GitError(f"git could not be started: {exc.strerror or exc}") from None

    def _raw(
        self,
        args: tuple[str, ...],
        data: bytes | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> bytes:
        done = self._done(args, data, env)
        if check and done.returncode != 0:
            detail = (done.stderr.strip() or done.stdout.strip()).decode(errors="backslashreplace")
            shown = " ".join(printable(os.fsdecode(a)) for a in args)
            raise GitError(f"`git {shown}` failed: {detail}")
        return done.stdout

    def run(self, *args: str, check: bool = True) -> str:
        """git's output, decoded as file names are (`os.fsdecode`): never a decoding error."""
        return os.fsdecode(self._raw(args, check=check))

    def _over(self, args: tuple[str, ...], paths: Sequence[str]) -> bytes:
        """`git ARGS -- PATHS`, whose answer is records each ended by a NUL, asked in as many
        calls as the system's bound on a command line needs (`PATH_BYTES` of paths each):
        a pull request decides how many paths there are and how long each is."""
        batches: list[list[str]] = []
        size = PATH_BYTES
        for path in paths:
            length = len(os.fsencode(path)) + 1
            if size + length > PATH_BYTES:
                batches.append([])
                size = 0
            batches[-1].append(path)
            size += length
        return b"".join(self._raw((*args, "--", *batch)) for batch in batches)

    def listing(self, folders: Sequence[str]) -> tuple[str, str]:
        """What `ls-files` says of `folders` ("" among them: the whole checkout): what git
        tracks there, with modes and object ids (`--stage`), and what it would add
        (untracked, not ignored), NUL-separated; asked in as many calls as the command
        line's bound needs (a pull request's `watch` names the folders)."""
        staged = ("ls-files", "-z", "--stage")
        others = ("ls-files", "-z", "--others", "--exclude-standard")
        if "" in folders:
            return self.run(*staged), self.run(*others)
        return os.fsdecode(self._over(staged, folders)), os.fsdecode(self._over(others, folders))

    def top(self) -> Path | None:
        """The top of the git working tree the folder is in, as git finds it from any folder
        inside it; None outside one (or in a `.git` folder, which has none). Only the line's
        end is cut: a folder's name may end in a space."""
        out = self.run("rev-parse", "--show-toplevel", check=False)
        return Path(out.removesuffix("\n")) if out else None

    def is_top(self) -> bool:
        """Whether the folder is the top of a git working tree (not a folder inside one,
        which git would answer for with the tree above): no git process where there is no
        `.git`."""
        if not (self.repo / ".git").exists():
            return False
        try:
            top = self.top()
        except GitError:
            return False
        return top is not None and top.resolve() == self.repo.resolve()

    def commit_of(self, ref: str) -> str | None:
        """The full SHA of a commit-ish; None when there is none (HEAD before a first commit).
        What a full object id names never changes, so git is asked of each once (a job
        asked of its two commits eight times)."""
        known = self._commits.get(ref)
        if known is not None:
            return known
        out = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        sha = out.strip() or None
        if sha is not None and _SHA.fullmatch(ref):
            self._commits[ref] = sha
        return sha

    def resolve(self, ref: str) -> str:
        """The full SHA of a commit-ish, or a GitError that says it is missing."""
        sha = self.commit_of(ref)
        if not sha:
            raise GitError(
                f"commit {ref!r} is not in the repository at {self.repo}. In a workflow, "
                "check out full history: `actions/checkout` with `fetch-depth: 0`."
            )
        return sha

    def merge_base(self, base: str, head: str) -> str:
        """The merge base of two commits; of two full commit ids asked once (what they name,
        and so their history, never changes)."""
        known = self._bases.get((base, head))
        if known is not None:
            return known
        out = self.run("merge-base", base, head, check=False).strip()
        if not out:
            raise GitError(
                f"no merge base between {base[:12]} and {head[:12]}: the history is "
                "incomplete. Check out full history with `fetch-depth: 0`."
            )
        if _SHA.fullmatch(base) and _SHA.fullmatch(head):
            self._bases[(base, head)] = out
        return out

    def on_first_parent_line(self, commit: str, tip: str) -> bool:
        """Whether `commit` is `tip` or reached from it by first parents alone: a commit a
        branch whose tip is `tip` has been at, where a commit a merge brought in (its second
        parent's line) is in its history without the branch ever being there. False where
        either is not a full commit id present here (a shallow checkout's history)."""
        if not (_SHA.fullmatch(commit) and _SHA.fullmatch(tip)):
            return False
        if self.run("merge-base", commit, tip, check=False).strip() != commit:
            return False  # not an ancestor, or not here at all
        # walked by first parents from the tip, stopping where `commit`'s parents' history
        # begins: `commit` is listed only when the walk goes through it
        line = self.run("rev-list", "--first-parent", tip, "--not", f"{commit}^@", check=False)
        return commit in line.split()

    def merged_tree(self, base: str, head: str) -> str | None:
        """The tree git's own merge makes of `head` onto `base`, in memory (no working tree
        or index is touched; its objects are written, as `commit_tree`'s are); None where they
        conflict. A GitError where git cannot merge them at all (either is not a commit here,
        or a git older than 2.38 has no `merge-tree --write-tree`): that is no conflict, and
        what it says is what to fix."""
        args = ("merge-tree", "--write-tree", "--no-messages", base, head)
        done = self._done(args)
        tree = os.fsdecode(done.stdout).partition("\n")[0].strip()
        if done.returncode == 0 and tree:
            return tree
        if done.returncode == 1 and tree:
            return None  # git's exit code for a merge that conflicts, its tree written
        detail = (done.stderr.strip() or done.stdout.strip()).decode(errors="backslashreplace")
        raise GitError(
            f"`git {' '.join(args)}` failed: {detail or f'exit code {done.returncode}'} "
            f"(`merge-tree --write-tree` needs git 2.38 or later; this is {self.version()})"
        )

    def version(self) -> str:
        """What `git --version` says, for a message about what this git cannot do."""
        done = self._done(("--version",))
        return os.fsdecode(done.stdout).strip() or "a git that does not say its version"

    def tree_of(self, commit: str) -> str | None:
        """The id of `commit`'s tree; None when it is not a commit here."""
        out = self.run("rev-parse", "--verify", "--quiet", f"{commit}^{{tree}}", check=False)
        return out.strip() or None

    def changed_files(self, base: str, head: str | None) -> list[FileChange]:
        """Files changed from `base` to `head` (to the working tree when head is None)."""
        revisions = [base] if head is None else [base, head]
        out = self.run("diff", "--name-status", "-z", "--find-renames", *revisions, "--")
        fields = iter(out.split("\0"))
        changes: list[FileChange] = []
        for status in fields:
            if not status:
                break
            kind, path = status[0], next(fields)
            old, path = (path, next(fields)) if kind in "RC" else (None, path)
            changes.append(FileChange(kind, path, old))
        return changes

    def tree(self, commit: str) -> dict[str, TreeEntry]:
        """Every file, link and submodule of `commit`, by path (kept: a commit never changes).
        It lists the whole repository: what reads a few paths asks `entry` or `under`."""
        if commit in self._trees:
            return self._trees[commit]
        entries = _listed(self._raw(("ls-tree", "-r", "-z", "--full-tree", commit)))
        if _SHA.match(commit):
            self._trees[commit] = entries
        return entries

    def under(self, commit: str, folders: Iterable[str]) -> dict[str, TreeEntry]:
        """The files, links and submodules of `commit` at or below `folders` ("" is the
        root: the whole tree), listed only there."""
        wanted = sorted({folder.strip("/") for folder in folders})
        if not wanted:
            return {}
        if "" in wanted:
            return self.tree(commit)
        if commit in self._trees:
            return {
                path: entry
                for path, entry in self._trees[commit].items()
                if any(path == f or path.startswith(f"{f}/") for f in wanted)
            }
        listed = _listed(self._over(("ls-tree", "-r", "-z", commit), wanted))
        self._known_at(commit).update(listed)  # what `entry` would ask, path by path
        return listed

    def first_under(self, commit: str, folder: str, most: int) -> dict[str, TreeEntry]:
        """The first `most` files, links and submodules of `commit` at or below `folder`
        ("" the root), in the order `ls-tree -r` lists them: read as git writes them, and
        git stopped there, so a folder of millions (a pull request's) is neither listed
        whole nor held. Kept nowhere: `under` lists a folder a plan reads."""
        folder = folder.strip("/")
        command = self._command(
            ("ls-tree", "-r", "-z", commit, *(("--", folder) if folder else ()))
        )
        records: list[bytes] = []
        pending = b""
        try:
            git = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise GitError(f"git could not be started: {exc.strerror or exc}") from None
        with git:
            assert git.stdout is not None and git.stderr is not None
            while len(records) < most:
                chunk = git.stdout.read(1 << 16)
                if not chunk:
                    break
                *done, pending = (pending + chunk).split(b"\0")
                records += done
            stopped = len(records) >= most
            if stopped:
                git.kill()
            failed = git.stderr.read() if not stopped else b""
            code = git.wait()
        if not stopped and code != 0:
            detail = failed.strip().decode(errors="backslashreplace")
            raise GitError(f"`git ls-tree` of {printable(folder or '.')} failed: {detail}")
        return _listed(b"\0".join(records[:most]))

    def entry(self, commit: str, path: str) -> TreeEntry | None:
        """What `path` is at `commit` (a folder too), links not followed; None when nothing.
        Asked of git path by path (`prefetch` asks for many at once), never by listing the
        whole tree."""
        path = path.strip("/")
        if not path:
            return TreeEntry(FOLDER_MODE, "")
        if not _in_tree_form(path):
            return None  # "..", "." or "//": no tree path is written so (`lookup` resolves them)
        known = self._known_at(commit)
        if path not in known:
            self._ask(commit, [path], known)
        return known.get(path)

    def prefetch(self, commit: str, paths: Iterable[str]) -> None:
        """Look up `paths` and the folders on their way in one `ls-tree`, for `entry`."""
        known = self._known_at(commit)
        stripped = {p.strip("/") for p in paths}
        # each path looked up in `known`: `stripped - known.keys()` copied every path known
        # at each call, and `lookup` prefetches the one path it resolves
        asked = sorted(p for p in stripped if p not in known and p and _in_tree_form(p))
        if asked:
            self._ask(commit, asked, known)

    def _known_at(self, commit: str) -> dict[str, TreeEntry | None]:
        """What was looked up of `commit` (kept for a commit's id only: a branch moves)."""
        return self._known.setdefault(commit, {}) if _SHA.match(commit) else {}

    def _ask(self, commit: str, paths: list[str], known: dict[str, TreeEntry | None]) -> None:
        """`ls-tree -t` of `paths`: each one's entry and the folders on its way. A path it
        does not list is not in the tree when the folder above it is; when a part of its way
        is missing from the answer, that part is a file, a link or nothing (`entry` asks for
        it alone), and nothing below it is in the tree."""
        found = _listed(self._over(("ls-tree", "-t", "-z", commit), paths))
        known.update(found)
        for path in paths:
            parts = path.split("/")
            missing = next(
                (d for d in range(1, len(parts) + 1) if "/".join(parts[:d]) not in found), 0
            )
            if missing:  # what is below the missing part; the path itself when it is that part
                for below in range(min(missing + 1, len(parts)), len(parts) + 1):
                    known["/".join(parts[:below])] = None

    def file_ids(self, commit: str, paths: Iterable[str]) -> dict[str, str]:
        """The blob id of each of `paths` at `commit` that is a regular file, a symbolic link
        followed while it stays in the commit's tree. Missing ones (and folders, submodules,
        links that lead out of the tree) are left out."""
        paths = list(paths)
        self.prefetch(commit, paths)
        return {p: e.oid for p in paths if (e := self.lookup(commit, p)[1]) and e.is_file}

    def read_files(self, commit: str, paths: Iterable[str]) -> dict[str, bytes]:
        """The contents of the files of `paths` at `commit` (`file_ids`). One `cat-file` for
        all, asked by object id."""
        ids = self.file_ids(commit, paths)
        blobs = self.blobs(set(ids.values()))
        return {path: blobs[oid] for path, oid in ids.items() if oid in blobs}

    def lookup(self, commit: str, path: str) -> tuple[str | None, TreeEntry | None]:
        """Where `path` leads at `commit`, links followed in the tree only, and what is there:
        (None, None) when a link leads out of the tree or they loop; (path, None) when the
        commit has nothing there."""
        real, _ = self._resolve(commit, path)
        return real, (self.entry(commit, real) if real is not None else None)

    def blob_sizes(self, oids: set[str]) -> dict[str, int]:
        """The sizes of blobs by object id, in one `git cat-file --batch-check` for those not
        asked before (asked before they are read: a load checks its bounds, then reads; a
        missing or non-blob id is left out)."""
        unknown = sorted(oids - self._sizes.keys())
        if unknown:
            asked = "".join(f"{o}\n" for o in unknown).encode()
            out = self._raw(("cat-file", "--batch-check"), asked).decode()
            answers = (line.split(" ") for line in out.splitlines())
            self._sizes.update({a[0]: int(a[2]) for a in answers if len(a) == 3 and a[1] == "blob"})
        return {oid: self._sizes[oid] for oid in oids if oid in self._sizes}

    def blob_start(self, oid: str, length: int) -> bytes:
        """The first `length` bytes of a blob, read without holding the rest."""
        command = self._command(("cat-file", "blob", oid))
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as git:
            assert git.stdout is not None
            start = git.stdout.read(length)
            git.kill()
        return start

    def blob(self, oid: str) -> bytes | None:
        """One blob's content by its object id (None: no such blob)."""
        return self.blobs({oid}).get(oid)

    def link_targets(self, oids: set[str]) -> dict[str, bytes | None]:
        """What each symbolic link's blob (by id) says it leads to, read in one `cat-file`
        for those not read before (None: no such blob)."""
        unknown = oids - self._targets.keys()
        if unknown:
            read = self.blobs(unknown)
            self._targets.update({oid: read.get(oid) for oid in unknown})
        return {oid: self._targets[oid] for oid in oids}

    def _resolve(self, commit: str, path: str) -> tuple[str | None, list[str]]:
        """The tree path `path` leads to at `commit`, links followed in the tree only (None
        when one leads out of it or they loop), and the links on the way. Kept for a
        commit's full id: every read of a file through links (its place, content, digest,
        mode) asks it again."""
        if not _SHA.match(commit):
            return self._follow(commit, path)
        key = (commit, path)
        if key not in self._resolved:
            self._resolved[key] = self._follow(commit, path)
        real, links = self._resolved[key]
        return real, list(links)

    def _follow(self, commit: str, path: str) -> tuple[str | None, list[str]]:
        self.prefetch(commit, [path])
        pending = [part for part in path.split("/") if part not in ("", ".")]
        resolved: list[str] = []
        links: list[str] = []
        while pending:
            part = pending.pop(0)
            if part == "..":
                if not resolved:
                    return None, links  # out of the repository
                resolved.pop()
                continue
            here = "/".join([*resolved, part])
            entry = self.entry(commit, here)
            if entry is not None and entry.is_link:
                links.append(here)
                target = self.link_targets({entry.oid})[entry.oid]
                if len(links) > MAX_LINK_HOPS or target is None or target.startswith(b"/"):
                    return None, links
                pending = [p for p in os.fsdecode(target).split("/") if p not in ("", ".")] + (
                    pending
                )
                continue
            resolved.append(part)
        return "/".join(resolved), links

    def blobs(self, oids: set[str]) -> dict[str, bytes]:
        """Blob contents by object id, in one `git cat-file --batch` for those not kept from
        an earlier read (ids are hex: one a line cannot be another's). A missing id is
        asked again each time: a fetch may bring it."""
        kept = {oid: self._kept[oid] for oid in oids if oid in self._kept}
        read = self._read_blobs(oids - kept.keys())
        for oid, content in read.items():
            if (
                len(content) <= KEPT_BLOB_BYTES
                and self._kept_bytes + len(content) <= KEPT_BLOBS_BYTES
            ):
                self._kept[oid] = content
                self._kept_bytes += len(content)
        return kept | read

    def _read_blobs(self, oids: set[str]) -> dict[str, bytes]:
        if not oids:
            return {}
        ordered = sorted(oids)
        out = self._raw(("cat-file", "--batch"), "".join(f"{o}\n" for o in ordered).encode())
        contents: dict[str, bytes] = {}
        offset = 0
        for oid in ordered:
            end = out.index(b"\n", offset)
            header = out[offset:end].split(b" ")
            offset = end + 1
            if len(header) != 3:
                continue  # `<oid> missing`
            size = int(header[2])
            if header[1] == b"blob":
                contents[oid] = out[offset : offset + size]
            offset += size + 1
        return contents

    def write_blob(self, content: bytes) -> str:
        """Store `content` as a blob (`hash-object -w --stdin`) and return its id: a commit
        made by evalward is built from objects, never from files written in a working tree."""
        return self._raw(("hash-object", "-w", "--stdin"), content).decode().strip()

    def write_blobs(self, contents: Sequence[bytes]) -> list[str]:
        """Store each of `contents` as a blob and return their ids in order, in one git call:
        a variant of tens of thousands of files is not as many git calls. From
        STREAMED_BLOBS on, one `fast-import` stream; fewer, `hash-object -w --stdin-paths`
        over files of a folder of its own (`--no-filters`: as they are)."""
        if len(contents) < 2:
            return [self.write_blob(content) for content in contents]
        with tempfile.TemporaryDirectory(prefix="evalward-blobs-") as folder:
            if len(contents) >= STREAMED_BLOBS:
                ids = self._streamed_blobs(contents, Path(folder) / "marks")
            elif "\n" in folder:  # the names are read a line each
                return [self.write_blob(content) for content in contents]
            else:
                names = []
                for number, content in enumerate(contents):
                    name = Path(folder) / str(number)
                    name.write_bytes(content)
                    names.append(f"{name}\n")
                args = ("hash-object", "-w", "--no-filters", "--stdin-paths")
                ids = self._raw(args, "".join(names).encode()).decode().split()
        if len(ids) != len(contents):
            raise GitError(f"git stored {len(ids)} blobs of {len(contents)}")
        return ids

    def _streamed_blobs(self, contents: Sequence[bytes], marks: Path) -> list[str]:
        """`contents` stored in one `git fast-import` stream, each a mark, their ids in
        order as read back from the marks it exports (`marks`); a mark it did not export is
        left out, which `write_blobs` counts."""
        stream = bytearray()
        for mark, content in enumerate(contents, 1):
            stream += b"blob\nmark :%d\ndata %d\n" % (mark, len(content))
            stream += content + b"\n"
        stream += b"done\n"
        self._raw(("fast-import", "--quiet", "--done", f"--export-marks={marks}"), bytes(stream))
        exported = marks.read_text(encoding="ascii").split()
        ids = dict(zip(exported[::2], exported[1::2], strict=True))
        return [oid for mark in range(1, len(contents) + 1) if (oid := ids.get(f":{mark}"))]

    def changed_blocks(self, pairs: Sequence[tuple[str, str]]) -> list[list[Block]]:
        """For each pair of blobs (their ids), the blocks of lines that differ from the first
        to the second as git's own diff shows them, and so GitHub's diff of a pull request,
        whose blocks a review comment's lines must lie in: `(i1, i2, j1, j2)`, 0-based and
        half-open, the old lines `i1:i2` become the new `j1:j2`. Git's defaults (Myers, the
        indent heuristic) whatever this machine's configuration says, on the texts as they
        are. One diff of two trees for all the pairs, each pair a file named by its number:
        a pull request chooses how many files an agent names."""
        if not pairs:
            return []
        old, new = (
            self.make_tree(
                {str(n): TreeEntry("100644", pair[side]) for n, pair in enumerate(pairs)}
            )
            for side in (0, 1)
        )
        options = ("-r", "-p", "--no-renames", "--no-ext-diff", "--no-textconv", "--text")
        tuning = ("--unified=0", "--inter-hunk-context=0", "--diff-algorithm=myers")
        out = self._raw(("diff-tree", *options, *tuning, "--indent-heuristic", old, new))
        blocks: list[list[Block]] = [[] for _ in pairs]
        current: list[Block] = []
        for line in out.split(b"\n"):
            if line.startswith(b"diff --git a/"):
                current = blocks[int(line.split(b" ")[2][2:])]
            elif found := _HUNK.match(line):
                a, b, c, d = (int(n) if n is not None else 1 for n in found.groups())
                i1, j1 = (a if b == 0 else a - 1), (c if d == 0 else c - 1)
                current.append((i1, i1 + b, j1, j1 + d))
        return blocks

    def make_tree(self, entries: Mapping[str, TreeEntry]) -> str:
        """Store one folder's tree (`mktree -z`), each name (no `/`) with its mode and id,
        and return its id."""
        kinds = {FOLDER_MODE: "tree", SUBMODULE_MODE: "commit"}
        listed = b"".join(
            f"{entry.mode} {kinds.get(entry.mode, 'blob')} {entry.oid}\t".encode()
            + os.fsencode(name)
            + b"\0"
            for name, entry in entries.items()
        )
        return self._raw(("mktree", "-z"), listed).decode().strip()

    def tree_with(
        self,
        commit: str,
        files: Mapping[str, bytes | None],
        modes: Mapping[str, str] | None = None,
    ) -> str:
        """The id of `commit`'s tree with `files` (tree paths) written, None removing one; a
        folder left empty goes with its last file. Only the folders on the way to `files`
        are listed and stored again: the cost follows the change, not the repository. A
        file gets the mode `modes` gives it (100644 or 100755), else keeps the mode it had
        (a new one is 100644)."""
        written = [path for path, content in files.items() if content is not None]
        ids = dict(zip(written, self.write_blobs([files[p] or b"" for p in written]), strict=True))
        blobs = {
            path.strip("/"): TreeEntry((modes or {}).get(path, ""), ids[path])
            if path in ids
            else None
            for path in files
        }
        return self._folder_with(commit, "", blobs) or self.make_tree({})

    def _folder_with(
        self, commit: str, folder: str, blobs: Mapping[str, TreeEntry | None]
    ) -> str | None:
        """The id of `folder` at `commit` with `blobs` (paths below it) written; None when
        nothing is left in it."""
        entries = dict(self._folder_at(commit, folder))
        below: dict[str, dict[str, TreeEntry | None]] = {}
        for path, blob in blobs.items():
            name, slash, rest = path.partition("/")
            if slash:
                below.setdefault(name, {})[rest] = blob
            elif blob is None:
                entries.pop(name, None)
            else:
                kept = entries.get(name)
                mode = kept.mode if kept is not None and kept.is_file else "100644"
                entries[name] = TreeEntry(blob.mode if blob.is_file else mode, blob.oid)
        for name, inner in below.items():
            tree = self._folder_with(commit, posixpath.join(folder, name), inner)
            if tree is None:
                entries.pop(name, None)
            else:
                entries[name] = TreeEntry(FOLDER_MODE, tree)
        return self.make_tree(entries) if entries else None

    def _folder_at(self, commit: str, folder: str) -> dict[str, TreeEntry]:
        """The entries of `folder` at `commit` by name; at a full commit id listed once."""
        known = self._folders.get((commit, folder))
        if known is not None:
            return known
        args = ("ls-tree", "-z", commit, *(("--", f"{folder}/") if folder else ()))
        entries = {posixpath.basename(p): e for p, e in _listed(self._raw(args)).items()}
        if _SHA.fullmatch(commit):
            self._folders[(commit, folder)] = entries
        return entries

    def commit_tree(self, tree: str, parent: str, message: str) -> str:
        """Store a commit of `tree` with `parent` as its parent (`commit-tree`) and return its
        id. Its author, committer and date are fixed and it is never signed, so the same tree
        on the same parent is the same commit, whoever makes it and whenever."""
        who = {"NAME": "evalward", "EMAIL": "evalward@localhost", "DATE": "@0 +0000"}
        env = {
            **os.environ,
            **{f"GIT_{role}_{k}": v for role in ("AUTHOR", "COMMITTER") for k, v in who.items()},
        }
        args = ("commit-tree", "--no-gpg-sign", tree, "-p", parent, "-m", message)
        done = self._done(args, env=env)
        if done.returncode != 0:
            detail = done.stderr.strip().decode(errors="backslashreplace")
            raise GitError(f"cannot make a commit of tree {tree[:12]}: {detail}")
        return done.stdout.decode().strip()

    def working_tree_commit(self, parent: str) -> str:
        """A commit of the working tree's tracked files as they are now, staged or not,
        `parent` its parent (`parent` itself where they are as it has them): written through
        a copy of the index, so the index, the working tree and every ref stay as they were.
        A file git does not track is not in it."""
        index = Path(self.run("rev-parse", "--git-path", "index").strip())
        index = index if index.is_absolute() else self.repo / index
        with tempfile.TemporaryDirectory(prefix="evalward-index-") as folder:
            copy = Path(folder) / "index"
            if index.is_file():
                shutil.copyfile(index, copy)
            env = {**os.environ, "GIT_INDEX_FILE": str(copy)}
            self._raw(("add", "--update"), env=env)
            tree = self._raw(("write-tree",), env=env).decode().strip()
        if tree == self.run("rev-parse", f"{parent}^{{tree}}").strip():
            return parent
        return self.commit_tree(tree, parent, "the working tree")

    def untracked(self) -> list[str]:
        """Files of the working tree git does not track and does not ignore, a folder none
        of whose files it tracks named once (`node_modules/`): asked as every local run with
        a base begins, so its cost follows the folders, not their files."""
        out = self.run(
            "ls-files",
            "-z",
            "--others",
            "--exclude-standard",
            "--full-name",
            "--directory",
            "--no-empty-directory",
        )
        return [name for name in out.split("\0") if name]

    def credential_settings(self) -> list[str]:
        """The names (never the values) of settings that hand git an HTTP credential, as
        actions/checkout's `persist-credentials` leaves behind."""
        out = self.run(
            "config", "--name-only", "--get-regexp", r"^http\..*extraheader$", check=False
        )
        return [name for name in out.splitlines() if name]

    def credential_files(self) -> list[Path]:
        """The files git's configuration reads those settings from: the workspace's
        `.git/config`, or, from actions/checkout v6 on, a file of the runner's temp folder
        that configuration includes (`includeIf.gitdir:….path`)."""
        out = self._raw(
            (
                "config",
                "--show-origin",
                "--name-only",
                "-z",
                "--get-regexp",
                r"^http\..*extraheader$",
            ),
            check=False,
        )
        fields = out.split(b"\0")
        origins = {os.fsdecode(o) for o in fields[0::2] if o.startswith(b"file:")}
        return sorted(self.repo / origin.removeprefix("file:") for origin in origins)

    def tracked(self, path: str) -> list[str]:
        """Files at or below `path` (relative to the repository) that the checkout tracks."""
        out = self.run("ls-files", "-z", "--", path)
        return [name for name in out.split("\0") if name]

    def committable(self, paths: Iterable[str]) -> set[str]:
        """Which of `paths` (files of the working tree) git tracks or would commit: tracked,
        or untracked and not ignored (`.gitignore`, `.git/info/exclude`, the user's
        excludes)."""
        asked = [p for p in paths if _in_tree_form(p)]
        if not asked:
            return set()
        args = ("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        return set(os.fsdecode(self._over(args, asked)).split("\0")) & set(asked)

    def index_names(self) -> frozenset[bytes]:
        """Every path the index records, as bytes (`ls-files -z --cached`): one process for
        what asking path by path would pay for each path (`files/committable.py`)."""
        return frozenset(
            name for name in self._raw(("ls-files", "-z", "--cached")).split(b"\0") if name
        )

    def ignored(self) -> set[str]:
        """The untracked paths of the working tree git ignores (an ignored folder once, as
        itself): what another program wrote there, never a file of the repository."""
        args = ("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
        return {path.rstrip("/") for path in self.run(*args).split("\0") if path}

    def index(self, folder: str = "") -> Index:
        """What the index records at or below `folder` ("": everywhere): each path with its
        mode, as `ls-files --stage` lists it."""
        out = self.run("ls-files", "--stage", "-z", *(("--", folder) if folder else ()))
        entries = [entry.split("\t", 1) for entry in out.split("\0") if "\t" in entry]
        return Index([(info.split(" ", 1)[0], path) for info, path in entries])

    def links_among(self, commit: str, paths: Iterable[str]) -> set[str]:
        """Which of `paths` are symbolic links at `commit` (mode 120000)."""
        paths = list(paths)
        self.prefetch(commit, paths)
        return {path for path in paths if (entry := self.entry(commit, path)) and entry.is_link}

    def files_in(self, commit: str, folder: str) -> list[str]:
        """The files and links directly in `folder` (repository path, "" for the root) at
        `commit`."""
        folder = folder.strip("/")
        args = ("ls-tree", "-z", commit, *(("--", f"{folder}/") if folder else ()))
        listed = _listed(self._raw(args))
        return sorted(
            p for p, e in listed.items() if not e.is_folder and posixpath.dirname(p) == folder
        )

    def dirty_paths(
        self,
        paths: Iterable[str] | None = None,
        tracked: Iterable[str] = (),
        *,
        unchecked: bool = False,
    ) -> set[str]:
        """Paths the working tree has changed, added or left untracked since HEAD: everywhere
        (None: git stats every tracked file and walks every folder), or at `paths` (files or
        folders, each a literal pathspec) and, among tracked files, where a glob of `tracked`
        (`**/*.yaml`) matches: then the cost follows those paths, not the repository. With
        `unchecked`, also the tracked files there git does not compare with the working tree
        (marked assume-unchanged, or skip-worktree as a sparse checkout marks what it leaves
        out): what the working tree holds there is not known to be HEAD's."""
        specs = [f":(literal){path}" for path in sorted(paths or ()) if _in_tree_form(path)]
        pathspecs = [*specs, *(f":(glob){glob}" for glob in tracked)]
        if paths is not None and not pathspecs:
            return set()  # no pathspec would be every path
        # Each pathspec says how it matches (`--literal-pathspecs` would take it as a name).
        status = ("--no-literal-pathspecs", "status", "--porcelain", "-z")
        if paths is None:
            out = self.run(*status, "--untracked-files=all")
        else:
            out = os.fsdecode(self._over((*status, "--untracked-files=no"), pathspecs))
        found: set[str] = set()
        entries = iter(out.split("\0"))
        for entry in entries:  # a rename or a copy names both its paths
            if len(entry) >= 4:
                found |= {entry[3:], next(entries, "") if entry[0] in "RC" else ""}
        if specs:
            others = ("--no-literal-pathspecs", "ls-files", "-z", "--others", "--exclude-standard")
            found.update(os.fsdecode(self._over((*others, "--full-name"), specs)).split("\0"))
        if unchecked:
            found |= self._unchecked(pathspecs if paths is not None else None)
        return found - {""}

    def _unchecked(self, pathspecs: list[str] | None) -> set[str]:
        """The tracked files at `pathspecs` (None: everywhere) whose entry tells git not to
        look at the working tree: `ls-files -v` tags one assume-unchanged in lower case, one
        skip-worktree `S`."""
        listing = ("--no-literal-pathspecs", "ls-files", "-z", "-v", "--full-name")
        out = os.fsdecode(
            self._raw(listing) if pathspecs is None else self._over(listing, pathspecs)
        )
        return {
            entry[2:]
            for entry in out.split("\0")
            if len(entry) > 2 and (entry[0].islower() or entry[0] == "S")
        }

    @contextmanager
    def worktree(self, commit: str, paths: Iterable[str] | None = None) -> Iterator[Path]:
        """A detached worktree at `commit`, always removed afterwards: the whole tree, or
        with `paths` only what reading them needs (`needed_for`), so that its cost follows
        what is read, not the size of the repository."""
        parent = Path(tempfile.mkdtemp(prefix="evalward-base-"))
        path = parent / "tree"
        partial = () if paths is None else ("--no-checkout",)
        self.run("worktree", "add", "--detach", "--force", *partial, str(path), commit)
        try:
            if paths is not None:
                self._check_out(path, commit, self.needed_for(commit, paths))
            yield path
        finally:
            removed = self._done(("worktree", "remove", "--force", str(path))).returncode == 0
            shutil.rmtree(parent, ignore_errors=True)
            if not removed:  # git's entry of it outlives the folder: prune drops it
                self.run("worktree", "prune", check=False)

    def write_files(self, commit: str, paths: Iterable[str], target: Path) -> None:
        """Write the files and links `paths` of `commit` (tree paths, no folders) into the
        folder `target`, from git's objects, with the modes git records and nothing wider
        (0644, 0755: the umask is set for it), under the commit's `.gitattributes`. The
        repository's index and working tree are not touched (a throwaway index)."""
        listed = b"\0".join(os.fsencode(p) for p in paths)
        if not listed:
            return
        with tempfile.TemporaryDirectory(prefix="evalward-index-") as scratch:
            env = {**os.environ, "GIT_INDEX_FILE": str(Path(scratch) / "index")}
            args = (f"--work-tree={target}", *_checkout_from_stdin(commit))
            done = self._done(args, listed, env, umask=0o022)
            if done.returncode != 0:
                detail = done.stderr.strip().decode(errors="backslashreplace")
                raise GitError(f"cannot write the files of {commit[:12]}: {detail}")

    def needed_for(self, commit: str, paths: Iterable[str]) -> list[str]:
        """The tree paths to write so that reading `paths` at `commit` works as in a whole
        checkout: each file, link or folder named; for a path through links, each link on
        the way and what it leads to (inside the tree); the `.gitattributes` of the folders
        above them, which decide how git writes them. Paths the commit lacks are left out:
        reading them fails as it would in a whole checkout. Each path is looked up alone
        (`entry`), so the cost follows the paths, not the size of the tree."""
        cleaned = [posixpath.normpath(asked.lstrip("/")) for asked in paths]
        # the folders on each path's way too, which following its links reads: a listing
        # (`under`) knows the files, not the folders above them, and one folder each was
        # asked alone
        self.prefetch(commit, [*cleaned, *(f for c in cleaned for f in folders_of(c))])
        wanted: set[str] = set()
        for clean in cleaned:
            if clean != "." and self.entry(commit, clean) is not None:
                wanted.add(clean)
            real, links = self._resolve(commit, clean)
            wanted.update(links)
            if real and self.entry(commit, real) is not None:
                wanted.add(real)
        attributes = set()
        for path in wanted:
            while path:
                path = posixpath.dirname(path)
                attributes.add(posixpath.join(path, ".gitattributes"))
        self.prefetch(commit, attributes)
        wanted.update(a for a in attributes if self.entry(commit, a) is not None)
        return sorted(wanted)

    def _check_out(self, worktree: Path, commit: str, paths: list[str]) -> None:
        """Write `paths` of `commit` into a worktree made without a checkout: the
        `.gitattributes` first, so that git writes the rest by them."""
        attributes = [p for p in paths if posixpath.basename(p) == ".gitattributes"]
        rest = [p for p in paths if p not in attributes]
        into = Git(worktree, self._git)
        for batch in (attributes, rest):
            if batch:
                listed = b"\0".join(os.fsencode(p) for p in batch)
                into._raw(_checkout_from_stdin(commit), listed)


def folders_of(path: str) -> set[str]:
    """The folders the repository path `path` is in (`a/b/c`: `a` and `a/b`; `a/b/`: those
    and `a/b` itself)."""
    parts = path.split("/")
    return {"/".join(parts[:index]) for index in range(1, len(parts))}


def _listed(answer: bytes) -> dict[str, TreeEntry]:
    """`git ls-tree -z`'s answer, by path."""
    entries: dict[str, TreeEntry] = {}
    for record in answer.split(b"\0"):
        meta, tab, name = record.partition(b"\t")
        if not tab:
            continue
        mode, _, oid = meta.decode("ascii").split(" ")
        entries[os.fsdecode(name)] = TreeEntry(mode, oid)
    return entries


def _in_tree_form(path: str) -> bool:
    """`path` is written as git's trees name a path: no empty, `.` or `..` part, no NUL (no
    tree holds one, and no command line can). Any other path is never handed to git, which
    reads it from its working directory (and refuses one that leads out of the repository)."""
    return "\0" not in path and all(part not in ("", ".", "..") for part in path.split("/"))


def _checkout_from_stdin(commit: str) -> tuple[str, ...]:
    """`git checkout` of `commit`'s paths that standard input lists, NUL-separated: no path
    is ever a command-line argument or a line."""
    return ("checkout", "-q", commit, "--pathspec-from-file=-", "--pathspec-file-nul")
