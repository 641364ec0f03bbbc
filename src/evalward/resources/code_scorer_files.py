"""A fixture's code scorers read from the fixture's own commit, as the fixture loads.

The text of a `code` assertion's `file` (and of a `scoringFunction`'s) becomes part of the
loaded fixture (`file_text`), and the file (with every folder and link on its way) joins what
the fixture's file reads
(`ResourceSet.reads`). So the scorer travels with its fixture: under `gate-config: base` the
fixtures that gate are the base branch's, and so are their scorers, however the pull request
changed the file; and a base fixture parsed on the head is reused only while its scorer's
file is unchanged.
"""

from __future__ import annotations

import stat
from pathlib import Path

from evalward.resources.code_scorer import MAX_SOURCE_CHARS, CodeAssertion
from evalward.resources.models import EvalFixture
from evalward.resources.paths import OutsideRepository, looked_up, repo_path
from evalward.resources.yamlsource import PathKey

ScorerProblem = tuple[PathKey, str]
"""A field of the fixture (from its document's root) and what is wrong there."""


def embed_scorers(
    fixture: EvalFixture, root: Path
) -> tuple[EvalFixture, list[ScorerProblem], set[str]]:
    """The fixture with the text of each code scorer's file, read under `root`; the
    problems (a file that cannot be read, at its `file`); the repository paths it read."""
    assertions = list(fixture.spec.assertions)
    problems: list[ScorerProblem] = []
    reads: set[str] = set()
    changed = False
    for index, assertion in enumerate(assertions):
        if not isinstance(assertion, CodeAssertion) or assertion.file is None:
            continue
        reads.update(looked_up(root, assertion.path))
        at: PathKey = ("spec", "assertions", index, "file")
        try:
            text = _read(root, assertion.path)
        except ValueError as exc:
            problems.append((at, f"{exc}"))
            continue
        assertions[index] = assertion.model_copy(update={"file_text": text})
        changed = True
    update: dict[str, object] = {"assertions": assertions} if changed else {}
    function = fixture.spec.scoring_function
    if function is not None and function.file is not None:
        path = function.file.split(":", 1)[0].lstrip("/")
        reads.update(looked_up(root, path))
        try:
            text = _read(root, path)
        except ValueError as exc:
            problems.append((("spec", "scoringFunction", "file"), f"{exc}"))
        else:
            update["scoring_function"] = function.model_copy(update={"file_text": text})
    if not update:
        return fixture, problems, reads
    spec = fixture.spec.model_copy(update=update)
    return fixture.model_copy(update={"spec": spec}), problems, reads


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
