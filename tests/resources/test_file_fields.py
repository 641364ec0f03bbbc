"""Every field of the resource schema that names a repository file is marked `RepoPath`, and
no code outside the door (files/committed.py) opens what such a field names.

The schema is walked from the resource kinds through every nested model. A field whose name
says it holds a file (`…file`, `…File`, `seed`, `python`/`node` of an environment) must carry
the marker; then every function of evalward that reads a marked field and also opens,
reads or copies files itself is a way round the door. The ones not yet routed through it are
listed here by name: a new one fails this test, and one routed must leave the list.
"""

from __future__ import annotations

import ast
import re
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from evalward.resources.common import NamesRepoFile
from evalward.resources.models import KINDS

pytestmark = pytest.mark.unit

SOURCE = Path(__file__).resolve().parents[2] / "src" / "evalward"
DOOR = SOURCE / "files" / "committed.py"
FILE_LIKE = re.compile(r"(?i)(file|seed)$")
ENVIRONMENT_FILES = {("AgentEnvironment", "python"), ("AgentEnvironment", "node")}
PLAYGROUND_FILES = {("StateValueAssertion", "file")}
"""Fields that name a file of the playground a run ends in, not of the repository: read by
scoring/state.py under the playground's own rules."""

OPENS = {"open", "read_bytes", "read_text", "read_regular", "copy_tree", "copyfile", "copy2"}
"""Calls that open, read or copy a file by its path."""

NOT_YET_THROUGH_THE_DOOR: dict[str, str] = {}
"""Modules that still read a marked field's file from the checkout on disk (a path check
only): each is a way round the door until it is routed through it, then leaves this list."""

NOT_A_FIELDS_FILE = {
    "authoring/promote.py": "writes the fixtures file `--output` names; a fixture's place "
    "(`Located.file`) is compared with it, never opened",
    "definitions/loader.py": "reads the definition files themselves (`Located.file`): a "
    "commit side's through `RepoFiles.read_committed`, on disk only the working tree's",
    "runtime/environments/environment.py": "a side's files through `request.files`; on disk "
    "only the folder evalward wrote a scorer's environment into",
    "runtime/playground/base.py": "removes the run's folder (its seeds: `live.source.door`)",
    "runtime/playground/files.py": "reads the run's folder back (its seed: `copy_out`)",
    "runtime/playground/sqlite.py": "reads its template database (its seed: `seed_text`)",
}
"""Modules the name check matches that open no file a field names."""


def _marked(annotation: object) -> bool:
    metadata = getattr(annotation, "__metadata__", ())
    if typing.get_origin(annotation) is typing.Annotated and any(
        isinstance(m, NamesRepoFile) for m in metadata
    ):
        return True
    return any(_marked(arg) for arg in typing.get_args(annotation))


def _models(annotation: object) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models(arg)


def _fields() -> dict[tuple[str, str], bool]:
    """Every (model, field) of the schema reachable from the kinds, and whether it is marked."""
    found: dict[tuple[str, str], bool] = {}
    pending: list[type[BaseModel]] = list(KINDS.values())
    seen: set[type[BaseModel]] = set()
    while pending:
        model = pending.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            marked = _marked(info.annotation) or any(
                isinstance(m, NamesRepoFile) for m in info.metadata
            )
            found[(model.__name__, name)] = marked
            pending.extend(_models(info.annotation))
            for sub in model.__subclasses__():
                pending.append(sub)
    return found


def test_every_field_that_names_a_file_is_marked() -> None:
    fields = _fields()
    unmarked = sorted(
        f"{model}.{name}"
        for (model, name), marked in fields.items()
        if not marked
        and (model, name) not in PLAYGROUND_FILES
        and (FILE_LIKE.search(name) or (model, name) in ENVIRONMENT_FILES)
        and not name.endswith(("max_files", "files"))
    )
    assert unmarked == [], f"fields that name a file without `RepoPath`: {unmarked}"
    marked = {name for (_, name), is_marked in fields.items() if is_marked}
    assert {"system_file", "python", "node", "seed", "file"} <= marked


def _bypasses(marked: set[str], source: Path = SOURCE) -> set[str]:
    """Modules that read a marked field and open, read or copy files by path themselves."""
    found = set()
    for path in source.rglob("*.py"):
        if path == DOOR:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        calls = {
            n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
        }
        if names & marked and calls & OPENS:
            found.add(path.relative_to(source).as_posix())
    return found


def test_only_the_door_opens_what_a_marked_field_names() -> None:
    marked = {name for (_, name), is_marked in _fields().items() if is_marked}
    assert _bypasses(marked) == NOT_YET_THROUGH_THE_DOOR.keys() | NOT_A_FIELDS_FILE.keys()


def test_the_walk_finds_a_bypass_added_later(tmp_path: Path) -> None:
    """The check itself: a reader of `system_file` that opens the file is found."""
    (tmp_path / "reader.py").write_text(
        "def read(spec):\n    return open(spec.system_file).read()\n"
    )
    (tmp_path / "door.py").write_text(
        "def read(spec, files):\n    return files.text(spec.system_file)\n"
    )
    assert _bypasses({"system_file"}, tmp_path) == {"reader.py"}


def test_a_later_file_field_without_the_marker_is_found() -> None:
    class Later(BaseModel):
        prompt_file: str | None = None

    assert not _marked(Later.model_fields["prompt_file"].annotation)
    assert FILE_LIKE.search("prompt_file")
