"""JSON from outside (model providers, agents, their tool calls, trace files) decoded into text
that evalward can write.

JSON may spell half of a UTF-16 surrogate pair (`"\\ud83d"`), and its bytes may not be UTF-8
(`ED A0 80`, which `json.loads` decodes to a lone surrogate too). `json.loads` turns either into
a str no UTF-8 writer accepts, so one such character in an agent's output would make every file
of the run, the trace spool and the result cache fail to write. A byte that is not UTF-8 and a
lone surrogate, escaped or in the text given, become U+FFFD (`text/utf8.py`); pairs are joined.

`json.loads` also reads `NaN`, `Infinity` and numbers too large for a float (`1e999`, read
as infinity), none of which JSON has or a strict writer writes: one in an agent's event
would make results.json unreadable to every other JSON reader. They are refused as JSON
that does not parse.

Where a JSON document decides something (a grader's verdict, a judge's, a state dump), a key
given twice is refused too (`unique_keys`): `json.loads` keeps the last, so text spliced into
a document by hand could add a `"pass": true` of its own after the writer's.
"""

from __future__ import annotations

import gc
import json
import math
import re
from typing import Any

from evalward.errors import DuplicateKey
from evalward.text import utf8

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


AGENT_DEPTH = 64
"""How deeply JSON an agent writes may nest (its events, exports, replies, request bodies):
far more than any real one, and few enough that what it holds can be written again (a
trace step's arguments nested 500 deep would make results.json unwritable)."""


def loads(
    raw: str | bytes,
    *,
    max_depth: int | None = None,
    finite: bool = True,
    unique_keys: bool = False,
) -> Any:
    """`json.loads` as the module's docstring says; text without surrogate escapes costs one
    regex scan more, and a str that is not ASCII one encoding (`utf8.writable`). Nesting too
    deep for the parser (`[[[[…` 200,000 times) is a ValueError, like any other JSON that
    does not parse, not a RecursionError that would end the run; so is, with `max_depth`
    (`AGENT_DEPTH` for what an agent writes), nesting deeper than it.
    `finite=False` reads `NaN` and infinities as floats, for a reader that checks each value
    itself and drops only the item that holds one (a score log a restore mangled).
    `unique_keys` (DuplicateKey, a ValueError) is read by orjson where that gives what this
    parse would (`_fast`)."""
    if isinstance(raw, str):
        raw = utf8.writable(raw)
    if unique_keys and finite:
        fast = _fast(raw, max_depth)
        if fast is not _SLOW:
            return fast
    # decoded here, not by `json.loads`: it decodes with `surrogatepass` (`ED A0 80` would be
    # U+D800) or fails on any other byte that is not UTF-8
    text = raw if isinstance(raw, str) else raw.decode(json.detect_encoding(raw), "replace")
    hook = _unique if unique_keys else None
    try:
        data = (
            json.loads(
                text, parse_float=_finite, parse_constant=_no_constant, object_pairs_hook=hook
            )
            if finite
            else json.loads(text, object_pairs_hook=hook)
        )
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if max_depth is not None:
        check_depth(data, max_depth)
    return _clean(data) if _SURROGATE_ESCAPE.search(text) else data


_SLOW = object()
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19
_ESCAPED_COLON = re.compile(rb"\\u003[aA]")


def _fast(raw: str | bytes, max_depth: int | None) -> Any:
    """The document as `loads(raw, unique_keys=True)` reads it, by orjson (a parse in C: a
    1.5 MB state in about a third of the time), or _SLOW where orjson may read it otherwise,
    so that the parse above decides (and names what it refuses):
    - what orjson refuses (it refuses all that `json.loads` does, and bytes that are not
      UTF-8, which this module reads as U+FFFD);
    - an escaped surrogate, cleaned above; a run of 19 digits (orjson reads an integer past
      64 bits as a float);
    - a key given twice, which orjson keeps the last of. Every `:` outside a string
      separates one key from its value, and orjson writes each `:` within a string as
      itself: the text and the document written again hold as many `:` unless a key was
      dropped (the dropped pair's own `:` at least), or unless the text spells one as
      `\\u003a`, which is left to the parse above;
    - nesting that may pass `max_depth`. The document is written again indented by two
      spaces a level, each item on a line of its own (a string holds no line break): a
      container nested past `max_depth` is an item of one `max_depth` deep, whose items are
      indented `2 * max_depth`. A document with no line indented that far nests no deeper;
      one with such a line is walked by `check_depth`."""
    data = raw.encode() if isinstance(raw, str) else raw
    if (
        _SURROGATE_ESCAPE_BYTES.search(data)
        or _ESCAPED_COLON.search(data)
        or _LONG_NUMBER in data.translate(_DIGITS_AS_ZERO)  # in C: a regex took 20 ms
    ):
        return _SLOW
    # lazy: importing it takes about 20 ms, and only a document that decides something
    # (a state, a verdict) is read by it
    import orjson

    # a 1.5 MB state is some 100,000 new objects, none in a cycle: a collection during the
    # parse would walk them for nothing (with the runs in flight holding theirs, it took
    # half of the parse's time)
    collecting = gc.isenabled()
    gc.disable()
    try:
        document = orjson.loads(data)
        written = orjson.dumps(document, option=orjson.OPT_INDENT_2)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return _SLOW
    finally:
        if collecting:
            gc.enable()
    if data.count(b":") != written.count(b":"):
        return _SLOW
    if max_depth is not None and b"\n" + b" " * (2 * max_depth) in written:
        check_depth(document, max_depth)
    return document


_CONTAINERS = (dict, list)


def check_depth(value: Any, limit: int) -> None:
    """Refuse (ValueError) a document whose lists and objects nest more than `limit` deep.
    It walks level by level, each level's containers in one list built by a comprehension:
    a 1.5 MB state is checked in about half the time a walk value by value takes, and what
    it holds at once is one level's containers, never more than the document has."""
    level = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            raise ValueError(f"JSON nested more than {limit} deep")
        level = [
            item
            for container in level
            for item in (container.values() if isinstance(container, dict) else container)
            if isinstance(item, _CONTAINERS)
        ]


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object, built at C speed; only one that lost a key to a repeat is walked, to
    name the key."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return found


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON value")


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return utf8.writable(value)
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {_clean(key): _clean(item) for key, item in value.items()}
    return value
