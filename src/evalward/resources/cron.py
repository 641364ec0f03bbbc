"""Validation of 5-field cron expressions (`spec.schedule` of an Eval).

Only the classic five fields are accepted (minute hour day-of-month month day-of-week), with
`*`, numbers, ranges `a-b`, steps `/n`, lists `a,b` and month / weekday names: the forms every
cron implementation shares. Macros such as `@daily` are refused so a schedule means the same
thing wherever it is run.
"""

from __future__ import annotations

import re

_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day-of-month", 1, 31, ()),
    (
        "month",
        1,
        12,
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
    ),
    ("day-of-week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)
_ITEM = re.compile(r"^(?P<range>\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/(?P<step>[0-9]+))?$")
EXAMPLE = '"0 9 * * *" (minute hour day-of-month month day-of-week)'


def check_cron(expression: str) -> str:
    """Return the expression unchanged, or raise ValueError saying what is wrong."""
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(
            f"a schedule is a 5-field cron expression such as {EXAMPLE}; "
            f"found {len(fields)} field{'s' if len(fields) != 1 else ''} in {expression!r}"
        )
    for text, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        for item in text.lower().split(","):
            _check_item(item, name, low, high, names)
    return expression


def _check_item(item: str, name: str, low: int, high: int, names: tuple[str, ...]) -> None:
    match = _ITEM.match(item)
    if match is None:
        raise ValueError(f"cron {name} field: {item!r} is not `*`, `n`, `a-b` or `*/n`")
    step = match.group("step")
    if step is not None and int(step) < 1:
        raise ValueError(f"cron {name} field: the step in {item!r} must be at least 1")
    part = match.group("range")
    if part == "*":
        return
    bounds = [_value(v, name, low, high, names) for v in part.split("-")]
    if len(bounds) == 2 and bounds[0] > bounds[1]:
        raise ValueError(f"cron {name} field: the range {part!r} runs backwards")


def _value(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> int:
    if text in names:
        return names.index(text) + (1 if name == "month" else 0)
    if not text.isdigit():
        raise ValueError(f"cron {name} field: {text!r} is not a number")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"cron {name} field: {value} is out of range {low}-{high}")
    return value
