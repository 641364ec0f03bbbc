"""The one door to a file a definition names: a system prompt, an AgentV input or dataset, a
seed, a scorer, a program, an environment's requirements.

A pull request writes its definitions, so every path in them is hostile, and the workspace
holds more than the pull request: files other workflow steps wrote there, private and
git-ignored (`google-github-actions/auth` leaves `gha-creds-*.json`, 0600). evalward runs as
root, so a path check alone ("inside the repository") would let a definition hand such a
file to the model or to the agent. So a side that is a commit (`RepoFiles.at_commit`: the
action's head and base, `evalward run --head`) is read from git's objects only: a path must
name a file of that commit's tree (links followed inside the tree), never a submodule, an
untracked or ignored file or a folder, and the workspace's copy is never opened.

The working tree (`evalward run` without a head: the user runs their own uncommitted code,
as themselves) keeps the same rules as far as they apply: a file git would commit (tracked,
or untracked and not ignored) is read from disk; an ignored one is refused. A folder that is
no git repository at all (a test's tree) has only the path rule.

Every refusal is `NotCommitted`, whose `reason` ends a sentence about the path; callers
report it at the YAML line that names the path.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import posixpath
import shutil
import stat
import tempfile
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalward.errors import (
    GitError,
    NotCommitted,
    OutsideRepository,
    TreeError,
    UnsafeFile,
    printable,
)
from evalward.files.committable import WorkingTreeAnswers
from evalward.files.inside import mode_of, reference_candidates, repo_path
from evalward.files.safe_files import blob_id, blob_id_of, read_regular
from evalward.files.trees import TreeBounds, copy_tree, remove_tree, walk
from evalward.git import LINK_MODE, Git, TreeEntry, folders_of


@dataclass(frozen=True)
class AgentReference:
    """Where an Agent's file reference leads (a repository path). `legacy` is set (to the
    path written the new way) when only the old rule found it; `shadowed` names the old
    rule's file that the root path now wins over."""

    path: str
    legacy: str = ""
    shadowed: str = ""


@dataclass(frozen=True)
class CommittedFile:
    """A file of a commit as `RepoFiles.read_committed` found it: its size, and its content
    (None when it was larger than asked: `RepoFiles.start` reads its beginning)."""

    size: int
    content: bytes | None


WHOLE_BLOBS = 16 * 1024 * 1024
"""What `starts` reads of a commit's files whole, together, in one process at most."""
MAX_SYSTEM_BYTES = 4 * 1024 * 1024
"""The largest `systemFile` read (a file of the repository, so of the pull request)."""


DIGEST_BOUNDS = TreeBounds(depth=128, entries=100_000, seconds=120.0)
"""A working tree's folder is hashed (for a cache key) within these."""
_IGNORED = (
    "is ignored by git (.gitignore, .git/info/exclude): evalward reads only files git would "
    "commit; commit it, or name a file of the repository"
)
_LEADS_NOWHERE = (
    "is a symbolic link that leads to nothing (its target is missing, or links that loop); "
    "name the file itself"
)


def _is_link(path: Path) -> bool:
    """Whether `path` is a symbolic link; False for a name the system cannot look up (too
    long, a NUL), which `mode_of` reads as missing."""
    try:
        return path.is_symlink()
    except (OSError, ValueError):
        return False


def _submodule_above(git: Git, commit: str, path: str) -> str | None:
    """The submodule of `commit` that `path` would be inside (None: none): its files are
    another repository's, which is why the commit has nothing at `path`."""
    parts = path.split("/")
    for end in range(1, len(parts)):
        entry = git.entry(commit, "/".join(parts[:end]))
        if entry is None:
            return None
        if entry.is_submodule:
            return "/".join(parts[:end])
    return None


def _in_submodule(submodule: str) -> str:
    return (
        f"is inside the submodule '{printable(submodule)}', another repository whose files no "
        "commit of this one holds: evalward reads only files git would commit; name a file "
        "of this repository"
    )


GITS_OWN = ".git"
"""The folder (or, in a submodule's working copy, the file) git keeps a repository in: its
config holds the checkout's credentials (`actions/checkout` persists the job's token there).
No commit's tree holds an entry of that name, so no working tree's file is read from one."""
_GITS_OWN = (
    "is in git's own folder (.git), which no commit holds: evalward reads only files git "
    "would commit; name a file of the repository"
)


EVALWARDS_OWN = ".evalward"
"""evalward's own folder at the working tree's root (its cache, its outputs), written as a run
goes: never copied or hashed as the tree's, as a side's working copy never holds it."""


def _in_gits_own(path: str) -> bool:
    """Whether a repository path is in a `.git` (this repository's, or a nested one's)."""
    return GITS_OWN in path.split("/")


@dataclass(frozen=True)
class RepoFiles:
    """The files of one side: `commit` set, that commit's tree; else the working tree at
    `root` (`git` None: a folder outside any repository)."""

    root: Path
    git: Git | None
    commit: str | None = None
    _answers: WorkingTreeAnswers | None = field(
        default=None, init=False, repr=False, compare=False, hash=False
    )
    """On the working tree, what git would commit of it, asked once per path."""
    _on_disk_found: dict[str, tuple[bool, str]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    """On the working tree, what `_on_disk` found for each path as written: whether it is a
    file this side may read, and its repository path or why not. A plan asks it of each file
    an Agent names several times (prefetched, checked, measured, read)."""

    def __post_init__(self) -> None:
        if self.commit is None and self.git is not None:
            object.__setattr__(self, "_answers", WorkingTreeAnswers(self.git))

    @classmethod
    def at_commit(cls, git: Git, commit: str, root: Path | None = None) -> RepoFiles:
        return cls(root if root is not None else git.repo, git, commit)

    @classmethod
    def working_tree(cls, root: Path) -> RepoFiles:
        """The files under `root` as they are on disk, with git's rules when `root` is the
        top of a repository."""
        git = Git(root)
        return cls(root, git if git.is_top() else None)

    @property
    def committed(self) -> bool:
        return self.commit is not None

    def describe(self) -> str:
        """The side in words, for messages."""
        if self.commit is not None:
            return f"commit {self.commit[:12]}"
        return "the working tree"

    def find(self, path: str) -> str:
        """The repository path of the regular file `path` names (from the root; links
        followed, inside the repository only). NotCommitted says why there is none."""
        clean = path.lstrip("/")
        if self.commit is not None and self.git is not None:
            return self._in_commit(self.git, self.commit, clean)
        relative = self._on_disk(path)
        if self._answers is not None and relative not in self._answers.committable([relative]):
            submodule = self._answers.submodule_of(relative)
            if submodule is not None:
                raise NotCommitted(path, _in_submodule(submodule))
            raise NotCommitted(path, _IGNORED)
        return relative

    def prefetch(self, paths: list[str]) -> None:
        """Ask git about the files `paths` name at once, for the `find`s that follow: on a
        commit, their tree entries; on the working tree, whether git would commit each."""
        if self.commit is not None and self.git is not None:
            self.git.prefetch(self.commit, paths)
            return
        if self._answers is None:
            return
        found: list[str] = []
        for path in paths:
            try:
                found.append(self._on_disk(path))
            except NotCommitted:
                continue  # `find` says why
        self._answers.committable(found)

    def _on_disk(self, path: str) -> str:
        """The repository path of the regular file `path` names in the working tree, looked
        up once per path: its answer (or refusal) holds for the run, as `WorkingTreeAnswers`'
        do. Only this door (one working tree's) holds it; a commit's is never asked here."""
        found = self._on_disk_found.get(path)
        if found is None:
            try:
                found = (True, self._look_on_disk(path))
            except NotCommitted as refused:
                found = (False, refused.reason)
            self._on_disk_found[path] = found
        readable, answer = found
        if not readable:
            raise NotCommitted(path, answer)
        return answer

    def _look_on_disk(self, path: str) -> str:
        real_root = self._real_root
        try:
            real = repo_path(real_root, path.lstrip("/"), resolved=True)
        except OutsideRepository:
            raise NotCommitted(path, "leads out of the repository") from None
        mode = mode_of(real)
        if mode is not None and stat.S_ISDIR(mode):
            raise NotCommitted(path, "is a folder, not a file")
        if mode is None and _is_link(self.root / path.lstrip("/")):
            raise NotCommitted(path, _LEADS_NOWHERE)
        if mode is None or not stat.S_ISREG(mode):
            raise NotCommitted(path, "does not exist (paths are from the repository root)")
        relative = real.relative_to(real_root).as_posix()
        if _in_gits_own(relative):
            raise NotCommitted(path, _GITS_OWN)
        return relative

    @functools.cached_property
    def _real_root(self) -> Path:
        """The working tree's root, links followed: resolved once, not at each path."""
        return self.root.resolve()

    def place(self, path: str) -> tuple[str, bool]:
        """The repository path of the file or folder `path` names (a seed may be either),
        and whether it is a folder; NotCommitted as `find` says it."""
        clean = path.lstrip("/")
        if self.commit is not None and self.git is not None:
            in_tree = self._in_commit(self.git, self.commit, clean, folders=True)
            entry = self.git.entry(self.commit, in_tree)
            return in_tree, entry is not None and entry.is_folder
        try:
            real = repo_path(self.root, clean)
        except OutsideRepository:
            raise NotCommitted(path, "leads out of the repository") from None
        mode = mode_of(real)
        if mode is None or not stat.S_ISDIR(mode):
            return self.find(path), False
        relative = real.relative_to(self._real_root).as_posix()
        if _in_gits_own(relative):
            raise NotCommitted(path, _GITS_OWN)
        ignored = self._answers.ignored() if self._answers is not None and relative != "." else ()
        if _under(relative, ignored):
            raise NotCommitted(path, _IGNORED)
        return ("" if relative == "." else relative), True

    def copy_out(self, path: str, target: Path, bounds: TreeBounds) -> None:
        """Write what `path` names into `target`, which this makes: a folder's files (as git
        writes them for a commit; on the working tree, without what git ignores), or a file
        (as `target/<its name>`). Nothing else of the side is written, so a file another
        workflow step left there is never in the copy. NotCommitted when `path` names
        nothing this side may read; TreeError past `bounds`; OSError when the machine refuses."""
        real, folder = self.place(path)
        if self.commit is not None and self.git is not None:
            self._write_from_commit(self.git, self.commit, real, folder, target, bounds)
            return
        source = self._real_root / real
        if not folder:
            target.mkdir(mode=0o755)
            shutil.copyfile(source, target / source.name)
            return
        copy_tree(source, target, bounds, leave_out=self._ignored_in(real))

    def _ignored_in(self, real: str) -> Callable[[str, int], bool]:
        """What a copy (or digest) of the working tree's folder `real` leaves out, as a
        walk's `leave_out` asks it: what git ignores there, and git's own folders (`GITS_OWN`),
        which git neither lists as ignored nor commits."""
        ignored = self._answers.ignored() if self._answers is not None else set()
        prefix = f"{real}/" if real else ""
        return lambda inner, _mode: (
            _in_gits_own(inner)
            or f"{prefix}{inner}" in ignored
            or f"{prefix}{inner}".split("/")[0] == EVALWARDS_OWN
        )

    def _write_from_commit(
        self, git: Git, commit: str, real: str, folder: bool, target: Path, bounds: TreeBounds
    ) -> None:
        listed = git.under(commit, [real]) if folder else {real: None}
        wanted = [p for p, e in listed.items() if e is None or not e.is_submodule]
        if len(wanted) > bounds.entries:
            raise TreeError(f"{real!r} holds more than {bounds.entries:,} files")
        scratch = Path(tempfile.mkdtemp(prefix=".evalward-seed-", dir=target.parent))
        try:
            git.write_files(commit, wanted, scratch)
            if not folder:
                target.mkdir(mode=0o755)
                (scratch / real).rename(target / posixpath.basename(real))
            elif (scratch / real).is_dir():
                (scratch / real).rename(target)
            else:
                target.mkdir(mode=0o755)
        finally:
            remove_tree(scratch)

    def digest(self, path: str) -> str:
        """What a cache key keeps of the file or folder `path` names: each file's mode, git's
        object id and path, as a commit's tree records them. The working tree's files are
        hashed as git would store them (`git hash-object`), what git ignores left out as
        `copy_out` leaves it out, so a file gets the same key on a commit and on a working
        tree that holds the same content (a push's run, then a pull request's base). A file
        another program wrote or changed there is in the key as it is: it names no commit's
        result. "missing" when this side may not read it, whatever the reason: the words
        name the commit, and a copy of either side holds nothing there (an interpreter named
        by its absolute path, `/usr/bin/python3`, is missing alike on a working tree and on
        each commit); OSError, TreeError past DIGEST_BOUNDS when the working tree cannot be
        read."""
        try:
            listed = self.entries(path)
        except NotCommitted:
            return "missing"
        return entries_digest(listed)

    def entries(self, path: str) -> dict[str, TreeEntry]:
        """The files and links at or below `path` as a commit's tree lists them, by their
        repository path (links on the way followed): what `digest` hashes. NotCommitted when
        this side may not read it; OSError, TreeError past DIGEST_BOUNDS on the working tree."""
        real, folder = self.place(path)
        if self.commit is not None and self.git is not None:
            if folder:
                return dict(self.git.under(self.commit, [real]))
            _, entry = self.git.lookup(self.commit, real)
            return {real: entry} if entry is not None else {}
        return self._entries_on_disk(path, real, folder)

    def _entries_on_disk(self, path: str, real: str, folder: bool) -> dict[str, TreeEntry]:
        """The working tree's files at `real` as a commit's tree would list them: regular
        files and links (what `copy_out` copies), with git's modes and object ids."""
        form = self.git.object_format() if self.git is not None else "sha1"
        source = self._real_root / real
        if not folder:
            mode = source.stat().st_mode
            return {real: TreeEntry(_file_mode(mode), blob_id(source, form))}
        prefix = f"{real}/" if real else ""
        entries: dict[str, TreeEntry] = {}
        for item in walk(source, DIGEST_BOUNDS, f"the folder {path!r}", self._ignored_in(real)):
            if stat.S_ISREG(item.mode):
                oid = blob_id(item.name, form, dir_fd=item.folder_fd)
                entries[prefix + item.path] = TreeEntry(_file_mode(item.mode), oid)
            elif stat.S_ISLNK(item.mode):
                target = os.readlink(os.fsencode(item.name), dir_fd=item.folder_fd)
                entries[prefix + item.path] = TreeEntry(LINK_MODE, blob_id_of(target, form))
        return entries

    def _in_commit(self, git: Git, commit: str, path: str, *, folders: bool = False) -> str:
        try:
            real, entry = git.lookup(commit, path)
        except GitError as exc:
            raise NotCommitted(path, f"cannot be read from {self.describe()}: {exc}") from None
        if real is None:
            raise NotCommitted(
                path, "leads out of the repository (a symbolic link, or links that loop)"
            )
        if entry is None:
            submodule = _submodule_above(git, commit, real)
            if submodule is not None:
                raise NotCommitted(path, _in_submodule(submodule))
            raise NotCommitted(
                path,
                f"is not a file of {self.describe()} (untracked, git-ignored or written "
                "by another workflow step: evalward reads only committed files); commit "
                "it, or name a committed file",
            )
        if entry.is_submodule:
            raise NotCommitted(path, "is a submodule (another repository), not a file")
        if entry.is_folder and folders:
            return real
        if not entry.is_file:
            raise NotCommitted(path, "is a folder, not a file")
        return real

    def agent_reference(self, reference: str, defined_in: str) -> AgentReference:
        """The file an Agent's `reference` names, by files/inside.py's rule: from the
        root, else (deprecated) relative to `defined_in`. NotCommitted when neither is a file
        this side may read (the reason is the root path's, unless nothing is there and the
        old rule's path is something it may not read)."""
        first, *older = reference_candidates(defined_in, reference)
        legacy = older[0] if older else ""
        try:
            found = self.find(first)
        except NotCommitted as exc:
            if not legacy:
                raise NotCommitted(reference, exc.reason) from None
            try:
                return AgentReference(self.find(legacy), legacy=legacy)
            except NotCommitted as old:
                # nothing at the root path: what the old rule's path is (a link that leads
                # out, an ignored file) says more than "does not exist"
                missing = exc.reason.startswith("does not exist")
                if missing and not old.reason.startswith("does not exist"):
                    raise NotCommitted(reference, old.reason) from None
            raise NotCommitted(reference, exc.reason) from None
        shadowed = legacy if legacy and self.is_file(legacy) and self.find(legacy) != found else ""
        return AgentReference(found, shadowed=shadowed)

    def definitions(self, paths: list[str]) -> set[str]:
        """Which of the repository paths `paths` (resource YAML files found on disk) this
        side holds: on a commit, its files (a file another step wrote is not a resource of
        it); on the working tree, what git would commit (an ignored one is not loaded)."""
        if self.commit is not None and self.git is not None:
            self.git.prefetch(self.commit, paths)
            return {p for p in paths if (e := self.git.entry(self.commit, p)) and not e.is_folder}
        if self._answers is not None:
            return self._answers.committable(paths)
        return set(paths)

    def sizes(self, paths: list[str]) -> dict[str, int]:
        """The size in bytes of each of `paths`, asked before any is read: on a commit side,
        its blob's in the commit (links followed in its tree; in two git calls for all), on
        the working tree, its size on disk. A path that names no file is left out."""
        if self.commit is None or self.git is None:
            found: dict[str, int] = {}
            for path in paths:
                try:
                    found[path] = (self.root / path).stat().st_size
                except OSError:
                    continue  # the load says why it cannot read it
            return found
        ids = self.git.file_ids(self.commit, paths)
        sizes = self.git.blob_sizes(set(ids.values()))
        return {path: sizes[oid] for path, oid in ids.items() if oid in sizes}

    def read_committed(self, paths: list[str], limit: int) -> dict[str, CommittedFile]:
        """On a commit side, what each of `paths` is in the commit, in two git calls for all:
        its size, and its content when at most `limit` bytes. A path that names no file of
        the commit (links followed in its tree) is left out; empty on the working tree."""
        if self.commit is None or self.git is None:
            return {}
        git = self.git
        ids = git.file_ids(self.commit, paths)
        sizes = git.blob_sizes(set(ids.values()))
        small = {oid for oid, size in sizes.items() if size <= limit}
        contents = git.blobs(small)
        return {
            path: CommittedFile(sizes[oid], contents.get(oid))
            for path, oid in ids.items()
            if oid in sizes
        }

    def blob_ids(self, paths: list[str]) -> dict[str, str]:
        """On a commit side, git's blob id of each of `paths` that is a file of the commit
        (links followed in its tree), for git to compare them as it does (`Git.changed_blocks`);
        on the working tree it is a bug."""
        git, commit = self._commit_side()
        return git.file_ids(commit, paths)

    def contents(self, paths: list[str]) -> dict[str, bytes]:
        """On a commit side, the content of each of `paths` that is a file of the commit (a
        link followed while it stays in the commit's tree), in one git call for all; missing
        ones are left out. A side whose content must not be a working tree's (a base commit's
        template, its configuration) asks it here; on the working tree it is a bug."""
        git, commit = self._commit_side()
        return git.read_files(commit, paths)

    def links_among(self, paths: list[str]) -> set[str]:
        """Which of `paths` are symbolic links in the commit."""
        git, commit = self._commit_side()
        return git.links_among(commit, paths)

    def files_in(self, folder: str) -> list[str]:
        """The files and links directly in `folder` ("" for the root) of the commit."""
        git, commit = self._commit_side()
        return git.files_in(commit, folder)

    def write_copy(
        self,
        target: Path,
        reads: Iterable[str] | None,
        not_copied: frozenset[str],
        bounds: TreeBounds,
        *,
        linked_from: Path | None = None,
    ) -> None:
        """Write the commit's files into `target` from git's objects (a side's working copy):
        all of them, or with `reads` what reading those needs (each path, a folder whole, the
        links on the way and where they lead: `Git.needed_for`). Submodules and the
        `not_copied` paths (and what is under them) are left out; more than `bounds.entries`
        files is a TreeError. `linked_from`, a copy of the same commit written so before and
        read-only to agents, gives each file it holds as a hard link to its own: the same
        bytes and mode, none written again (git writes a file in about a millisecond here,
        a link costs a twentieth of that)."""
        git, commit = self._commit_side()
        if reads is None:
            listed = dict(git.tree(commit))
        else:
            needed = git.needed_for(commit, reads)
            entries = {path: git.entry(commit, path) for path in needed}
            folders = [path for path, entry in entries.items() if entry and entry.is_folder]
            listed = dict(git.under(commit, folders)) if folders else {}
            listed.update((p, e) for p, e in entries.items() if e is not None and not e.is_folder)

        wanted = sorted(
            p for p, e in listed.items() if not e.is_submodule and not _under(p, not_copied)
        )
        if len(wanted) > bounds.entries:
            raise TreeError(f"the commit holds more than {bounds.entries:,} files to copy")
        target.mkdir(mode=0o755, exist_ok=True)
        if linked_from is not None:
            wanted = _link_what_is_there(linked_from, target, wanted)
        git.write_files(commit, wanted, target)

    def under(self, folder: str) -> dict[str, TreeEntry]:
        """Every entry of the commit below `folder` (a repository path), as git lists it."""
        git, commit = self._commit_side()
        return dict(git.under(commit, [folder]))

    def first_under(self, folder: str, most: int) -> dict[str, TreeEntry]:
        """The first `most` entries of the commit below `folder`, as git lists them, and no
        more listed (`Git.first_under`): a look that needs no whole listing."""
        git, commit = self._commit_side()
        return git.first_under(commit, folder, most)

    def links_within(
        self, folders: list[str]
    ) -> tuple[dict[str, TreeEntry], dict[str, bytes | None]]:
        """What the commit holds at or below `folders` (files, links, submodules), and where
        each symbolic link there leads as it is written (None: unreadable), a folder of
        `folders` or one above it that is a link included: the links a `watch` reaches
        through, listed and read in a few git calls whatever their number."""
        git, commit = self._commit_side()
        listed = dict(git.under(commit, folders))
        links = {path: entry.oid for path, entry in listed.items() if entry.is_link}
        aboves = {a for folder in folders for a in folders_of(f"{folder}/")} - {""}
        git.prefetch(commit, aboves)  # one `ls-tree` for them all
        for above in aboves:
            entry = git.entry(commit, above)
            if entry is not None and entry.is_link:
                links[above] = entry.oid
        targets = git.link_targets(set(links.values()))
        return listed, {path: targets[oid] for path, oid in links.items()}

    def _commit_side(self) -> tuple[Git, str]:
        if self.commit is None or self.git is None:
            raise AssertionError("asked for a commit's files on the working tree")
        return self.git, self.commit

    def is_executable(self, path: str) -> bool:
        """Whether the file `path` names (`find`) may be run: committed executable (git's
        100755) on a commit, executable on disk for the working tree."""
        real = self.find(path)
        if self.commit is not None and self.git is not None:
            _, entry = self.git.lookup(self.commit, real)
            return entry is not None and entry.mode == "100755"
        return os.access(self._real_root / real, os.X_OK)

    def is_file(self, path: str) -> bool:
        try:
            self.find(path)
        except NotCommitted:
            return False
        return True

    def read(self, path: str, limit: int) -> bytes:
        """The content of the file `path` names (`find`), at most `limit` bytes (NotCommitted
        when larger): from git's objects for a commit, from disk for the working tree."""
        real = self.find(path)
        if self.commit is not None and self.git is not None:
            _, entry = self.git.lookup(self.commit, real)
            assert entry is not None  # found just above
            size = self.git.blob_sizes({entry.oid}).get(entry.oid, 0)
            if size > limit:
                raise NotCommitted(path, f"is larger than {limit} bytes")
            content = self.git.blob(entry.oid)
            if content is None:
                raise NotCommitted(path, f"is missing from git's objects of {self.describe()}")
            return content
        try:
            return read_regular(self._real_root / real, limit)
        except UnsafeFile as exc:
            raise NotCommitted(path, exc.reason) from None
        except OSError as exc:
            raise NotCommitted(path, f"cannot be read ({exc.strerror})") from None

    def starts(self, paths: list[str], length: int) -> dict[str, bytes]:
        """The first `length` bytes of each file of `paths` that can be read (one `find`
        refuses, or that is gone, is left out). On a commit, the files no larger than
        `WHOLE_BLOBS` together are read in one `cat-file --batch`, and only a larger one
        apart: a root may hold thousands of small files, which one process each made a
        load seconds slower."""
        self.prefetch(paths)
        found: dict[str, str] = {}
        for path in paths:
            with contextlib.suppress(NotCommitted, OSError):
                found[path] = self.find(path)
        if self.commit is None or self.git is None:
            starts: dict[str, bytes] = {}
            for path, real in found.items():
                with contextlib.suppress(OSError), (self._real_root / real).open("rb") as file:
                    starts[path] = file.read(length)
            return starts
        entries = {path: self.git.lookup(self.commit, real)[1] for path, real in found.items()}
        oids = {path: entry.oid for path, entry in entries.items() if entry is not None}
        sizes = self.git.blob_sizes(set(oids.values()))
        small, total = set(), 0
        for oid in sorted(set(oids.values()), key=lambda each: sizes.get(each, 0)):
            total += sizes.get(oid, 0)
            if total > WHOLE_BLOBS:
                break
            small.add(oid)
        read = self.git.blobs(small)
        return {
            path: read[oid][:length] if oid in read else self.git.blob_start(oid, length)
            for path, oid in oids.items()
            if oid in sizes
        }

    def text(self, path: str, limit: int) -> str:
        """`read`, decoded as UTF-8 (NotCommitted when it is not)."""
        try:
            return self.read(path, limit).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotCommitted(path, f"is not UTF-8 text ({exc})") from None


def entries_digest(listed: Mapping[str, TreeEntry]) -> str:
    """One hash of tree entries: each one's mode, git's object id and path, in path order."""
    digest = hashlib.sha256()
    for name, entry in sorted(listed.items()):
        digest.update(f"{entry.mode} {entry.oid} {name}\0".encode(errors="surrogateescape"))
    return digest.hexdigest()


def _under(path: str, folders: Collection[str]) -> bool:
    """Whether `path` is one of `folders` or below one of them."""
    parts = path.split("/")
    return any("/".join(parts[:depth]) in folders for depth in range(1, len(parts) + 1))


def _file_mode(mode: int) -> str:
    """The mode git records for a regular file: executable by its owner, or not."""
    return "100755" if mode & stat.S_IXUSR else "100644"


def _link_what_is_there(source: Path, target: Path, paths: list[str]) -> list[str]:
    """Hard-link each of `paths` that `source` holds (a file or a symbolic link, itself,
    never where it leads) into `target`, its folders made 0755 as git makes them; return
    the paths `source` lacks, for git to write."""
    left: list[str] = []
    made: set[str] = set()
    for path in paths:
        there = source / path
        if not os.path.lexists(there) or (there.is_dir() and not there.is_symlink()):
            left.append(path)
            continue
        for folder in sorted(folders_of(path), key=len):  # each before what is in it
            if folder not in made:
                (target / folder).mkdir(mode=0o755, exist_ok=True)
                (target / folder).chmod(0o755)  # whatever the umask
                made.add(folder)
        os.link(there, target / path, follow_symlinks=False)
    return left
