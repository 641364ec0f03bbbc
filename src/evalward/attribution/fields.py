"""An agent's YAML as fields: which ones a change touches, and on which lines each one sits.

A change to an Agent's definition is not a text diff: moving a key, reindenting or editing a
comment changes nothing the agent does, and one edited tool description is one change however
many lines it spans. So the agent's document is read with ruamel.yaml (its round trip keeps
what a revert must leave untouched, its nodes know their lines) and compared as data, field by
field: a top-level spec field, one tool by name (each of its own fields), one MCP server by
name, one metadata field.

A field is a path of steps (`FieldPath`): mapping keys, and `[name]` for a tool of
`spec.tools`, found by its name, not its position.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, Node, SequenceNode

from evalward.errors import YamlSyntaxError
from evalward.resources.agents.tool_shapes import agent_tool
from evalward.resources.reading.yamlsource import check_shape

FieldPath = tuple[str, ...]
"""Steps from the document's root: keys, and `[name]` for one tool of `spec.tools`."""

TOOLS: FieldPath = ("spec", "tools")
SERVERS: FieldPath = ("spec", "mcpServers")
MISSING: Any = object()
"""A field one side does not have."""


def round_trip() -> YAML:
    """ruamel.yaml as evalward reads and writes an agent's document: round trip, quotes kept,
    lines never rewrapped."""
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 20
    return yaml


@dataclass(frozen=True)
class AgentYaml:
    """One side's YAML file holding the agent: every document's round-trip data (a revert
    writes them all back), which one is the agent's, its node (for lines) and the text."""

    text: str
    documents: list[Any]
    index: int
    node: MappingNode

    @property
    def data(self) -> Any:
        return self.documents[self.index]

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")


def read_agent_yaml(text: str, agent: str) -> AgentYaml | None:
    """The document of `text` that defines the Agent `agent`; None when ruamel cannot read
    the text, its shape is past the loader's bounds (nesting, aliases that expand: a pull
    request writes it), no document defines it, or it names an anchor (the file is then
    compared as text). Through an alias one line's edit changes fields whose own lines are
    as they were: compared as data, the change would be named on a line nobody edited, and
    taking back the edited line would leave the aliased fields as the head has them."""
    try:
        check_shape(text)
        documents, nodes = _documents_and_nodes(text)
    except (YAMLError, ValueError, YamlSyntaxError):
        return None
    for index, (data, node) in enumerate(zip(documents, nodes, strict=True)):
        if is_agent(data, agent) and isinstance(node, MappingNode):
            return None if _anchored(node) else AgentYaml(text, documents, index, node)
    return None


def _anchored(root: Node) -> bool:
    """Whether any node of the document has an anchor (what an alias or merge key names)."""
    seen: set[int] = set()
    left = [root]
    while left:
        node = left.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.anchor is not None:
            return True
        if isinstance(node, SequenceNode):
            left.extend(node.value)
        elif isinstance(node, MappingNode):
            left.extend(part for pair in node.value for part in pair)
    return False


def _documents_and_nodes(text: str) -> tuple[list[Any], list[Node]]:
    """Every document's round-trip data and the node it was built from, from one parse:
    ruamel's load_all then compose_all would read the text twice. Building the data leaves
    each node's marks as composed (it only moves comments and drops a merge key's entry),
    so the lines read from a node are the ones a second compose would give. Through
    compose_all and the constructor's construct_document, as every ruamel.yaml 0.18 and 0.19
    has them (load_all's own document bookkeeping came in 0.18.5)."""
    yaml = round_trip()
    nodes = list(yaml.compose_all(text))
    return [yaml.constructor.construct_document(node) for node in nodes], nodes


def is_agent(data: Any, agent: str) -> bool:
    """Whether a document's data is the Agent named `agent`."""
    if not isinstance(data, Mapping) or data.get("kind") != "Agent":
        return False
    metadata = data.get("metadata")
    return isinstance(metadata, Mapping) and metadata.get("name") == agent


def plain(value: Any) -> Any:
    """Round-trip data as plain dicts and lists, for comparing: key order and comments are
    not part of what the agent does."""
    if isinstance(value, Mapping):
        return {key: plain(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [plain(inner) for inner in value]
    return value


def display(path: FieldPath) -> str:
    """`spec.tools[lookup_order].description`."""
    shown = ""
    for step in path:
        shown += step if step.startswith("[") or not shown else f".{step}"
    return shown


def changed_fields(base: Any, head: Any) -> list[FieldPath]:
    """The fields that differ between the agent's two documents, at the grain an author
    takes one back."""
    found: list[FieldPath] = []
    for key, old, new in _differing(base, head):
        if key == "spec" and isinstance(old, Mapping) and isinstance(new, Mapping):
            found += _spec_fields(old, new)
        elif isinstance(old, Mapping) and isinstance(new, Mapping):
            found += [(key, inner) for inner, _, _ in _differing(old, new)]
        else:
            found.append((key,))
    return found


def _spec_fields(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[FieldPath]:
    found: list[FieldPath] = []
    for key, old, new in _differing(base, head):
        path = ("spec", key)
        if path == TOOLS and isinstance(old, list) and isinstance(new, list):
            found += _tool_fields(old, new)
        elif path == SERVERS and isinstance(old, Mapping) and isinstance(new, Mapping):
            found += [(*SERVERS, name) for name, _, _ in _differing(old, new)]
        else:
            found.append(path)
    return found


def _tool_fields(base: list[Any], head: list[Any]) -> list[FieldPath]:
    """Each tool by name, each of its fields where both sides have it; the whole list when
    the tools are not named one each (or only their order changed)."""
    old, new = tools_by_name(base), tools_by_name(head)
    if old is None or new is None:
        return [TOOLS]
    found: list[FieldPath] = []
    for name, a, b in _differing(old, new):
        tool = (*TOOLS, f"[{name}]")
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            found += [(*tool, key) for key, _, _ in _differing(a, b)]
        else:
            found.append(tool)
    return found or [TOOLS]


def tools_by_name(tools: list[Any]) -> dict[str, Any] | None:
    """The tools by their name (or short-form `type`), in order; None when one has none or
    two share one."""
    named: dict[str, Any] = {}
    for tool in tools:
        shaped = agent_tool(tool)  # a round-trip map is a dict: its name as plain data's
        name = shaped.get("name") or shaped.get("type") if isinstance(shaped, dict) else None
        if not isinstance(name, str) or name in named:
            return None
        named[name] = tool
    return named


def _differing(base: Any, head: Any) -> Iterator[tuple[str, Any, Any]]:
    """(key, base's value, head's value) for every key of either mapping whose values differ
    as plain data: the head's order, then what only the base has."""
    old = base if isinstance(base, Mapping) else {}
    new = head if isinstance(head, Mapping) else {}
    for key in [*new, *(k for k in old if k not in new)]:
        before, after = old.get(key, MISSING), new.get(key, MISSING)
        if plain(before) != plain(after):
            yield str(key), before, after


def value_at(data: Any, path: FieldPath) -> Any:
    """The value at `path`, or MISSING."""
    for step in path:
        if step.startswith("[") and isinstance(data, list):
            data = (tools_by_name(data) or {}).get(step[1:-1], MISSING)
        elif isinstance(data, Mapping):
            data = data.get(step, MISSING)
        else:
            return MISSING
        if data is MISSING:
            return MISSING
    return data


@dataclass(frozen=True)
class Place:
    """Where a field sits in a document's text: its lines (0-based, inclusive) and the column
    its key (or a tool's first key) starts at."""

    first: int
    last: int
    column: int


def place_of(doc: AgentYaml, path: FieldPath) -> Place | None:
    """Where the field at `path` sits in `doc`; None when the document lacks it."""
    data: Any = doc.data
    node: Node = doc.node
    start: Node | None = None
    for step in path:
        found = _child(data, node, step)
        if found is None:
            return None
        data, start, node = found
    if start is None:
        return None
    mark = start.start_mark
    return Place(int(mark.line), _last_line(doc, start, node), int(mark.column))


def children(doc: AgentYaml, path: FieldPath) -> list[tuple[str, Place]]:
    """The fields directly under `path` (a mapping's keys, or the tools by name), with their
    places, in the document's order."""
    parent = value_at(doc.data, path)
    names: list[str] = []
    if isinstance(parent, Mapping):
        names = [str(key) for key in parent]
    elif isinstance(parent, list) and path == TOOLS:
        names = [f"[{name}]" for name in tools_by_name(parent) or {}]
    placed = [(name, place_of(doc, (*path, name))) for name in names]
    return [(name, place) for name, place in placed if place is not None]


def _child(data: Any, node: Node, step: str) -> tuple[Any, Node, Node] | None:
    """(data, the node its lines start at, its value's node) one step down."""
    if step.startswith("[") and isinstance(data, list) and isinstance(node, SequenceNode):
        names = list(tools_by_name(data) or {})
        if step[1:-1] not in names:
            return None
        index = names.index(step[1:-1])
        item: Node = node.value[index]
        return data[index], item, item
    if not isinstance(data, Mapping) or not isinstance(node, MappingNode) or step not in data:
        return None
    for key, value in node.value:
        if key.value == step:
            return data[step], key, value
    return None


def _last_line(doc: AgentYaml, start: Node, value: Node) -> int:
    """The last line a field's value takes, without the blank and comment lines after it."""
    end = value.end_mark
    lines = doc.lines
    last: int = end.line
    if end.line >= len(lines) or lines[end.line][: end.column].strip() in ("", "-"):
        last -= 1  # a block ends where the next token starts: at a line's indentation
    first: int = start.start_mark.line
    while last > first and (not lines[last].strip() or lines[last].lstrip().startswith("#")):
        last -= 1
    return max(last, first)


def dump(doc: AgentYaml, documents: list[Any]) -> str:
    """`documents` written as ruamel writes them, with the indentation `doc`'s text uses."""
    yaml = round_trip()
    mapping, sequence, offset = _indentation(doc.text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    yaml.explicit_start = doc.text.lstrip().startswith("---")
    out = io.StringIO()
    yaml.dump_all(documents, out)
    return out.getvalue()


def _indentation(text: str) -> tuple[int, int, int]:
    """(mapping indent, sequence indent, dash offset) the text's block collections use: the
    first nested key's column, and how far the first dash stands in from its parent's key."""
    mapping = offset = -1
    parent = 0
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        column = len(line) - len(stripped)
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("- ") and offset < 0:
            offset = max(column - parent, 0)
        elif column and mapping < 0 and not stripped.startswith("- "):
            mapping = column
        parent = column
    mapping = mapping if mapping > 0 else 2
    offset = max(offset, 0)
    return mapping, offset + 2, offset
