"""Where every value of a promptfoo configuration stands, and the files it refers to.

A `Node` is a value with its file and key path, so whatever the conversion refuses is reported
at its file, line and column. `Files` reads what a configuration names with `file://` (prompts,
tests, vars, schemas), from the configuration's folder and never from outside the repository
it is in: what it reads ends up in files a user commits.
"""

from __future__ import annotations

import csv
import glob
import io
import stat
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalward.errors import Problem, Refused, YamlSyntaxError
from evalward.files.inside import mode_of
from evalward.resources.reading.problems import did_you_mean, render_path
from evalward.resources.reading.yamlsource import (
    MAX_FILE_BYTES,
    Document,
    PathKey,
    decode,
    parse_documents,
)
from evalward.text import jsontext

MAX_REF_DEPTH = 20


@dataclass(frozen=True)
class Source:
    shown: str
    """The file as the user named it (relative to where evalward runs when it can be)."""
    document: Document


@dataclass(frozen=True)
class Node:
    """A value of the configuration, where it stands, and the document it belongs to."""

    value: Any
    source: Source
    path: PathKey = ()

    def where(self) -> tuple[int, int]:
        return self.source.document.locate(self.path)

    def problem(self, message: str) -> Problem:
        line, column = self.where()
        return Problem(self.source.shown, line, column, render_path(self.path), message)

    def refuse(self, message: str, *, droppable: bool = True) -> Refused:
        return Refused(self.problem(message), droppable=droppable)

    def refuse_key(
        self, key: str, of: str, known: Collection[str], *, droppable: bool = True
    ) -> Refused:
        """This node's `key` (of a test, of a provider) is none of `known`. One close to a
        known key is a misspelling: named with it, and never left out by --skip-unsupported,
        which would leave out what holds it (a test whose `assert` was misspelt)."""
        meant = did_you_mean(key, known)
        if meant:
            return self.refuse(
                f"`{key}`{of} has no equivalent in evalward{meant}: fix its name; a misspelt "
                "key is not left out by --skip-unsupported",
                droppable=False,
            )
        return self.refuse(f"`{key}`{of} has no equivalent in evalward", droppable=droppable)

    def get(self, key: str) -> Node | None:
        if not isinstance(self.value, dict) or key not in self.value:
            return None
        return Node(self.value[key], self.source, (*self.path, key)).deref()

    def items(self) -> list[tuple[str, Node]]:
        if not isinstance(self.value, dict):
            raise self.refuse(f"expected a mapping, found {_kind(self.value)}", droppable=False)
        items = self.value.items()
        return [(str(k), Node(v, self.source, (*self.path, k)).deref()) for k, v in items]

    def elements(self) -> list[Node]:
        """The items of a list; a single value counts as a list of one (promptfoo's rule)."""
        if not isinstance(self.value, list):
            return [self]
        return [Node(v, self.source, (*self.path, i)).deref() for i, v in enumerate(self.value)]

    def deref(self) -> Node:
        """Follow `$ref: '#/a/b'` to what it names in the same document."""
        node = self
        for _ in range(MAX_REF_DEPTH):
            if not (isinstance(node.value, dict) and set(node.value) == {"$ref"}):
                return node
            ref = node.value["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#/"):
                raise node.refuse("only references within the file (`#/...`) are followed")
            target: Any = node.source.document.data
            path: list[str | int] = []
            for part in ref[2:].split("/"):
                key: str | int = part.replace("~1", "/").replace("~0", "~")
                if isinstance(target, list) and isinstance(key, str) and key.isdigit():
                    key = int(key)
                try:
                    target = target[key]
                except (KeyError, IndexError, TypeError):
                    raise node.refuse(f"{ref!r} names nothing in the file") from None
                path.append(key)
            node = Node(target, node.source, tuple(path))
        raise self.refuse(f"references nest deeper than {MAX_REF_DEPTH} (a cycle?)")


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else repr(value)


@dataclass
class Files:
    """Reads what the configuration names, from its folder, inside `root` only."""

    base: Path
    root: Path
    shown_from: Path
    _loaded: dict[Path, Source] = field(default_factory=dict)

    def path_of(self, node: Node, reference: str) -> Path:
        name = reference.removeprefix("file://")
        if "\0" in name:  # no file's name holds one: resolving it raises ValueError
            raise node.refuse(f"{name!r} holds a NUL character; name a file", droppable=False)
        try:
            path = (self.base / name).resolve()
        except (OSError, RuntimeError):  # RuntimeError: links that loop (OSError from 3.13)
            raise node.refuse(
                f"{name!r} is a symbolic link that loops; point it at a file", droppable=False
            ) from None
        if not path.is_relative_to(self.root):
            raise node.refuse(
                f"{name!r} is outside the repository ({self.root}); the import reads only "
                "files inside it, as what it reads goes into files you commit",
                droppable=False,
            )
        mode = mode_of(path)  # None for a name longer than the file system holds, too
        if mode is None or not stat.S_ISREG(mode):
            raise node.refuse(f"{name!r} is not a file (read from {self.base})", droppable=False)
        if path.stat().st_size > MAX_FILE_BYTES:
            raise node.refuse(f"{name!r} is larger than {MAX_FILE_BYTES} bytes", droppable=False)
        return path

    def glob(self, node: Node, reference: str) -> list[Path]:
        """The files a `file://` reference names: one, or every match of a glob, sorted."""
        name = reference.removeprefix("file://")
        if not glob.has_magic(name):
            return [self.path_of(node, name)]
        try:
            found = sorted(self.base.glob(name))
        except (ValueError, NotImplementedError) as exc:
            raise node.refuse(f"{name!r}: {exc}", droppable=False) from None
        paths = [self.path_of(node, str(match)) for match in found if match.is_file()]
        if not paths:
            raise node.refuse(f"{name!r} matches no file (from {self.base})", droppable=False)
        return paths

    def text(self, node: Node, path: Path) -> str:
        try:
            return decode(path.read_bytes())
        except (OSError, YamlSyntaxError) as exc:
            raise node.refuse(f"cannot read {path.name}: {exc}", droppable=False) from None

    def shown(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.shown_from))
        except ValueError:
            return str(path)

    def document(self, node: Node, path: Path) -> Node:
        """A YAML, JSON, JSONL or CSV file as one Node (a JSONL or CSV file: a list of rows)."""
        if path not in self._loaded:
            text = self.text(node, path)
            shown = self.shown(path)
            try:
                if path.suffix == ".jsonl":
                    document = _jsonl(text)
                elif path.suffix == ".csv":
                    document = _csv(text)
                else:
                    documents = parse_documents(text)
                    document = documents[0] if documents else Document(None, 1)
            except YamlSyntaxError as exc:
                problem = Problem(shown, exc.line, exc.column, "", str(exc))
                raise Refused(problem, droppable=False) from None
            except ValueError as exc:
                raise node.refuse(f"cannot read {shown}: {exc}", droppable=False) from None
            self._loaded[path] = Source(shown, document)
        source = self._loaded[path]
        return Node(source.document.data, source)


def _jsonl(text: str) -> Document:
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    rows = [jsontext.loads(line) for _, line in lines]
    return Document(rows, 1, {(index,): (n, 1) for index, (n, _) in enumerate(lines)})


def _csv(text: str) -> Document:
    """Rows as mappings of column to cell, each row marked at its line."""
    reader = csv.DictReader(io.StringIO(text))
    lines = [(reader.line_num, row) for row in reader]  # each row with its (last) line
    rows = [{str(k).strip(): v or "" for k, v in row.items() if k is not None} for _, row in lines]
    return Document(rows, 1, {(index,): (n, 1) for index, (n, _) in enumerate(lines)})
