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
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalward.files.safe_files import UnsafeFile, read_regular
from evalward.resources.code_scorer import MAX_SOURCE_CHARS, CodeAssertion, CodeSource
from evalward.resources.models import EvalFixture
from evalward.resources.paths import OutsideRepository, looked_up, repo_path
from evalward.resources.yamlsource import PathKey

ScorerProblem = tuple[PathKey, str]
"""A field of the fixture (from its document's root) and what is wrong there."""

MAX_ENVIRONMENT_FILE_BYTES = 16 * 1024 * 1024
"""The largest file of a scorer's environment (a lock of a few hundred packages: under 1 MB)."""

if TYPE_CHECKING:
    import yaml

FileTexts = dict[str, str | None]
"""Repository paths and their text (None: not there), read once per load: the fixtures that
name one environment share its files' text."""


def embed_scorers(
    fixture: EvalFixture, root: Path, texts: FileTexts | None = None
) -> tuple[EvalFixture, list[ScorerProblem], set[str]]:
    """The fixture with the text of each code scorer's file, and of its environment's files,
    read under `root`; the problems (a file that cannot be read, at its field); the
    repository paths it read. `texts` keeps what one load has read already."""
    assertions = list(fixture.spec.assertions)
    problems: list[ScorerProblem] = []
    reads: set[str] = set()
    texts = {} if texts is None else texts
    changed = False
    for index, assertion in enumerate(assertions):
        if not isinstance(assertion, CodeAssertion):
            continue
        update = _text_of(assertion, ("spec", "assertions", index), root, reads, problems)
        if assertion.environment is not None:
            found = _environment(root, assertion, index, texts, reads)
            if isinstance(found, dict):
                update["environment_files"] = found
                update["environment_digest"] = _digest(assertion, found)
            else:
                problems.append(found)
        if update:
            assertions[index] = assertion.model_copy(update=update)
            changed = True
    spec_update: dict[str, object] = {"assertions": assertions} if changed else {}
    function = fixture.spec.scoring_function
    if function is not None:
        loaded = _text_of(function, ("spec", "scoringFunction"), root, reads, problems)
        if loaded:
            spec_update["scoring_function"] = function.model_copy(update=loaded)
    if not spec_update:
        return fixture, problems, reads
    spec = fixture.spec.model_copy(update=spec_update)
    return fixture.model_copy(update={"spec": spec}), problems, reads


def has_inline(fixture: EvalFixture) -> bool:
    """Whether a code scorer of the fixture is written inline (`source`)."""
    return any(code.source is not None for _, code in code_sources(fixture))


def code_sources(fixture: EvalFixture) -> list[tuple[PathKey, CodeSource]]:
    """Every code scorer of the fixture (its assertions', its scripted turns', its scoring
    function) and where it stands in the fixture's document."""
    spec = fixture.spec
    found: list[tuple[PathKey, CodeSource]] = [
        (("spec", "assertions", index), assertion)
        for index, assertion in enumerate(spec.assertions)
        if isinstance(assertion, CodeAssertion)
    ]
    turns = spec.conversation.turns if spec.conversation is not None else None
    for number, turn in enumerate(turns or []):
        found += [
            (("spec", "conversation", "turns", number, "assertions", index), assertion)
            for index, assertion in enumerate(turn.assertions)
            if isinstance(assertion, CodeAssertion)
        ]
    if spec.scoring_function is not None:
        found.append((("spec", "scoringFunction"), spec.scoring_function))
    return found


class InlinePlaces:
    """Places a fixture's inline scorers (`source_at`: its file and the line its code starts
    on), so that an error in the code is reported where it was written; each file composed
    once a load, and only when a fixture of it holds one."""

    def __init__(self) -> None:
        self._files: dict[str, list[yaml.Node]] = {}

    def place(self, fixture: EvalFixture, file: str, index: int, text: str) -> EvalFixture:
        """`fixture`, the `index`-th document of `file` (whose text is `text`), placed."""
        if file not in self._files:
            self._files[file] = _composed(text)
        documents = self._files[file]
        document = documents[index] if index < len(documents) else None
        placed: dict[PathKey, tuple[str, int]] = {}
        for at, code in code_sources(fixture):
            line = _scalar_start(document, (*at, "source")) if code.source is not None else None
            if line is not None:
                placed[at] = (file, line)
        return _placed(fixture, placed) if placed else fixture


def _composed(text: str) -> list[yaml.Node]:
    """Every document of `text` as libyaml composes it: nodes and their marks, no data built
    (the places of a few values are all that is wanted of them). The text has loaded: what
    nests too deep to walk was refused then, and composing expands no alias."""
    import yaml  # lazy: PyYAML costs 20 ms a start; only an inline scorer's file needs it

    from evalward.resources.yaml12 import CoreLoader  # lazy: it imports PyYAML

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


def _placed(fixture: EvalFixture, placed: dict[PathKey, tuple[str, int]]) -> EvalFixture:
    spec = fixture.spec

    def place(value: Any, *at: str | int) -> Any:
        found = placed.get(at)
        return value if found is None else value.model_copy(update={"source_at": found})

    update: dict[str, object] = {
        "assertions": [place(a, "spec", "assertions", i) for i, a in enumerate(spec.assertions)]
    }
    if spec.conversation is not None and spec.conversation.turns is not None:
        turns = [
            turn.model_copy(
                update={
                    "assertions": [
                        place(a, "spec", "conversation", "turns", t, "assertions", i)
                        for i, a in enumerate(turn.assertions)
                    ]
                }
            )
            for t, turn in enumerate(spec.conversation.turns)
        ]
        update["conversation"] = spec.conversation.model_copy(update={"turns": turns})
    if spec.scoring_function is not None:
        update["scoring_function"] = place(spec.scoring_function, "spec", "scoringFunction")
    return fixture.model_copy(update={"spec": spec.model_copy(update=update)})


def _text_of(
    code: CodeSource, at: PathKey, root: Path, reads: set[str], problems: list[ScorerProblem]
) -> dict[str, object]:
    """`{file_text: ...}` for code written in a file (nothing when inline, or with a problem
    at its `file`), noting the paths read."""
    if code.file is None:
        return {}
    reads.update(looked_up(root, code.path))
    try:
        return {"file_text": _read(root, code.path)}
    except ValueError as exc:
        problems.append(((*at, "file"), f"{exc}"))
        return {}


def _environment(
    root: Path, assertion: CodeAssertion, index: int, texts: FileTexts, reads: set[str]
) -> FileTexts | ScorerProblem:
    """The text of the environment's files (the files it names must be there, their locks
    need not be), or the first problem, at the field that names the file."""
    spec = assertion.environment
    assert spec is not None
    files: FileTexts = {}
    for field in ("python", "node"):
        if getattr(spec, field) is None:
            continue
        alone = spec.model_copy(update={"python": None, "node": None, field: getattr(spec, field)})
        at: PathKey = ("spec", "assertions", index, "environment", field)
        for number, path in enumerate(alone.files()):  # the file it names, then its locks
            reads.update(looked_up(root, path))
            if path not in texts:
                try:
                    texts[path] = _read_environment_file(root, path)
                except ValueError as exc:
                    return at, f"{exc}"
            if texts[path] is None and number == 0:
                return at, (
                    f"the scorer's environment file {path!r} is not in the repository (paths "
                    "are from its root)"
                )
            files[path] = texts[path]
    return files


def _read_environment_file(root: Path, path: str) -> str | None:
    """A file of a scorer's environment as text; None when it is not there."""
    try:
        where = repo_path(root, path)
    except OutsideRepository:
        raise ValueError(
            f"{path!r} leads outside the repository (a symbolic link); a scorer's environment "
            "is built from files of the repository"
        ) from None
    try:
        raw = read_regular(where, MAX_ENVIRONMENT_FILE_BYTES)
    except FileNotFoundError:
        return None
    except UnsafeFile as exc:
        raise ValueError(f"{path!r} {exc.reason}; an environment is built from files") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path!r} is not UTF-8 text") from None


def _digest(assertion: CodeAssertion, files: FileTexts) -> str:
    """What a cache key covers of a scorer's environment: its definition and its files."""
    assert assertion.environment is not None
    material = {
        "environment": assertion.environment.model_dump(mode="json", by_alias=True),
        "files": files,
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _read(root: Path, path: str) -> str:
    try:
        where = repo_path(root, path)
    except OutsideRepository:
        raise ValueError(
            f"the scorer {path!r} leads outside the repository (a symbolic link); a scorer "
            "must be a file of the repository"
        ) from None
    try:
        mode = where.stat().st_mode
    except OSError:
        raise ValueError(
            f"the scorer {path!r} is not in the repository (paths are from its root)"
        ) from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"the scorer {path!r} is not a regular file")
    try:
        raw = where.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read the scorer {path!r}: {exc.strerror}") from None
    if len(raw) > MAX_SOURCE_CHARS * 4:
        raise ValueError(f"the scorer {path!r} is larger than a scorer may be")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"the scorer {path!r} is not UTF-8 text") from None
    if len(text) > MAX_SOURCE_CHARS:
        raise ValueError(f"the scorer {path!r} is longer than {MAX_SOURCE_CHARS} characters")
    return text
