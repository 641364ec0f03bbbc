"""A fixture's code scorers read from the fixture's own commit, as the fixture loads.

The text of a `code` assertion's `file` (and of a `scoringFunction`'s) becomes part of the
loaded fixture (`file_text`), and the file (with every folder and link on its way) joins what
the fixture's file reads
(`ResourceSet.reads`). So the scorer travels with its fixture: under `gate-config: base` the
fixtures that gate are the base branch's, and so are their scorers, however the pull request
changed the file; and a base fixture parsed on the head is reused only while its scorer's
file is unchanged. The files of a scorer's `environment` (its requirements file or project and
their locks) are read the same way (`environment_files`), and what the environment is built
from is them alone: a pull request's edit to them changes nothing the base's scorer runs with.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from evalward.errors import NotCommitted
from evalward.files.committed import RepoFiles
from evalward.files.inside import looked_up
from evalward.resources.checks.assertions import Assertion, AssertSetAssertion
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.resources.checks.code_source import MAX_SOURCE_CHARS, CodeSource
from evalward.resources.models import EvalFixture
from evalward.resources.reading.yamlsource import PathKey

ScorerProblem = tuple[PathKey, str]
"""A field of the fixture (from its document's root) and what is wrong there."""

MAX_ENVIRONMENT_FILE_BYTES = 16 * 1024 * 1024
"""The largest file of a scorer's environment (a lock of a few hundred packages: under 1 MB)."""

if TYPE_CHECKING:
    import yaml

Code = TypeVar("Code", bound=CodeSource)

FileTexts = dict[str, str | None]
"""Repository paths and their text (None: not there), read once per load: the fixtures that
name one environment share its files' text."""


def embed_scorers(
    fixture: EvalFixture, door: RepoFiles, texts: FileTexts
) -> tuple[EvalFixture, list[ScorerProblem], set[str]]:
    """The fixture with the text of each code scorer's file (in groups too), of its
    environment's files and of every transform's file, read through the side's door (its
    commit's files: files/committed.py); the problems (a file that cannot be read, at its
    field); the repository paths it read. `texts` keeps what one load has read already."""
    reading = _Reading(door, texts)
    for at, code in code_sources(fixture):
        read = reading.with_text(code, at)
        if isinstance(read, CodeAssertion) and read.environment is not None:
            found = reading.environment(read, at)
            if isinstance(found, dict):
                digest = _digest(read, found)
                update = {"environment_files": found, "environment_digest": digest}
                read = read.model_copy(update=update)
            else:
                reading.problems.append(found)
        if read is not code:
            fixture = _replaced(fixture, at, read)
    return fixture, reading.problems, reading.reads


class _Reading:
    """The files one fixture's code reads, as they are read: their paths and problems."""

    def __init__(self, door: RepoFiles, texts: FileTexts) -> None:
        self.door = door
        self.texts = texts
        self.reads: set[str] = set()
        self.problems: list[ScorerProblem] = []

    def with_text(self, code: Code, at: PathKey) -> Code:
        """`code` with the text of its file (`file_text`): unchanged when inline, or with a
        problem at its `file`; the paths read are noted."""
        if code.file is None:
            return code
        self.reads.update(looked_up(self.door.root, code.path))
        try:
            return code.model_copy(update={"file_text": _read(self.door, code.path)})
        except ValueError as exc:
            self.problems.append(((*at, "file"), f"{exc}"))
            return code

    def environment(self, assertion: CodeAssertion, where: PathKey) -> FileTexts | ScorerProblem:
        """The text of the environment's files (the files it names must be there, their locks
        need not be), or the first problem, at the field that names the file."""
        spec = assertion.environment
        assert spec is not None
        files: FileTexts = {}
        for field, named in spec.named().items():
            alone = spec.model_copy(update={"python": None, "node": None, field: named})
            at: PathKey = (*where, "environment", field)
            for number, path in enumerate(alone.files()):  # the file it names, then its locks
                self.reads.update(looked_up(self.door.root, path))
                if path not in self.texts:
                    try:
                        self.texts[path] = _read_environment_file(self.door, path)
                    except ValueError as exc:
                        return at, f"{exc}"
                if self.texts[path] is None and number == 0:
                    return at, (
                        f"the scorer's environment file {path!r} is not in the repository (paths "
                        "are from its root)"
                    )
                files[path] = self.texts[path]
        return files


def code_sources(fixture: EvalFixture) -> list[tuple[PathKey, CodeSource]]:
    """Every piece of code of the fixture (its assertions' scorers and transforms, a group's
    members' too, its scripted turns', its transform and its scoring function) and where it
    stands in the fixture's document."""
    spec = fixture.spec
    found = _assertion_sources(spec.assertions, ("spec", "assertions"))
    turns = spec.conversation.turns if spec.conversation is not None else None
    for number, turn in enumerate(turns or []):
        at: PathKey = ("spec", "conversation", "turns", number, "assertions")
        found += _assertion_sources(turn.assertions, at)
    if spec.transform is not None:
        found.append((("spec", "transform"), spec.transform))
    if spec.scoring_function is not None:
        found.append((("spec", "scoringFunction"), spec.scoring_function))
    return found


def _assertion_sources(
    assertions: Sequence[Assertion], at: PathKey
) -> list[tuple[PathKey, CodeSource]]:
    found: list[tuple[PathKey, CodeSource]] = []
    for index, assertion in enumerate(assertions):
        if isinstance(assertion, CodeAssertion):
            found.append(((*at, index), assertion))
        if isinstance(assertion, AssertSetAssertion):
            found += _assertion_sources(assertion.assertions, (*at, index, "assertions"))
        if assertion.transform is not None:
            found.append(((*at, index, "transform"), assertion.transform))
    return found


class InlinePlaces:
    """Places a fixture's inline scorers (`source_at`: its file and the line its code starts
    on), so that an error in the code is reported where it was written; each file composed
    once a load, and only when a fixture of it holds one."""

    def __init__(self) -> None:
        self._files: dict[str, list[yaml.Node]] = {}

    def place(self, fixture: EvalFixture, file: str, index: int, text: str) -> EvalFixture:
        """`fixture`, the `index`-th document of `file` (whose text is `text`), placed."""
        inline = [(at, code) for at, code in code_sources(fixture) if code.source is not None]
        if not inline:
            return fixture
        if file not in self._files:
            self._files[file] = _composed(text)
        documents = self._files[file]
        document = documents[index] if index < len(documents) else None
        for at, code in inline:
            line = _scalar_start(document, (*at, "source"))
            if line is not None:
                placed = code.model_copy(update={"source_at": (file, line)})
                fixture = _replaced(fixture, at, placed)
        return fixture


def _composed(text: str) -> list[yaml.Node]:
    """Every document of `text` as libyaml composes it: nodes and their marks, no data built
    (the places of a few values are all that is wanted of them). The text has loaded: what
    nests too deep to walk was refused then, and composing expands no alias."""
    import yaml  # lazy: PyYAML costs 20 ms a start; only an inline scorer's file needs it

    from evalward.resources.reading.yaml12 import CoreLoader  # lazy: it imports PyYAML

    loader = CoreLoader(text)
    nodes: list[yaml.Node] = []
    try:
        while loader.check_node():
            nodes.append(loader.get_node())
    except yaml.YAMLError:
        return []  # the load words and locates it
    finally:
        loader.dispose()
    return nodes


def _scalar_start(node: yaml.Node | None, path: PathKey) -> int | None:
    """The line (1-based) the text of the scalar at `path` of a composed document starts on:
    a block scalar's (`|`, `>`) is the line after its indicator. None: no scalar there."""
    import yaml  # lazy: imported by `_composed` first, which made `node`

    for key in path:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            return None
    if not isinstance(node, yaml.ScalarNode):
        return None
    return int(node.start_mark.line) + (2 if node.style in ("|", ">") else 1)


def _replaced(value: Any, at: PathKey, code: CodeSource) -> Any:
    """`value` (a model, or a list of them) with `code` at `at`, a path of its document
    (`code_sources`): what the path goes through is copied, the rest kept."""
    if not at:
        return code
    key, rest = at[0], at[1:]
    if isinstance(value, list):
        return [_replaced(item, rest, code) if i == key else item for i, item in enumerate(value)]
    name = next(n for n, info in type(value).model_fields.items() if (info.alias or n) == key)
    return value.model_copy(update={name: _replaced(getattr(value, name), rest, code)})


def _read_environment_file(door: RepoFiles, path: str) -> str | None:
    """A file of a scorer's environment as text, from the side's commit; None when it has
    none there (a lock need not be)."""
    try:
        return door.text(path, MAX_ENVIRONMENT_FILE_BYTES)
    except NotCommitted as exc:
        if exc.reason.startswith(("does not exist", "is not a file of")):
            return None  # not committed: as if not there (a runner's file is never read)
        if exc.reason.startswith("leads out"):
            raise ValueError(
                f"{path!r} leads outside the repository (a symbolic link); a scorer's "
                "environment is built from files of the repository"
            ) from None
        raise ValueError(f"{path!r} {exc.reason}; an environment is built from files") from None


def _digest(assertion: CodeAssertion, files: FileTexts) -> str:
    """What a cache key covers of a scorer's environment: its definition and its files."""
    assert assertion.environment is not None
    material = {
        "environment": assertion.environment.model_dump(mode="json", by_alias=True),
        "files": files,
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _read(door: RepoFiles, path: str) -> str:
    try:
        text = door.text(path, MAX_SOURCE_CHARS * 4)
    except NotCommitted as exc:
        if exc.reason.startswith("does not exist"):
            raise ValueError(
                f"the scorer {path!r} is not in the repository (paths are from its root)"
            ) from None
        if exc.reason.startswith("leads out"):
            raise ValueError(
                f"the scorer {path!r} leads outside the repository (a symbolic link); a "
                "scorer must be a file of the repository"
            ) from None
        if exc.reason.startswith("is larger than"):
            raise ValueError(f"the scorer {path!r} is larger than a scorer may be") from None
        raise ValueError(f"the scorer {path!r} {exc.reason}") from None
    if len(text) > MAX_SOURCE_CHARS:
        raise ValueError(f"the scorer {path!r} is longer than {MAX_SOURCE_CHARS} characters")
    return text
