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

from evalward.files.safe_files import UnsafeFile, read_regular
from evalward.resources.assertions import Assertion, AssertSetAssertion
from evalward.resources.code_scorer import CodeAssertion
from evalward.resources.code_source import MAX_SOURCE_CHARS, CodeSource
from evalward.resources.models import EvalFixture
from evalward.resources.paths import OutsideRepository, looked_up, repo_path
from evalward.resources.yamlsource import PathKey

ScorerProblem = tuple[PathKey, str]
"""A field of the fixture (from its document's root) and what is wrong there."""

MAX_ENVIRONMENT_FILE_BYTES = 16 * 1024 * 1024
"""The largest file of a scorer's environment (a lock of a few hundred packages: under 1 MB)."""

FileTexts = dict[str, str | None]
"""Repository paths and their text (None: not there), read once per load: the fixtures that
name one environment share its files' text."""


def embed_scorers(
    fixture: EvalFixture, root: Path, texts: FileTexts | None = None
) -> tuple[EvalFixture, list[ScorerProblem], set[str]]:
    """The fixture with the text of each code scorer's file (in groups too), of its
    environment's files and of every transform's file, read under `root`; the problems (a
    file that cannot be read, at its field); the repository paths it read. `texts` keeps what
    one load has read already."""
    reading = _Reading(root, texts if texts is not None else {})
    assertions = reading.assertions(list(fixture.spec.assertions), ("spec", "assertions"))
    spec_update: dict[str, object] = {}
    if assertions != fixture.spec.assertions:
        spec_update["assertions"] = assertions
    for key, name in (("scoring_function", "scoringFunction"), ("transform", "transform")):
        code = getattr(fixture.spec, key)
        if code is not None:
            loaded = _text_of(code, ("spec", name), root, reading.reads, reading.problems)
            if loaded:
                spec_update[key] = code.model_copy(update=loaded)
    if not spec_update:
        return fixture, reading.problems, reading.reads
    spec = fixture.spec.model_copy(update=spec_update)
    return fixture.model_copy(update={"spec": spec}), reading.problems, reading.reads


class _Reading:
    """The files one fixture's code reads, as they are read: their paths and problems."""

    def __init__(self, root: Path, texts: FileTexts) -> None:
        self.root = root
        self.texts = texts
        self.reads: set[str] = set()
        self.problems: list[ScorerProblem] = []

    def assertions(self, assertions: list[Assertion], at: PathKey) -> list[Assertion]:
        """`assertions` (at `at`) with their code's text, a group's members' too."""
        return [self.assertion(a, (*at, index)) for index, a in enumerate(assertions)]

    def assertion(self, assertion: Assertion, at: PathKey) -> Assertion:
        update: dict[str, object] = {}
        if isinstance(assertion, AssertSetAssertion):
            members = self.assertions(list(assertion.assertions), (*at, "assertions"))
            if members != assertion.assertions:
                update["assertions"] = members
        if isinstance(assertion, CodeAssertion):
            update |= _text_of(assertion, at, self.root, self.reads, self.problems)
            if assertion.environment is not None:
                found = _environment(self.root, assertion, at, self.texts, self.reads)
                if isinstance(found, dict):
                    update["environment_files"] = found
                    update["environment_digest"] = _digest(assertion, found)
                else:
                    self.problems.append(found)
        if assertion.transform is not None:
            where = (*at, "transform")
            loaded = _text_of(assertion.transform, where, self.root, self.reads, self.problems)
            if loaded:
                update["transform"] = assertion.transform.model_copy(update=loaded)
        return assertion.model_copy(update=update) if update else assertion


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
    root: Path, assertion: CodeAssertion, where: PathKey, texts: FileTexts, reads: set[str]
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
        at: PathKey = (*where, "environment", field)
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
