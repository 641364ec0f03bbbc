"""An agent's YAML with some fields set back to the base's values, the rest untouched.

A revert must change the variant only where the field is: a variant whose file was rewritten
whole (reindented, requoted, comments moved) could behave otherwise for a reason no hunk
names, and its diff would not show the author what was taken back. So each field's lines in
the head are replaced by the base's lines of that field, moved to the head's indentation
(`_spliced`); the result is read back and must be exactly the data the revert means
(`_reverted`, edited on ruamel's round-trip data). Where the splice cannot say it (a field in
a flow mapping, a list's first key removed), the round-trip data is written whole instead.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from evalward.attribution.fields import (
    MISSING,
    AgentYaml,
    FieldPath,
    Place,
    children,
    dump,
    place_of,
    plain,
    round_trip,
    tools_by_name,
    value_at,
)

Edit = tuple[int, int, int, list[str]]
"""(first line, line after the last, the base's line of the field, the new lines): fields
put back at one place go in the base's order."""


def revert_fields(base: AgentYaml, head: AgentYaml, paths: Iterable[FieldPath]) -> str:
    """The head's text with each field of `paths` as the base has it (removed where the base
    lacks it)."""
    paths = list(paths)
    expected = copy.deepcopy(head.documents)
    for path in paths:
        _set_back(expected[head.index], base.data, path)
    spliced = _spliced(base, head, paths)
    if spliced is not None and _reads_as(spliced, expected):
        return spliced
    return dump(head, expected)


def _reads_as(text: str, expected: list[Any]) -> bool:
    try:
        return bool(plain(list(round_trip().load_all(text))) == plain(expected))
    except (YAMLError, ValueError):
        return False


def _set_back(document: Any, base: Any, path: FieldPath) -> None:
    """Set `path` of the round-trip `document` to `base`'s value (a copy), or remove it."""
    parent = value_at(document, path[:-1])
    old = value_at(base, path)
    step = path[-1]
    if step.startswith("[") and isinstance(parent, list):
        names = list(tools_by_name(parent) or {})
        name = step[1:-1]
        if name in names:
            if old is MISSING:
                del parent[names.index(name)]
            else:
                parent[names.index(name)] = copy.deepcopy(old)
        elif old is not MISSING:
            listed = value_at(base, path[:-1])
            order = list(tools_by_name(listed) or {}) if isinstance(listed, list) else []
            parent.insert(_position(names, order, name), copy.deepcopy(old))
    elif isinstance(parent, MutableMapping):
        if old is MISSING:
            parent.pop(step, None)
        elif step in parent or not isinstance(parent, CommentedMap):
            parent[step] = copy.deepcopy(old)
        else:
            order = [str(k) for k in _mapping(value_at(base, path[:-1]))]
            parent.insert(
                _position([str(k) for k in parent], order, step), step, copy.deepcopy(old)
            )


def _position(present: list[str], order: list[str], name: str) -> int:
    """Where `name` goes among `present`: after the last of those before it in `order`."""
    before = order[: order.index(name)] if name in order else []
    found = [present.index(n) for n in before if n in present]
    return max(found) + 1 if found else 0


def _spliced(base: AgentYaml, head: AgentYaml, paths: list[FieldPath]) -> str | None:
    """The head's lines with each field's replaced by the base's; None when a field has no
    place to go in the head's text."""
    lines = head.lines
    edits: list[Edit] = []
    for path in paths:
        edit = _edit(base, head, path)
        if edit is None:
            return None
        edits.append(edit)
    # from the last line up; at one line, what replaces the head's lines there before what
    # goes in above them (a field taken out where the base had another)
    for first, end, _, new in sorted(edits, key=lambda e: (e[0], e[1], e[2]), reverse=True):
        lines[first:end] = new
    return "\n".join(lines)


def _edit(base: AgentYaml, head: AgentYaml, path: FieldPath) -> Edit | None:
    here = place_of(head, path)
    there = place_of(base, path)
    if here is not None:
        prefix = head.lines[here.first][: here.column]
        new = _moved(base, there, prefix) if there is not None else []
        return here.first, here.last + 1, 0, new
    if there is None:
        return None
    siblings = children(head, path[:-1])
    if not siblings:
        return None
    placed = dict(siblings)
    ordered = [name for name, _ in children(base, path[:-1])]
    before = [placed[n] for n in ordered[: ordered.index(path[-1])] if n in placed]
    at: Place = before[-1] if before else siblings[0][1]
    line = at.last + 1 if before else at.first
    tool = path[-1].startswith("[")
    prefix = head.lines[at.first][: at.column] if tool else " " * at.column
    return line, line, there.first, _moved(base, there, prefix)


def _moved(base: AgentYaml, there: Place, prefix: str) -> list[str]:
    """The base's lines of a field, its first line after `prefix` and the rest shifted by as
    many columns as the field moves."""
    lines = base.lines[there.first : there.last + 1]
    shift = len(prefix) - there.column
    moved = [prefix + lines[0][there.column :]]
    for line in lines[1:]:
        if shift >= 0 or not line.strip():
            moved.append(" " * shift + line if line.strip() else line)
        else:
            spaces = len(line) - len(line.lstrip(" "))
            moved.append(line[min(-shift, spaces) :])
    return moved


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
