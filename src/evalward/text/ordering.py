"""Names in the order a person reads them: `case-2` before `case-10`."""

from __future__ import annotations

import re

_DIGITS = re.compile(r"([0-9]+)")

NaturalKey = tuple[tuple[str | int, ...], str]


def natural_key(name: str) -> NaturalKey:
    """A sort key that compares the runs of digits in `name` as numbers and the rest as text
    (then the name itself, so that `case-02` and `case-2` keep one order)."""
    parts = _DIGITS.split(name)  # text, digits, text, …: the same kind at the same place
    return tuple(int(p) if index % 2 else p for index, p in enumerate(parts)), name
