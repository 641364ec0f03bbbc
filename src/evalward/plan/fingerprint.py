"""What an agent's behaviour depends on, for change detection and for the result cache.

An agent depends on its definition, on the files it names — `systemFile`, and the program
files in its tools', MCP servers' and runtime's command lines (an argument that is not an
option, a URL or a template and may name a file: it has a `/` or a file extension, or is one
plain name, as a script without an extension is; `-m pkg.mod` names the package `pkg`), the
files its `environment` is built from and the folders they are in (its installer is given
each whole: a requirements file's includes, a `.python-version`) and the installers'
settings in the folders above them (a `uv.toml` at the root) — and on every file its
`watch` globs match, which is how an agent declares the rest of its code. Python run with
`-m` or `-c` imports from the root first, so such an agent reads the root's modules too. A
named path that is a folder (`npm --prefix agents/web start`) is every file under it. A
program that names no `watch` declares nothing of what it reads: it is checked out with the
whole commit, and depends on every file of it (`reads_everything`), so no change to the code
it imports goes unseen, nor is a result of its earlier code reused.

Both readers take these paths from one listing of the checkout (`FileIndex`) and one rule
(`agent_reads`): the result cache hashes each (`agent_fingerprint`), and change detection
asks whether the change touched any path reading it looks at (`FileIndex.looked_up`). A
symbolic link to a folder inside a watched folder is followed: the files under its target
are watched under the link's path. A submodule is the commit it points at; a link, the file
it leads to.
"""

from __future__ import annotations

import glob
import os
import posixpath
import re
import stat
from bisect import bisect_left
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalward.errors import GitError
from evalward.files.inside import (
    glob_matches,
    leads_outside,
    links_met,
    literal_start,
    looked_up,
    reference_candidates,
    watched_folders,
)
from evalward.files.safe_files import hash_regular
from evalward.git import LINK_MODE, SUBMODULE_MODE, Git, folders_of
from evalward.resources import Located
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.models import Agent

NOT_READ = ".evalward"
"""evalward's own folder at the checkout's root (its cache, its outputs): never in a run's
copy of the checkout, so never what an agent reads, and never listed."""


def referenced_files(located: Located[Agent]) -> list[str]:
    """Repository paths the agent's definition names (they may not exist); "." (the whole
    checkout) for a program that names no `watch`."""
    spec = located.resource.spec
    paths: list[str] = []
    if spec.system_file:
        # Both places the file may be read from (the root, or the deprecated rule's).
        paths += reference_candidates(located.file, spec.system_file)
    for program in spec.programs():
        paths += _named_by(program.argv)
    if spec.environment is not None:
        environment = spec.environment
        paths += [*environment.files(), *environment.folders(), *environment.above()]
    if reads_everything(spec):
        paths.append(".")
    return sorted(set(paths))


_PYTHON = re.compile(r"python[\d.]*")
"""A Python interpreter named by its program's name (`python3`, `/usr/bin/python3.12`)."""
_TAKES_A_VALUE = frozenset({"-X", "-W", "--check-hash-based-pycs"})
ROOT_MODULE = re.compile(r"[^/]+\.(py|pyc|so)|[^/]+/__init__\.(py|pyc)")
"""A path Python may import from the repository's root: a module or a package's start."""


def imports_from_root(spec: AgentSpec) -> bool:
    """Whether a program of the agent is Python run with `-m` or `-c`: Python then puts its
    working directory, the repository's root, first on its import path (unless `-I` or
    `-P`), so a module there (`textwrap.py`) takes the place of one the program imports."""
    return any(_root_first(program.argv) for program in spec.programs())


_LAUNCHERS = frozenset({"uv", "uvx", "poetry", "pipenv", "pdm", "hatch", "rye", "env"})
"""Programs that start the Python their command line names (`uv run python -m agent`)."""


def _root_first(argv: list[str]) -> bool:
    """Whether `argv` runs Python with `-m` or `-c`, directly or through a launcher: `uv run
    -m agent` (uv's own `-m`/`--module`) or `uv run python -m agent` alike."""
    names = [posixpath.basename(argument) for argument in argv]
    if names and names[0] in _LAUNCHERS:
        found = next((i for i, name in enumerate(names) if _PYTHON.fullmatch(name)), None)
        if found is not None:
            return _root_first(argv[found:])
        return names[0] == "uv" and any(a in ("-m", "--module") for a in argv[1:])
    if not names or not _PYTHON.fullmatch(names[0]):
        return False
    safe, skip = False, False
    for argument in argv[1:]:
        if skip:
            skip = False
            continue
        if argument in _TAKES_A_VALUE:
            skip = True
            continue
        if argument == "--" or not argument.startswith("-") or argument.startswith("--"):
            return False  # a script: its own folder is first on the path
        letters = argument[1:]
        safe = safe or "I" in letters or "P" in letters
        if "m" in letters or "c" in letters:
            return not safe
    return False


def root_modules(paths: Iterable[str]) -> list[str]:
    """The paths of a listing Python may import from the repository's root (`ROOT_MODULE`)."""
    return [path for path in paths if ROOT_MODULE.fullmatch(path)]


def reads_everything(spec: AgentSpec) -> bool:
    """Whether the agent starts a program of the repository and declares no `watch` of what
    it reads: it may read any file of its checkout (`plan.reach` checks it out whole)."""
    return spec.runs_programs and not spec.watch


_PLAIN_NAME = re.compile(r"[\w@+][\w.@+-]{0,254}")
"""One name that may be a file of the repository's root: `agentmain`, `server`."""


def _named_by(argv: list[str]) -> list[str]:
    """The repository paths a command line may name: each argument that is not an option, a
    URL or a template and has a `/`, a file extension or one plain name (`python3 agentmain`,
    `python3 -m agentpkg`); a module run with `-m` names its top package (`pkg`, `pkg.py`)."""
    named: list[str] = []
    for index, argument in enumerate(argv):
        before = argv[index - 1] if index else ""
        if before == "-m" and _PLAIN_NAME.fullmatch(argument):
            top = argument.split(".", 1)[0]
            named += [top, f"{top}.py"]
        elif _looks_like_a_path(argument, program=index == 0):
            named.append(posixpath.normpath(argument.removeprefix("./")))
    return named


def _looks_like_a_path(argument: str, program: bool = False) -> bool:
    """Whether an argument may name a repository path; a `program` named plainly is looked up
    on `PATH` (`python3`), never in the repository."""
    if argument.startswith("-") or "://" in argument or "{" in argument:
        return False
    name = argument.rsplit("/", 1)[-1]
    has_extension = "." in name.strip(".") and not name.startswith(".")
    plain = not program and bool(_PLAIN_NAME.fullmatch(argument))
    return "/" in argument or has_extension or plain


class FileIndex:
    """The paths of one checkout, for what `watch` globs match: listed only where a glob may
    match (`watched_folders`), each folder once, so that the cost follows the definitions,
    not the size of the repository. `prefetch` lists the folders of many globs at once.

    Exactly the files change detection sees: what git tracks there (and, in a working tree,
    what it would add: untracked files that are not ignored), `node_modules/` or a committed
    `.venv/` included. A cache key that left out a path change detection counts would reuse a
    result from before that path changed. A folder git does not know (a copy of a commit's
    changed files) is walked, but for `.git`. Links and submodules are listed as the paths
    they are, with what they are.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._real_root: Path | None = None
        self._repository: bool | None = None
        self._covered: set[str] = set()
        """The folders listed ("" the whole checkout)."""
        self._paths: list[str] = []
        """What they hold, sorted."""
        self._links: set[str] = set()
        self._submodules: dict[str, str] = {}
        self._expanded: dict[str, str] = {}
        """Paths under a linked folder, as watched -> the link they go through."""
        self._links_seen: dict[str, bool] = {}
        self._folders_seen: dict[str, bool] = {}
        """`is_link` and `is_folder` of this checkout, each path looked at once: every agent
        asks them of its files and of the folders they are in, several times a plan."""

    def prefetch(self, patterns: Iterable[str]) -> None:
        """List, in one go, the folders every glob of `patterns` may match in."""
        self._list(watched_folders(list(patterns)))

    def listed(self, folders: list[str]) -> list[str]:
        """The paths at or below `folders` ("" for all), listed there only."""
        self._list(folders)
        return sorted({path for folder in folders for path in self._under(folder.strip("/"))})

    def matching(self, patterns: list[str]) -> list[str]:
        """The paths the globs match, the files under a linked folder they cover included."""
        if not patterns:
            return []
        folders = watched_folders(patterns)
        self._list(folders)
        listed = [path for folder in folders for path in self._under(folder)]
        found = {path for path in listed if any(glob_matches(path, p) for p in patterns)}
        links = {path for path in listed if path in self._links}
        links |= {
            above
            for folder in folders
            for above in folders_of(f"{folder}/") - {""}
            if self.is_link(above)
        }
        for link in sorted(links):
            if may_cover(link, patterns):
                linked = self._under_link(link)
                found.update(p for p in linked if any(glob_matches(p, g) for g in patterns))
        return sorted(found)

    def _under_link(self, link: str) -> list[str]:
        """The listed files under the folder `link` leads to (inside the checkout), named
        under the link. One level: a link inside that folder is named, not followed again."""
        real_root = self.root.resolve()
        try:
            target = (self.root / link).resolve()
        except (OSError, RuntimeError):
            return []
        if not target.is_dir() or not target.is_relative_to(real_root):
            return []
        folder = target.relative_to(real_root).as_posix()
        folder = "" if folder == "." else folder
        self._list([folder])
        prefix = f"{folder}/" if folder else ""
        paths = [f"{link}/{f[len(prefix) :]}" for f in self._under(folder) if f != folder]
        for path in paths:
            self._expanded.setdefault(path, link)
        return paths

    def is_folder(self, path: str) -> bool:
        """Whether the repository path `path` is a folder of the checkout (through links
        inside it): what the agent reads there is every file under it."""
        if path.startswith(("/", "../")) or path == "..":
            return False
        found = self._folders_seen.get(path)
        if found is None:
            try:
                there = self.root / path
                found = there.is_dir() and not leads_outside(self.root, there)
            except OSError:
                found = False
            self._folders_seen[path] = found
        return found

    def is_link(self, path: str) -> bool:
        """Whether the repository path `path` ("" the root) is a symbolic link."""
        found = self._links_seen.get(path)
        if found is None:
            found = self._links_seen[path] = (self.root / path).is_symlink()
        return found

    def token(self, path: str) -> str:
        """What the agent reads at `path`: a file's content hash and whether it may be run
        (its mode, as the checkout wrote it), a submodule's commit."""
        commit = self._submodule(path)
        if commit is not None:
            checked_out = ""
            if (self.root / path / ".git").exists():  # else git would answer for this repository
                checked_out = Git(self.root / path).run("rev-parse", "HEAD", check=False).strip()
            return f"submodule {commit}" + (
                f", checked out at {checked_out}" if checked_out else ""
            )
        if self._real_root is None:
            self._real_root = self.root.resolve()
        return _file_token(self.root, path, self._real_root)

    def look_up(self, paths: Iterable[str]) -> None:
        """List, in one git call, each of `paths` that `token` would list alone: one neither
        listed yet nor a regular file (a folder, a link, a submodule, or nothing there).
        Where git refuses one of them (a path out of the repository), none is listed: each is
        then listed alone, as `token` lists it, and a refusal costs that path alone."""
        new = [p for p in paths if not self._covers(p) and not (self.root / p).is_file()]
        self._list(new, or_walk=False)

    def _submodule(self, path: str) -> str | None:
        """The commit the submodule at `path` points at; None when it is not one. A regular
        file outside what was listed is not (no git call); anything else is listed."""
        if not self._covers(path):
            if (self.root / path).is_file():
                return None
            self._list([path])
        return self._submodules.get(path)

    def looked_up(self, path: str) -> set[str]:
        """Every repository path reading `path` depends on: itself, and when it is a link or
        lies under one, the links on the way and where they lead (`paths.looked_up`)."""
        if path in self._expanded or any(self.is_link(part) for part in [path, *folders_of(path)]):
            return looked_up(self.root, path)
        return {path}

    def _list(self, folders: list[str], *, or_walk: bool = True) -> None:
        """List the folders not listed yet: one git call for all of them (a walk when the
        checkout is not a repository's root, or git refuses one of them; with `or_walk`
        False, none is listed then)."""
        new = sorted({f.strip("/") for f in folders if not self._covers(f.strip("/"))})
        if not new:
            return
        if "" in new:
            new = [""]
        if self._repository is None:
            self._repository = Git(self.root).is_top()
        listed = _listed_by_git(self.root, new) if self._repository else None
        if listed is None and not or_walk:
            return
        if listed is None:
            listed = _walked(self.root, new)
        files, links, submodules = listed
        files = {path for path in files if path.split("/", 1)[0] != NOT_READ}
        self._paths = sorted(set(self._paths) | files)
        self._links |= links
        self._submodules |= submodules
        self._covered.update(new)

    def _covers(self, folder: str) -> bool:
        """Whether `folder` is listed: itself, or a folder above it."""
        return (
            "" in self._covered
            or folder in self._covered
            or not self._covered.isdisjoint(folders_of(folder))
        )

    def _under(self, folder: str) -> list[str]:
        """The listed paths at or below `folder`."""
        return paths_under(self._paths, folder)


def paths_under(ordered: list[str], folder: str) -> list[str]:
    """The paths of the sorted list `ordered` at or below `folder` ("" for all), found by
    bisection: the cost follows what is there, not the length of the list."""
    if not folder:
        return ordered
    found = [folder] if _has(ordered, folder) else []
    start = bisect_left(ordered, f"{folder}/")
    end = bisect_left(ordered, f"{folder}0")  # "0" follows "/"
    return found + ordered[start:end]


def _has(ordered: list[str], path: str) -> bool:
    index = bisect_left(ordered, path)
    return index < len(ordered) and ordered[index] == path


def may_cover(folder: str, patterns: list[str]) -> bool:
    """Whether a glob may match a path under `folder` (a linked folder, or the one a
    `.gitattributes` is in): its literal start and the folder are one the other's
    beginning (a glob that matches the folder itself, `agents/bot/**`, begins so too). No
    glob is compiled: one of a few KiB takes fnmatch 16 ms."""
    literals = (literal_start(pattern) for pattern in patterns)
    return any(
        literal.startswith(f"{folder}/") or f"{folder}/".startswith(literal) for literal in literals
    )


TreeListing = tuple[set[str], set[str], dict[str, str]]
"""Paths, which of them are symbolic links, and the submodules' commits."""


def _listed_by_git(root: Path, folders: list[str]) -> TreeListing | None:
    try:
        staged, others = Git(root).listing(folders)
    except GitError:
        return None
    files: set[str] = set()
    links: set[str] = set()
    submodules: dict[str, str] = {}
    for entry in staged.split("\0"):
        meta, tab, path = entry.partition("\t")
        if not tab:
            continue
        mode, oid, _ = meta.split(" ")
        files.add(path)
        if mode == LINK_MODE:
            links.add(path)
        elif mode == SUBMODULE_MODE:
            submodules[path] = oid
    for path in others.split("\0"):
        if path:
            files.add(path)
            if (root / path).is_symlink():
                links.add(path)
    return files, links, submodules


def _walked(root: Path, folders: list[str]) -> TreeListing:
    found: set[str] = set()
    links: set[str] = set()
    for folder in folders:
        start = root / folder if folder else root
        if folder and (start.is_symlink() or not start.is_dir()):
            if os.path.lexists(start) and ".git" not in folder.split("/"):
                found.add(folder)
                if start.is_symlink():
                    links.add(folder)
            continue
        for dirpath, dirnames, filenames in os.walk(start):
            here = Path(dirpath)
            base = here.relative_to(root).as_posix()
            linked = [d for d in dirnames if (here / d).is_symlink()]  # listed, not walked into
            dirnames[:] = sorted(d for d in dirnames if d != ".git" and d not in linked)
            for name in [*filenames, *linked]:
                path = name if base == "." else f"{base}/{name}"
                found.add(path)
                if (here / name).is_symlink():
                    links.add(path)
    return found, links, {}


def read_globs(located: Located[Agent], index: FileIndex) -> list[str]:
    """The globs of what the agent reads besides the paths it names: its `watch`, and every
    file under a named path that is a folder of the checkout (`npm --prefix agents/web`
    runs the package there; "." names them all)."""
    folders = [path for path in referenced_files(located) if index.is_folder(path)]
    return [*located.resource.spec.watch, *under_globs(folders)]


def under_globs(folders: Iterable[str]) -> list[str]:
    """A glob of every path under each of `folders` (`**` for the root, "."), its name
    escaped: a file's matches nothing."""
    return ["**" if folder == "." else f"{glob.escape(folder)}/**" for folder in folders]


def agent_reads(located: Located[Agent], index: FileIndex) -> list[str]:
    """Every repository path the agent depends on (the module's rule), as it names them: with
    the root's modules, for a program that imports from the root first."""
    watched = index.matching(read_globs(located, index))
    found = set(referenced_files(located)) | set(watched)
    if imports_from_root(located.resource.spec):
        found.update(root_modules(index.listed([""])))
    return sorted(found)


def agent_fingerprint(located: Located[Agent], index: FileIndex) -> dict[str, Any]:
    """The agent's definition and what it reads at every path it depends on."""
    reads = agent_reads(located, index)
    index.look_up(reads)
    return {
        "agent": located.resource.metadata.name,
        "spec": located.resource.spec.model_dump(mode="json", by_alias=True),
        "files": {path: index.token(path) for path in reads},
    }


def _file_token(root: Path, path: str, real_root: Path) -> str:
    """The file's hash, and "executable" when the checkout made it one (git's mode 100755:
    a program the agent starts runs, or fails to, by it); only regular files inside the
    repository are read (a link to `/dev/zero` or out of the checkout is named, not
    followed). A path read through a symbolic link adds each link met and its target as
    written: a link out of the repository hashes nothing, and where it leads is what the
    agent reads."""
    try:
        target = (root / path).resolve()
    except (OSError, RuntimeError):  # RuntimeError: links that loop
        return "missing" + _links(root, path)
    linked = _links(root, path) if target != real_root / path else ""
    if not target.is_relative_to(real_root):
        return "outside the repository" + linked
    try:
        mode = target.stat().st_mode  # one look: a program depending on every file has many
        if not stat.S_ISREG(mode):
            return "not a regular file" + linked
        return hash_regular(target) + (" executable" if mode & stat.S_IXUSR else "") + linked
    except OSError:
        return "missing" + linked


def _links(root: Path, path: str) -> str:
    """The links reading `path` goes through, with where each leads ("" for none)."""
    met = links_met(root, path)
    return "".join(f"; {link} -> {target}" for link, target in met)
