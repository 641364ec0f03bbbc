"""A service's state read as what changed since its tag: delta encoding in HTTP (RFC 3229)
with a JSON Patch (RFC 6902) for the delta. A read that sends back the tag of a document
evalward kept (`state_tags.py`) also says `A-IM: json-patch`; a service that can answers
`226 IM Used`, `IM: json-patch`, with the operations that turn the tagged state into its
state now. evalward applies them to its kept document, copying only the objects on each
operation's way: the kept document is every run's of the job and never changes, and a run
whose agent changed one record costs the service and evalward that record, not the whole
state (docs/benchmarks.md, "State at a benchmark's size").

The service is the side's own code, trusted as far as its state answers are; a delta is
still held to what bounds a whole state. Its body is read up to STATE_LIMIT bytes, as
strict JSON; what it makes is nested at most AGENT_DEPTH deep and is at most STATE_LIMIT
bytes (measured only when the state it patches, its body and what its `move` and `copy`
operations copy could pass it; those copies are counted as they are made, so no patch
doubles a state past the bound). An operation that does not apply (a path that is not
there, a `test` that fails) is the run's error, located by its index. So is a 226 to a
read that asked for no delta, with another IM or against another base.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonpatch
import jsonpointer

from evalward.errors import PlaygroundError, printable
from evalward.http.client import Reply
from evalward.rundata.playground_state import Derived, json_size, same
from evalward.runtime.playground.base import STATE_LIMIT, LivePlayground
from evalward.text import jsontext
from evalward.text.cuts import cap_chars

IM = "json-patch"
"""The instance-manipulation evalward asks for (`A-IM`) and reads (`IM`)."""
OPERATIONS = ("add", "remove", "replace", "move", "copy", "test")
_SHOWN = 160


def asked(tag: str) -> dict[str, str]:
    """The headers of a state read that sends back `tag`: the state only if it changed,
    and then as a delta from the tagged one where the service can give one."""
    return {"if-none-match": tag, "a-im": IM}


def patched(live: LivePlayground, where: str, held: tuple[str, Any, int], reply: Reply) -> Any:
    """The state a 226 answer (`reply`) gives: its JSON Patch applied to the document kept
    with the tag the read sent (`held`: the tag, the document, the bytes it was read from),
    which is never changed. PlaygroundError, naming `where`, for an answer that is not a
    delta from it or a patch that does not apply."""
    sent, base, base_size = held
    headers, body = reply.headers, reply.body
    used = [value.strip().lower() for value in headers.get("im", "").split(",") if value.strip()]
    if used != [IM]:
        shown = cap_chars(printable(headers.get("im", "")), _SHOWN) or "none"
        raise live.error(f"{where} answered 226 IM Used with IM {shown!r}, not {IM!r}")
    delta_base = headers.get("delta-base")
    if delta_base is not None and delta_base != sent:
        raise live.error(f"{where} answered a delta from another state than the one it was sent")
    try:
        operations = jsontext.loads(body, max_depth=jsontext.AGENT_DEPTH + 2, unique_keys=True)
    except ValueError as exc:
        raise live.error(f"{where} answered a delta that is not JSON ({exc})") from None
    if not isinstance(operations, list):
        raise live.error(f"{where} answered a delta that is not a list of operations")
    patching = _Patching(live, where, base)
    document = patching.apply(operations)
    if base_size + len(body) + patching.copied > STATE_LIMIT and json_size(document) > STATE_LIMIT:
        raise live.error(
            f"{where} answered a delta that makes a state larger than {STATE_LIMIT:,} bytes"
        )
    return document


class _Patching:
    """A patch applied to a document shared with other runs: each container on an
    operation's way is copied the first time (`_own_way`), and only copies are changed."""

    def __init__(self, live: LivePlayground, where: str, base: Any) -> None:
        self.live, self.where = live, where
        self.root = base
        self.owned: dict[int, Any] = {}
        """The containers this patch copied, by id: the only ones it changes. Holding them
        keeps their ids from being given to another object."""
        self.touched: dict[int, set[Any]] = {}
        """The keys each copied object's operations changed, by its id: every other key
        holds the shared object's own value (a `Derived`'s `changed`)."""
        self.copied = 0
        """Bytes its `move` and `copy` operations copied (the library inserts a copy of
        what they move): bounded, so no patch doubles a state past STATE_LIMIT, nor takes
        the time of copying one over and over."""

    def apply(self, operations: list[Any]) -> Any:
        for index, operation in enumerate(operations):
            try:
                self._one(operation)
            except (
                jsonpatch.JsonPatchException,
                jsonpointer.JsonPointerException,
                KeyError,
                IndexError,
                TypeError,
                ValueError,
            ) as exc:
                raise self._error(index, operation, str(exc)) from None
        for made in self.owned.values():
            if isinstance(made, Derived):
                made.settle(self.touched.get(id(made), ()))
        return self.root

    def _one(self, operation: Any) -> None:
        if not isinstance(operation, dict):
            raise ValueError("it is not an object")
        op, path = operation.get("op"), operation.get("path")
        if op not in OPERATIONS:
            raise ValueError(f"`op` is not one of {', '.join(OPERATIONS)}")
        if not isinstance(path, str):
            raise ValueError("`path` is not a string")
        parts = jsonpointer.JsonPointer(path).parts
        if op in ("add", "replace", "test") and "value" not in operation:
            raise ValueError(f"a `{op}` has no `value`")
        if op == "test":
            found = jsonpointer.JsonPointer(path).resolve(self.root)
            if not same(operation["value"], found):
                raise ValueError("the value there is another")
            return
        if op in ("move", "copy"):
            source = operation.get("from")
            if not isinstance(source, str):
                raise ValueError(f"a `{op}` has no `from` string")
            self._moved(op, source, path, parts)
            return
        if op != "remove":
            jsontext.check_depth(operation["value"], jsontext.AGENT_DEPTH - len(parts))
        self._library(operation, parts)

    def _moved(self, op: str, source: str, path: str, parts: list[str]) -> None:
        """`move` and `copy` as the standard defines them (a `remove` of `from` for a move,
        then an `add` of its value at `path`), each on an owned way."""
        origin = jsonpointer.JsonPointer(source).parts
        if source == path and op == "move":
            jsonpointer.JsonPointer(source).resolve(self.root)  # there, or it does not apply
            return
        if op == "move" and parts[: len(origin)] == origin:
            raise ValueError("`from` is a parent of `path`: a value cannot move into itself")
        value = jsonpointer.JsonPointer(source).resolve(self.root)
        if len(parts) > len(origin):  # deeper than it was: nested as deep as allowed?
            jsontext.check_depth(value, jsontext.AGENT_DEPTH - len(parts))
        self.copied += json_size(value)  # the library copies what it inserts
        if self.copied > STATE_LIMIT:
            raise ValueError(f"it moves or copies more than the {STATE_LIMIT:,} bytes of a state")
        if op == "move":
            self._library({"op": "remove", "path": source}, origin)
        self._library({"op": "add", "path": path, "value": value}, parts)

    def _library(self, operation: Mapping[str, Any], parts: list[str]) -> None:
        """One `add`, `remove` or `replace`, applied in place by the standard's library
        once the containers on its way are the patch's own (a value it inserts is its
        copy: a later operation inside it copies it again, as any kept container)."""
        parent = self._own_way(parts)
        if parts and isinstance(parent, Derived):
            self.touched.setdefault(id(parent), set()).add(parts[-1])
        self.root = jsonpatch.JsonPatch([dict(operation)]).apply(self.root, in_place=True)

    def _own_way(self, parts: list[str]) -> Any:
        """Copy each container from the root to the parent of `parts`' last one that this
        patch has not made, putting the copy where it was; that parent (None: a part that
        is not there ends the way, and the library then says the operation does not
        apply)."""
        self.root = self._owned(self.root)
        node = self.root
        for part in parts[:-1]:
            key: Any
            if isinstance(node, dict) and part in node:
                key = part
            elif isinstance(node, list) and 0 <= _index(part) < len(node):
                key = int(part)
            else:
                return None
            child = node[key]
            if not isinstance(child, dict | list):
                return None
            if isinstance(node, Derived):
                self.touched.setdefault(id(node), set()).add(key)
            node[key] = node = self._owned(child)
        return node

    def _owned(self, value: Any) -> Any:
        if not isinstance(value, dict | list) or id(value) in self.owned:
            return value
        # a dict's copy is a `Derived` of it: compared with it, or with what it was compared
        # with, it costs the keys the patch changed (settled once it is applied)
        made = Derived(value) if isinstance(value, dict) else list(value)
        self.owned[id(made)] = made
        return made

    def _error(self, index: int, operation: Any, why: str) -> PlaygroundError:
        what = ""
        if isinstance(operation, dict):
            op, path = operation.get("op"), operation.get("path")
            if isinstance(op, str) and isinstance(path, str):
                what = f" ({cap_chars(printable(op), 20)} {cap_chars(printable(path), _SHOWN)})"
        return self.live.error(
            f"{self.where} answered a delta whose operation {index}{what} does not apply: "
            f"{cap_chars(printable(why), _SHOWN)}"
        )


def _index(part: str) -> int:
    """The list index a pointer's part names (-1 for none: the library says why)."""
    return int(part) if part.isascii() and part.isdigit() else -1
