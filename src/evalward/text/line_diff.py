"""Which lines changed from one text to another, as difflib matches them, in bounded time.

difflib's matching grows faster than the product of the two texts' lengths wherever lines
repeat (blank lines between paragraphs, a value listed many times): 500 lines against 500
take it about two seconds at worst, a million blank lines hours. The texts compared here are
the pull request's (the state an agent leaves, shown as a diff), so the work is
bounded: texts whose lines, multiplied, are over `MAX_CELLS` are first narrowed to what lies
between the lines both begin and end with, and a changed region still larger is one block
whole (every base line of it replaced by every head line). Within the bound the answer is
difflib's own.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from typing import Literal

Tag = Literal["replace", "delete", "insert", "equal"]
Opcode = tuple[Tag, int, int, int, int]
"""`(tag, i1, i2, j1, j2)`: `old[i1:i2]` is `new[j1:j2]` ("equal") or became it ("replace",
"delete", "insert"), as difflib says it."""

MAX_CELLS = 250_000
"""The most lines of one text times the other's that difflib matches line by line."""


def opcodes(old: Sequence[str], new: Sequence[str], *, autojunk: bool) -> list[Opcode]:
    """How `old` becomes `new`, as `SequenceMatcher.get_opcodes` says it (`autojunk` as
    difflib's), within `MAX_CELLS` (the module's docstring)."""
    if len(old) * len(new) <= MAX_CELLS:
        return difflib.SequenceMatcher(None, old, new, autojunk=autojunk).get_opcodes()
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    i2, j2 = len(old) - end, len(new) - end
    if (i2 - start) * (j2 - start) <= MAX_CELLS:
        inner = [
            (tag, a + start, b + start, c + start, d + start)
            for tag, a, b, c, d in opcodes(old[start:i2], new[start:j2], autojunk=autojunk)
        ]
    else:
        inner = [("replace", start, i2, start, j2)]
    before: list[Opcode] = [("equal", 0, start, 0, start)] if start else []
    after: list[Opcode] = [("equal", i2, len(old), j2, len(new))] if end else []
    return before + inner + after


class _Given(difflib.SequenceMatcher[str]):
    """A matcher whose opcodes are given, for difflib's grouping of them with context."""

    def __init__(self, given: list[Opcode]) -> None:
        super().__init__(None, [], [])
        self._given = given

    def get_opcodes(self) -> list[Opcode]:
        return list(self._given)


def grouped(
    old: Sequence[str], new: Sequence[str], *, context: int, autojunk: bool
) -> Iterator[list[tuple[str, int, int, int, int]]]:
    """The changed blocks with `context` lines around them, in groups as a unified diff's
    hunks are (`SequenceMatcher.get_grouped_opcodes`)."""
    yield from _Given(opcodes(old, new, autojunk=autojunk)).get_grouped_opcodes(context)
