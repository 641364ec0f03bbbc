"""Load the definitions of a tree (the files `discover` finds) in every format evalward reads:
its own resource kinds and AgentV's eval files (`importers/agentv/convert.py`), validate them, and
cross-check their references (`resources/references.py`). It sits above both `resources/` and
`importers/`, which it composes.

Every problem of a run is collected and raised together as one ResourceError (exit code 2):
syntax errors, schema errors, duplicates, dangling references. A document is ours when its
`apiVersion` is ours, when its `kind` is one of ours (then an `apiVersion` that is not ours is
an error, not a reason to skip it: `exclude` in evalward.yaml is how a file that is not
evalward's is left out), or when it has AgentV's shape; any other YAML document is not
evalward's. A configured root under which no document is ours is an error too.

On a commit side (files/committed.py) a definition file is read from the commit's objects,
never from the workspace's copy, which another workflow step may have rewritten; and a link
out of the repository is judged by what it says alone, never by what is where it leads on
this machine, which a pull request's link (to `/`, to the runner's home) would have read.
"""

from __future__ import annotations

import dataclasses
import gc
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evalward.errors import NotCommitted, Problem, ResourceError, YamlSyntaxError
from evalward.files.committed import CommittedFile, RepoFiles
from evalward.files.inside import leads_outside, leaves_repository, mode_of
from evalward.resources.checks.code_scorer_files import FileTexts, InlinePlaces, embed_scorers
from evalward.resources.common import API_VERSIONS
from evalward.resources.models import KINDS, Eval, EvalFixture
from evalward.resources.reading.discover import (
    LINKED_WALK,
    YAML_SUFFIXES,
    discover,
    is_json,
    relative,
    under_builtin_exclude,
    unread_link_in,
    yaml_files_under,
)
from evalward.resources.reading.problems import did_you_mean, located_messages, render_path
from evalward.resources.reading.repo_config import CONFIG_FILE, RepoConfig, load_config
from evalward.resources.reading.shared_sets import share_field_sets
from evalward.resources.reading.yamlsource import (
    MAX_FILE_BYTES,
    Document,
    PathKey,
    decode,
    load_documents,
    looks_like_resource,
    parse_documents,
    too_large,
)
from evalward.resources.references import check_references, unknown_default_agent
from evalward.resources.resource_set import Located, ResourceSet
from evalward.text.escaping import printable


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Loading builds tens of thousands of acyclic objects; each cyclic-GC pass would rescan
    all of them (measured: 40-60 % of a 20,000-fixture load). Pause it for the load (a
    function it decorates). A command's process pauses it from its start until the head's
    load is done, then freezes what it built (host.py `started`): nothing here freezes or
    unfreezes, which would take in, or hand back, what the process froze."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_resources(
    root: Path, config: RepoConfig | None = None, door: RepoFiles | None = None
) -> ResourceSet:
    """Load every resource under `root`; raise one ResourceError listing every problem.

    `config` defaults to the root's `evalward.yaml` (roots, excludes, defaults); `door`
    (files/committed.py) reads the files definitions name, by default the working tree's.
    """
    resources, problems = load_what_loads(root, config, door)
    if problems:
        raise ResourceError(problems)
    return resources


@_collector_paused()
def load_what_loads(
    root: Path, config: RepoConfig | None = None, door: RepoFiles | None = None
) -> tuple[ResourceSet, list[Problem]]:
    """Every resource under `root` that is valid, and every problem (for `evalward validate`,
    which goes on to check what loaded). Problems of `evalward.yaml` itself still raise."""
    config = config if config is not None else load_config(root)
    run = _Run(root, config, door)
    for index, sub in enumerate(config.roots):
        if leads_outside(root, root / sub):
            why = (
                f"root {sub!r} leads outside the repository (a symbolic link); list "
                "folders of the repository"
            )
        elif not stat.S_ISDIR(mode_of(root / sub) or 0):
            why = (
                f"root {sub!r} is not a folder of the repository"
                f"{did_you_mean(sub, _folders_beside(root, sub))}; list the folders that "
                "hold your resources, from the repository root"
            )
        else:
            continue
        line, column = config.locate(("roots", index))
        run.problems.append(Problem(CONFIG_FILE, line, column, f"roots[{index}]", why))
        run.result.lost_roots.append(f"{sub!r} ({CONFIG_FILE}:{line}:{column})")
    held = _held(run.result, discover(root, config))
    if run.load_files([path for path in held if not is_json(path)]):
        run.refuse_json([path for path in held if is_json(path)])
        run.problems += _empty_roots(root, config, run.claimed)
        check_references(run.result, run.located_field)
        run.result.warnings += unknown_default_agent(config, run.result)
    return run.result, sorted(run.problems, key=Problem.order)


def _folders_beside(root: Path, sub: str) -> list[str]:
    """The folders in the folder a root names would be in (`evals` for `evlas`), as
    `evalward.yaml` writes them, for a did-you-mean; none where that folder cannot be read."""
    parent = Path(sub).parent
    try:
        found = [
            entry
            for entry in (root / parent).iterdir()
            if entry.is_dir() and not entry.name.startswith(".")  # .git, .evalward: not ours
        ]
    except OSError:
        return []
    return [str(parent / entry.name) if str(parent) != "." else entry.name for entry in found]


def _held(result: ResourceSet, found: Iterable[Path]) -> list[Path]:
    """The discovered definition files the side holds (files/committed.py: a commit's own,
    or on the working tree what git would commit): a YAML file another workflow step left
    under a resource root, or a git-ignored one, is not a definition."""
    by_name = {relative(path, result.root): path for path in found}
    held = result.files.definitions(sorted(by_name))
    return sorted(path for name, path in by_name.items() if name in held)


def _empty_roots(root: Path, config: RepoConfig, claimed: set[Path]) -> list[Problem]:
    """Each root `evalward.yaml` lists under which no file holds a document of ours: the
    setting points where the resources are not, and a run would find nothing to gate."""
    if "roots" not in config.model_fields_set:
        return []
    problems: list[Problem] = []
    for index, sub in enumerate(config.roots):
        start = (root / sub).resolve() if sub != "." else root
        if not stat.S_ISDIR(mode_of(start) or 0) or not start.is_relative_to(root.resolve()):
            continue  # reported as a root that is not a folder of the repository
        if any(path.is_relative_to(start) for path in claimed):
            continue
        line, column = config.locate(("roots", index))
        problems.append(
            Problem(
                CONFIG_FILE,
                line,
                column,
                f"roots[{index}]",
                f"root {sub!r} holds no evalward resource: no YAML file under it has a "
                f"document with `apiVersion: {API_VERSIONS[0]}` or an AgentV eval file; list "
                "the folders that hold your Agents, EvalFixtures and Evals, or remove `roots` "
                "to search the whole repository",
            )
        )
    return problems


@_collector_paused()
def load_changed_resources(
    root: Path,
    previous: ResourceSet,
    changed: set[str],
    config: RepoConfig | None = None,
    *,
    check_files: bool = True,
    door: RepoFiles | None = None,
) -> ResourceSet:
    """The resources of `root`, a tree that differs from `previous`'s only in `changed` paths.

    A file whose path and reads (`ResourceSet.reads`) are unchanged keeps `previous`'s
    resources as they are (same bytes, same positions); the others under `root` are parsed.
    A change to `evalward.yaml` falls back to a full load. `root` may hold only those files
    when `config` (unchanged, so the head's) is given; such a partial tree cannot answer
    whether the files agents name exist, so pass `check_files=False`.
    """
    if needs_full_load(changed):
        return load_resources(root, door=door)
    config = config if config is not None else load_config(root)
    run = _Run(root, config, door)
    again = changed | previous.depending_on(changed)
    mine = run.result.tables()
    for kind, table in previous.tables().items():
        mine[kind].update((name, r) for name, r in table.items() if r.file not in again)
    run.result.agentv_files = previous.agentv_files - again
    run.result.reads = {f: paths for f, paths in previous.reads.items() if f not in again}
    paths = sorted(p for p in discover(root, config) if relative(p, root) in again)
    run.load_files([path for path in paths if not is_json(path)])
    run.refuse_json([path for path in paths if is_json(path)])
    check_references(run.result, run.located_field, check_files=check_files)
    if run.problems:
        raise ResourceError(sorted(run.problems, key=Problem.order))
    return run.result


_LINKED_OUT = (
    "the file is a symbolic link to a file outside the repository; a resource must be a file "
    "of the repository (replace the link with the file)"
)
"""Why a definition file that is a link out of the repository is refused: on a commit side
by what the link says alone, whatever is where it leads on this machine."""


def needs_full_load(changed: set[str]) -> bool:
    """Whether `changed` alters where resources are, or their defaults (`evalward.yaml`)."""
    return CONFIG_FILE in changed


class _Run:
    """The state of one load: results, problems, and per-file parse caches."""

    def __init__(self, root: Path, config: RepoConfig, door: RepoFiles | None) -> None:
        self.root = root
        self.config = config
        self.result = ResourceSet(root=root, door=door)
        self.problems: list[Problem] = []
        self.claimed: set[Path] = set()
        """Files with a document of ours (valid or not), as `discover` found them."""
        self._texts: dict[str, str] = {}
        self._marked: dict[str, list[Document]] = {}
        self._scorer_texts: FileTexts = {}
        self._inline = InlinePlaces()
        self._committed: dict[str, CommittedFile] = {}
        """Definition files read from a commit side's objects (`load_files`)."""
        self._defaults_told: set[str] = set()
        """The defaults of evalward.yaml already reported as invalid (`_inherited`)."""
        self._looked_into: dict[Path, str | None] = {}
        """What `_first_resource_under` found in each folder a link leads to."""

    # -- locations ------------------------------------------------------------------------

    def marked(self, rel: str, index: int) -> Document | None:
        """The document with per-node marks, parsed again only when a problem needs it."""
        if rel not in self._marked:
            try:
                self._marked[rel] = parse_documents(self._texts[rel])
            except (KeyError, YamlSyntaxError):
                self._marked[rel] = []
        documents = self._marked[rel]
        return documents[index] if index < len(documents) else None

    def problem(
        self, rel: str, index: int, start: int, loc: PathKey, message: str, *, warning: bool = False
    ) -> None:
        document = self.marked(rel, index)
        line, column = document.locate(loc) if document is not None else (start, 1)
        found = Problem(rel, line, column, render_path(loc), message)
        (self.result.warnings if warning else self.problems).append(found)

    # -- loading --------------------------------------------------------------------------

    def load_file(self, path: Path) -> None:
        rel = relative(path, self.root)
        text = self._read(path, rel)
        if text is None or not _maybe_ours(text):
            return
        try:
            documents = load_documents(text)
        except YamlSyntaxError as exc:
            if not path.name.endswith(YAML_SUFFIXES) and "evalward.dev/" not in text:
                return  # `*.YAML`, read only to refuse its name: another tool's, maybe
            self.problems.append(Problem(rel, exc.line, exc.column, "", str(exc)))
            self.result.unparsed.append(rel)
            self.claimed.add(path)
            return
        if not path.name.endswith(YAML_SUFFIXES):
            self._refuse_suffix(path, rel, documents)
            return
        self._texts[rel] = text
        for index, document in enumerate(documents):
            if self._load_document(document, index, rel):
                self.claimed.add(path)

    def refuse_json(self, paths: list[Path]) -> None:
        """Each `*.json` file of `paths` whose first bytes (`JSON_LOOK`) declare a resource
        of ours (`_JSON_OURS`): never read as definitions, so refused at that line, as a
        `*.YAML` one is, rather than passed over with its resources unread. Only its start
        is read: a repository's JSON files may be many and large, and a resource of ours
        written as JSON gives its `apiVersion` early."""
        named = {relative(path, self.root): path for path in paths}
        # a link out, a FIFO, unreadable: left out, no file of definitions either
        for rel, start in self.result.files.starts(list(named), JSON_LOOK).items():
            path = named[rel]
            found = _JSON_OURS.search(start)
            if found is None:
                continue
            line = start.count(b"\n", 0, found.start()) + 1
            column = found.start() - (start.rfind(b"\n", 0, found.start()) + 1) + 1
            name = Path(rel).name
            why = (
                "a JSON file that declares an evalward resource (`apiVersion: evalward.dev/…`): "
                "evalward reads resources only from files named *.yaml or *.yml, so it is "
                f"never read; rename it to '{printable(name[: -len('.json')] + '.yaml')}' (a "
                "YAML file may hold JSON as it is)"
            )
            self.problems.append(Problem(rel, line, column, "", why))
            self.claimed.add(path)

    def _refuse_suffix(self, path: Path, rel: str, documents: list[Document]) -> None:
        """A file named `*.YAML` (a suffix in other case) that holds a document of ours: the
        docs and every other reader of definitions (the base's overlay, the plan's watched
        paths) take only `*.yaml` / `*.yml`, so it is refused, never passed over."""
        if any(_declares_ours(document.data) for document in documents):
            name = Path(rel).name
            stem, suffix = name.rsplit(".", 1)
            why = (
                f"evalward reads resources only from files named *.yaml or *.yml, in lower "
                f"case; rename it to '{printable(f'{stem}.{suffix.lower()}')}'"
            )
            self.problems.append(Problem(rel, None, None, "", why))
            self.claimed.add(path)

    def _read(self, path: Path, rel: str) -> str | None:
        refused = ""
        door = self.result.files
        if door.committed and path.is_symlink() and leaves_repository(self.root, path):
            # A commit holds the link, not what it leads to on this machine (a pull request's
            # link to `/`): decided by the link alone, nothing there looked at.
            if not path.name.lower().endswith(YAML_SUFFIXES):
                return None  # a link to a folder: no file of the commit is under it
            refused = _LINKED_OUT
        elif path.is_symlink() and path.is_dir():
            refused = self._linked_folder(path)
            if not refused:
                return None  # holds no resource of ours: as any folder `discover` passes over
        elif path.is_symlink() and leads_outside(self.root, path):
            refused = _LINKED_OUT
        elif not path.is_file():  # a FIFO would block the read, a device never end it
            refused = (
                "not a regular file (a FIFO, a device, or a link to one or that loops); a "
                "resource must be a file of the repository"
            )
        if refused:
            self.problems.append(Problem(rel, None, None, "", refused))
            return None
        if door.committed:
            return self._read_committed(door, rel)
        try:
            size = path.stat().st_size
            with path.open("rb") as file:  # a file too large: its start alone, to say what it is
                content = file.read() if size <= MAX_FILE_BYTES else None
                start = file.read(65536) if content is None else b""
        except OSError as exc:
            self.problems.append(Problem(rel, None, None, "", f"cannot read file: {exc.strerror}"))
            return None
        return self._decoded(rel, content, size, start)

    def _linked_folder(self, path: Path) -> str:
        """Why a symbolic link to a folder under a root whose files are read at no path of
        their own (`discover`) is refused when a file under it is a resource of ours: git
        holds the link, not those files, so they are no definitions of the commit, and passing
        over them would drop their resources. "" when it is no such link or holds none."""
        unread = unread_link_in(path, self.root, self.config)
        found = None if unread is None else self._first_resource_under(unread.target)
        if unread is None or found is None:
            return ""
        real_root = self.root.resolve()
        holds = f"its file '{printable(found)}'"
        if unread.reason == "outside":
            written = printable(path.readlink().as_posix())
            return (
                f"a symbolic link to the folder '{written}', outside the repository, and "
                f"{holds} is an evalward resource: evalward reads only the repository's own "
                "files, so none under it is read; move the files into the repository in "
                "place of the link"
            )
        inside = printable(unread.target.relative_to(real_root).as_posix())
        if unread.reason == "rootless":
            return (
                f"a symbolic link to the folder '{inside}', which no root of evalward.yaml "
                f"holds, and {holds} is an evalward resource: evalward reads each file at its "
                "own path under `roots` (git keeps a link as a link), so none under it is "
                f"read; list '{inside}' under `roots` in evalward.yaml, or move its files "
                "here in place of the link"
            )
        if unread.builtin:
            return (
                f"a symbolic link to the folder '{inside}', under '{printable(unread.by)}', "
                f"which evalward never reads, and {holds} is an evalward resource: git keeps "
                "a link as a link, so none under it is read; move its files here in place of "
                "the link"
            )
        return (
            f"a symbolic link to the folder '{inside}', which `exclude` in evalward.yaml "
            f"leaves out ('{printable(unread.by)}'), and {holds} is an evalward resource: git "
            "keeps a link as a link, so none under it is read; narrow `exclude` so that it "
            f"leaves '{inside}' in, or move its files here in place of the link"
        )

    def _first_resource_under(self, target: Path) -> str | None:
        """The path, from `target` (a folder a link leads to), of its first file that holds
        a document declaring itself evalward's, else None. On a commit side `target` is a
        folder of the repository (a link out is never followed: `_read`), and its files are
        the commit's, read from its objects: the workspace's may be another step's, or links
        out of the repository. Either side looks at `LINKED_WALK`'s first entries at most,
        each folder once, however many links lead to it."""
        if target not in self._looked_into:
            self._looked_into[target] = self._look_under(target)
        return self._looked_into[target]

    def _look_under(self, target: Path) -> str | None:
        door = self.result.files
        if not door.committed:
            found = _first_resource_on_disk(target)
            return None if found is None else found.relative_to(target).as_posix()
        if not target.is_relative_to(self.root.resolve()):
            return None  # never looked into from a commit
        folder = target.relative_to(self.root.resolve()).as_posix()
        folder = "" if folder == "." else folder
        prefix = f"{folder}/" if folder else ""
        # as far as the working tree's look goes (its first entries), not listed whole
        # less the built-in excludes' folders, which the working tree's look never enters
        names = sorted(
            name
            for name, entry in door.first_under(folder, LINKED_WALK.entries).items()
            if not (entry.is_folder or entry.is_submodule)
            and name.lower().endswith(YAML_SUFFIXES)
            and not under_builtin_exclude(name[len(prefix) :])
        )[:MAX_DEFINITION_FILES]
        sizes, budget, read = door.sizes(names), MAX_DEFINITION_BYTES, []
        for name in names:
            size = sizes.get(name)
            if size is None or size > MAX_FILE_BYTES:
                continue  # a link out of the tree, or too large to be a resource
            budget -= size
            if budget < 0:
                break
            read.append(name)
        files = door.read_committed(read, MAX_FILE_BYTES)
        for name in read:
            content = files[name].content if name in files else None
            if content is not None and _holds_ours(content):
                return name[len(prefix) :]
        return None

    def load_files(self, paths: list[Path]) -> bool:
        """Load the definition files `paths`; on a commit side, read from its objects at once
        first. None is read when together they are beyond the bounds (`_beyond_bounds`):
        then False, with the problem noted."""
        door = self.result.files
        rels = [relative(path, self.root) for path in paths]
        beyond = _beyond_bounds(door.sizes(rels), f"{door.describe()} ({self.config.searched()})")
        if beyond is not None:
            self.problems.append(beyond)
            return False
        if door.committed:
            self._committed.update(door.read_committed(rels, MAX_FILE_BYTES))
        for path in paths:
            self.load_file(path)
        return True

    def _read_committed(self, door: RepoFiles, rel: str) -> str | None:
        """A definition file of a commit side, read from the commit (files/committed.py):
        what the workspace holds at its path may be another workflow step's. `load_files`
        read every one it loads from the commit already."""
        found = self._committed.get(rel)
        if found is None:
            try:
                door.find(rel)
            except NotCommitted as exc:
                why = f"the file {exc.reason}; a resource must be a file of the repository"
                self.problems.append(Problem(rel, None, None, "", why))
            return None
        start = door.starts([rel], 65536).get(rel, b"") if found.content is None else b""
        return self._decoded(rel, found.content, found.size, start)

    def _decoded(self, rel: str, content: bytes | None, size: int, start: bytes) -> str | None:
        """The text of a definition file of `size` bytes read whole (`content`); None for one
        larger than a resource file may be (`start`: its beginning) or not UTF-8, with the
        problem noted when the file looks like one of ours."""
        if content is None:
            if b"apiVersion" in start:
                self.problems.append(Problem(rel, None, None, "", too_large(size)))
            return None
        try:
            return decode(content)
        except YamlSyntaxError as exc:
            if looks_like_resource(content):
                self.problems.append(Problem(rel, exc.line, exc.column, "", str(exc)))
                self.result.unparsed.append(rel)
            return None

    def _load_document(self, document: Document, index: int, rel: str) -> bool:
        """Load the `index`-th document of `rel`; whether it is evalward's (valid or not)."""
        data = document.data
        if isinstance(data, list):
            return self._refuse_list(document, index, rel)
        if not isinstance(data, dict):
            return False
        if slips := _case_slips(data):
            return self._refuse_slips(document, index, rel, slips)
        version = data.get("apiVersion")
        kind = data.get("kind")
        ours = isinstance(version, str) and version.startswith("evalward.dev/")
        our_kind = isinstance(kind, str) and kind in KINDS
        if (ours or our_kind) and version not in API_VERSIONS:
            self.problem(
                rel,
                index,
                document.start_line,
                ("apiVersion",) if "apiVersion" in data else (),
                _unsupported_version(version, kind if our_kind and not ours else None),
            )
            self.result.note_not_loaded(data, rel, self.problems[-1:])
            return True
        if version in API_VERSIONS:
            resource = self._validate(document, index, rel)
            if resource is not None:
                self._add(Located(resource, rel, document.start_line, index))
            return True
        if "apiVersion" not in data:
            # lazy: AgentV's importer (five modules and the csv reader) only for a document
            # evalward's own kinds do not claim
            from evalward.importers.agentv import convert as agentv

            if agentv.is_agentv(data, rel):
                self._load_agentv(document, index, rel)
                return True
            if agentv.unnamed_suite(data, rel):
                self.problem(rel, index, document.start_line, ("tests",), UNNAMED, warning=True)
        return False

    def _refuse_list(self, document: Document, index: int, rel: str) -> bool:
        """A document that is a list holding a resource of ours (`- apiVersion: …`): each
        resource is a document of its own, so the list is refused at its first such item,
        never passed over as another tool's data with the resources in it unread."""
        first = next((at for at, item in enumerate(document.data) if _declares_ours(item)), None)
        if first is None:
            return False
        message = (
            "this YAML document is a list, holding an evalward resource: expected one "
            "resource (a mapping with apiVersion and kind) per document; write each item "
            "without its leading `- `, and put a line `---` between them"
        )
        version = _version_of(document.data[first])
        if not (isinstance(version, str) and version.startswith("evalward.dev/")):
            # taken for ours by its `kind` alone: it may be another tool's
            message += "; or, if the file is not evalward's, list it under `exclude`"
        self.problem(rel, index, document.start_line, (first,), message)
        return True

    def _refuse_slips(
        self, document: Document, index: int, rel: str, slips: dict[str, str]
    ) -> bool:
        """A document with `apiVersion` or `kind` written in other case (`apiversion:`,
        `Kind:`, `slips`: each key as written, and as it is spelt): when spelt right it would
        be evalward's, each key is refused with its spelling; else it is not ours."""
        spelt = {slips.get(key, key): value for key, value in document.data.items()}
        if not _declares_ours(spelt):
            return False
        told = len(self.problems)
        for written, key in slips.items():
            message = (
                f"unknown field {written!r}{did_you_mean(written, [key])}: keys are case-sensitive"
            )
            self.problem(rel, index, document.start_line, (written,), message)
        self.result.note_not_loaded(spelt, rel, self.problems[told:])
        return True

    def _validate(self, document: Document, index: int, rel: str) -> BaseModel | None:
        data = document.data
        kind = data.get("kind")
        model = KINDS.get(kind) if isinstance(kind, str) else None
        if model is None:
            found = "no `kind`" if kind is None else f"{kind!r}"
            self.problem(
                rel,
                index,
                document.start_line,
                ("kind",) if "kind" in data else (),
                f"unknown kind: expected one of {', '.join(KINDS)}; found {found}"
                f"{did_you_mean(str(kind), KINDS)}",
            )
            return None
        own = data
        if model is Eval:
            data = self.config.eval_with_defaults(data)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            marked = self.marked(rel, index) or Document(own, document.start_line)
            invalid: list[Problem] = []
            for loc, message in located_messages(exc, data, model):
                behind = self.config.default_behind(loc, own) if model is Eval else None
                if behind is not None:
                    self._inherited(behind, message, own)
                    continue
                line, column = marked.locate(loc)
                invalid.append(Problem(rel, line, column, render_path(loc), message))
            self.problems.extend(invalid)
            self.result.note_not_loaded(data, rel, invalid)
            return None

    def _inherited(self, behind: PathKey, message: str, own: dict[str, Any]) -> None:
        """A default of evalward.yaml (at `behind`) that does not validate in an Eval that
        inherits it: that file's problem, at its line, told once however many Evals inherit
        it (the first one named)."""
        where = render_path(behind)
        if where in self._defaults_told:
            return
        self._defaults_told.add(where)
        metadata = own.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        field = render_path(behind[1:])
        heir = f", Eval {name!r} among them" if isinstance(name, str) else ""
        line, column = self.config.locate(behind)
        why = f"{message} (a default: every Eval that does not set `{field}` inherits it{heir})"
        self.problems.append(Problem(CONFIG_FILE, line, column, where, why))

    def _load_agentv(self, document: Document, index: int, rel: str) -> None:
        from evalward.importers.agentv import convert as agentv  # lazy: see _load_document

        self.result.agentv_files.add(rel)
        conversion = agentv.convert(
            document.data, rel, self.root, self.config.defaults.target_agent, self.result.files
        )
        self.result.reads.setdefault(rel, set()).update(conversion.reads)
        for problem in conversion.problems:
            self.problem(rel, index, document.start_line, problem.path, problem.message)
        for data, path in conversion.fixtures:
            try:
                fixture = EvalFixture.model_validate(data)
            except ValidationError as exc:
                for error in exc.errors():
                    where = render_path(error["loc"])
                    message = f"becomes an invalid EvalFixture: {where}: {error['msg']}"
                    self.problem(rel, index, document.start_line, path, message)
                continue
            marked = self.marked(rel, index)
            line = marked.locate(path)[0] if marked is not None else document.start_line
            self._add(Located(fixture, rel, line, index), path)

    def _add(self, located: Located[Any], at: PathKey = ()) -> None:
        resource = share_field_sets(located.resource)
        table = self.result.tables()[resource.kind]
        if isinstance(resource, EvalFixture):
            fixture, problems, reads = embed_scorers(
                resource, self.result.files, self._scorer_texts
            )
            if not at:  # an AgentV test's code is not its file's
                text = self._texts[located.file]
                fixture = self._inline.place(fixture, located.file, located.document, text)
            located = dataclasses.replace(located, resource=fixture)
            if reads:
                self.result.reads.setdefault(located.file, set()).update(reads)
            for loc, message in problems:  # an AgentV test's own path: its graders have none
                self.problem(located.file, located.document, located.line, at or loc, message)
        name = resource.metadata.name
        if name in table:
            first = table[name]
            self.problem(
                located.file,
                located.document,
                located.line,
                (*at, "id") if at else ("metadata", "name"),
                f"duplicate {resource.kind} {name!r}: also defined at "
                f"{printable(first.file)}:{self._name_line(first)}",
            )
            return
        table[name] = located

    def _name_line(self, located: Located[Any]) -> int:
        """The line of a resource's `metadata.name`, where a duplicate of it is pointed to;
        its own line for an AgentV test (its `id`'s line already) or one of a file this
        load did not parse (an unchanged file `load_changed_resources` keeps)."""
        if located.file in self.result.agentv_files or located.file not in self._texts:
            return located.line
        document = self.marked(located.file, located.document)
        return document.locate(("metadata", "name"))[0] if document is not None else located.line

    def located_field(
        self,
        located: Located[Any],
        loc: PathKey,
        message: str,
        *,
        warning: bool = False,
        consequence: bool = False,
    ) -> None:
        """A problem (or warning) at a field of an already validated resource; with no field
        (`loc` empty), at the resource's own line (an AgentV test's, within its file). One
        that is the `consequence` of another is listed after every cause (`Problem.order`)."""
        document = self.marked(located.file, located.document) if loc else None
        line, column = document.locate(loc) if document is not None else (located.line, 1)
        found = Problem(located.file, line, column, render_path(loc), message, consequence)
        (self.result.warnings if warning else self.problems).append(found)


UNNAMED = (
    "names only datasets beside AgentV's suite keys (`providers`, `prompts`, `targets`), as a "
    "promptfoo config's `tests` may too, so this file is read as neither and its tests do not "
    "run: name an AgentV suite `*.eval.yaml` (or `eval.yaml`), or give it a test of its own; "
    "convert a promptfoo config with `evalward import promptfoo`"
)
"""The warning at an AgentV suite whose name does not say it is one (`unnamed_suite`)."""

MAX_DEFINITION_FILES = 20_000
"""Most YAML files one side's load reads. A suite of 1,000 agents, each with its Eval and its
fixtures' file, is 3,000; each file costs a lookup and a parse of its own however small."""
MAX_DEFINITION_BYTES = 64 * 1024 * 1024
"""Most bytes of YAML one side's load reads whole (a file over `MAX_FILE_BYTES` is only
looked at). Dense fixtures parse and validate at about 1 s a MiB, so this holds a load to
about a minute, twice what 100,000 one-call fixtures take (34 MiB). Each path counts, however
many name one blob: git stores copies of a file once, but each is parsed again."""


def _beyond_bounds(sizes: dict[str, int], where: str) -> Problem | None:
    """The problem of definition files (`sizes`, in bytes, by path; `where`: the side and
    where it was searched) that together are more than a load reads, told before any is read
    or parsed; None when they are within."""
    read = sum(size for size in sizes.values() if size <= MAX_FILE_BYTES)
    if len(sizes) <= MAX_DEFINITION_FILES and read <= MAX_DEFINITION_BYTES:
        return None
    mib = 1024 * 1024
    why = (
        f"the YAML files searched in {where} are {len(sizes):,} files and "
        f"{read / mib:,.1f} MiB, over the {MAX_DEFINITION_FILES:,} files and "
        f"{MAX_DEFINITION_BYTES // mib} MiB evalward reads (each path is read and parsed, "
        "copies of one file too); list only the folders of your Agents, EvalFixtures and "
        "Evals under `roots`, or the other YAML files under `exclude`, in evalward.yaml, and "
        "keep large data out of the definitions (a playground's seed, a prompt's file)"
    )
    return Problem(CONFIG_FILE, None, None, "roots", why)


def _case_slips(data: dict[Any, Any]) -> dict[str, str]:
    """Each key of a document that is `apiVersion` or `kind` in other case, where the key
    itself is missing, with the key it means."""
    slips: dict[str, str] = {}
    for key in ("apiVersion", "kind"):
        if key in data:
            continue
        written = next((k for k in data if isinstance(k, str) and k.lower() == key.lower()), None)
        if written is not None:
            slips[written] = key
    return slips


def _first_resource_on_disk(folder: Path) -> Path | None:
    """The first YAML file under `folder` (`yaml_files_under`, within the bounds of a load:
    its files and its bytes) that holds a document declaring itself evalward's, else None."""
    budget = MAX_DEFINITION_BYTES
    for path in yaml_files_under(folder, MAX_DEFINITION_FILES):
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES or not path.is_file():
                continue
            budget -= size
            if budget < 0:
                return None
            if _holds_ours(path.read_bytes()):
                return path
        except OSError:
            continue  # unreadable: no resource of ours
    return None


JSON_LOOK = 64 * 1024
"""The bytes of a `*.json` file under a root looked at for a resource of ours."""
_JSON_OURS = re.compile(rb'"apiVersion"\s*:\s*"evalward\.dev/')
"""A JSON document declaring itself evalward's: a mention of evalward.dev elsewhere (a
schema's `$id`, a link) is not one."""


def _holds_ours(content: bytes) -> bool:
    """Whether a file's content holds a document declaring itself evalward's
    (`_declares_ours`); not UTF-8 or not YAML: no resource of ours."""
    try:
        text = content.decode("utf-8")
        return _maybe_ours(text) and any(_declares_ours(d.data) for d in load_documents(text))
    except (UnicodeDecodeError, YamlSyntaxError):
        return False


def _version_of(data: object) -> object:
    """The `apiVersion` of the first resource of ours that `data` is, or holds in lists."""
    while isinstance(data, list):
        data = next(item for item in data if _declares_ours(item))
    return data.get("apiVersion") if isinstance(data, dict) else None


def _declares_ours(data: object) -> bool:
    """Whether a document says it is evalward's: by its `apiVersion` or its `kind`; a list
    does when one of its items does, a list in a list too (`_refuse_list`)."""
    if isinstance(data, list):
        return any(_declares_ours(item) for item in data)
    if not isinstance(data, dict):
        return False
    version, kind = data.get("apiVersion"), data.get("kind")
    return (isinstance(version, str) and version.startswith("evalward.dev/")) or (
        version in API_VERSIONS or (isinstance(kind, str) and kind in KINDS)
    )


def _maybe_ours(text: str) -> bool:
    """A cheap look at a file's text before parsing it: could a document in it be ours? In
    any case: a key in other case (`apiversion:`) is told (`_case_slips`), not passed over."""
    if any(word in text for word in ("apiVersion", "kind", "evalcases:", "eval_cases:", "tests:")):
        return True
    lowered = text.lower()
    return "apiversion" in lowered or "kind" in lowered


def _unsupported_version(version: object, kind: str | None) -> str:
    """Why a document of ours is refused for its `apiVersion`; `kind` when only its kind
    says it is ours (then it may be another tool's file, which `exclude` leaves out)."""
    found = "no apiVersion" if version is None else repr(version)
    message = f"unsupported apiVersion: expected {API_VERSIONS[0]}; found {found}"
    if kind is None:
        return message
    return (
        f"{message}. A document of kind {kind} is read as evalward's: write `apiVersion: "
        f"{API_VERSIONS[0]}`, or, if the file is not evalward's, list it under `exclude` in "
        "evalward.yaml"
    )
