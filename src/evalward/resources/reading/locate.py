"""Locate a field of a resource that has already loaded, for a problem found after the load.

A resource keeps its file, the index of its document and the line the document starts on;
the file is parsed again with marks only when a problem needs its line and column. It is read
through the side's door (files/committed.py), as the definitions were: on a commit side from
git's objects, so a workspace copy another workflow step rewrote never moves a line.
"""

from __future__ import annotations

from typing import Any

from evalward.errors import NotCommitted, Problem, YamlSyntaxError
from evalward.resources.reading.problems import render_path
from evalward.resources.reading.yamlsource import (
    MAX_FILE_BYTES,
    Document,
    PathKey,
    decode,
    parse_documents,
)
from evalward.resources.resource_set import Located, ResourceSet
from evalward.text.escaping import printable


class Locator:
    """Problems at fields of the resources of one ResourceSet; each file parsed at most once."""

    def __init__(self, resources: ResourceSet) -> None:
        self.resources = resources
        self._parsed: dict[str, list[Document]] = {}

    def problem(self, located: Located[Any], loc: PathKey, message: str) -> Problem:
        if located.file in self.resources.agentv_files:
            # A fixture converted from an AgentV case: its fields are not the file's.
            return Problem(located.file, located.line, None, "", message)
        documents = self._documents(located.file)
        if located.document < len(documents):
            line, column = documents[located.document].locate(loc)
        else:
            line, column = located.line, 1
        return Problem(located.file, line, column, render_path(loc), message)

    def _documents(self, file: str) -> list[Document]:
        if file not in self._parsed:
            try:
                text = decode(self.resources.files.read(file, MAX_FILE_BYTES))
                self._parsed[file] = parse_documents(text)
            except (NotCommitted, YamlSyntaxError):
                self._parsed[file] = []
        return self._parsed[file]


def place_of(resources: ResourceSet, located: Located[Any], loc: PathKey) -> str:
    """Where a field of a loaded resource is, as a message names it (`agents/x.yaml:7`)."""
    found = Locator(resources).problem(located, loc, "")
    where = printable(found.file)
    return f"{where}:{found.line}" if found.line is not None else where
