"""How a count and a list cut short are written, alike in every message: "1 run", "2 runs";
"a, b, c and 2 more". A message names only the first few of a long list (the comment is read
by people, a line of the log is one line), and says how many it left out, so that nobody
takes the few for all.
"""

from __future__ import annotations

from collections.abc import Sequence


def counted(count: int, noun: str) -> str:
    """`count` and its noun, singular for one: "1 fixture", "3 fixtures"."""
    return f"{count:,} {noun if count == 1 else noun + 's'}"


def first_few(items: Sequence[str], most: int, *, total: int | None = None) -> str:
    """The first `most` of `items`, comma-joined, and how many more there are: "a, b, c and 2
    more"; empty for none. `total` is the whole list's length where `items` holds only its
    first few, each costly to write."""
    left = (len(items) if total is None else total) - most
    return ", ".join(items[:most]) + (f" and {left:,} more" if left > 0 else "")


def and_others(count: int, of_what: str = "") -> str:
    """ " (and 3 more)" after the one thing a message names of `count`, nothing for one alone:
    the first problem is said whole, the rest counted."""
    if count <= 1:
        return ""
    return f" (and {count - 1:,} more{' ' + of_what if of_what else ''})"
