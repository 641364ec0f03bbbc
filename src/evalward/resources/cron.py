"""5-field cron expressions for `Eval.spec.schedule`: validation and matching, with the POSIX
semantics GitHub uses.

Only the classic five fields (minute hour day-of-month month day-of-week), with `*`, numbers,
ranges `a-b`, steps `*/n`, `a-b/n`, `a/n`, lists and month / weekday names: the forms every
cron implementation shares. Macros such as `@daily` are refused, so a schedule means the same
thing wherever it is run. When both day-of-month and day-of-week are restricted, a day matches
either (as cron does). Small enough to own: croniter, the usual library, announced it is no
longer maintained, and evalward only needs "does this expression fire at this minute".
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from evalward.text.counts import counted

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day-of-month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 0, 7, _WEEKDAYS),
)
_ITEM = re.compile(r"^(?P<range>\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/(?P<step>[0-9]+))?\Z")
EXAMPLE = '"0 9 * * *" (minute hour day-of-month month day-of-week)'


@dataclass(frozen=True)
class Cron:
    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool

    def matches(self, moment: dt.datetime) -> bool:
        if moment.minute not in self.minutes or moment.hour not in self.hours:
            return False
        if moment.month not in self.months:
            return False
        day_ok = moment.day in self.days
        weekday_ok = (moment.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return day_ok or weekday_ok
        return day_ok and weekday_ok

    def fired_within(self, end: dt.datetime, minutes: int) -> bool:
        """True when the expression fired at some minute in (end - minutes, end]."""
        start = end.replace(second=0, microsecond=0)
        return any(self.matches(start - dt.timedelta(minutes=m)) for m in range(minutes))


def parse_cron(expression: str) -> Cron:
    """The expression's firing times, or a ValueError saying which field is wrong and why."""
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(
            f"a schedule is a 5-field cron expression such as {EXAMPLE}; "
            f"found {counted(len(fields), 'field')} in {expression!r}"
        )
    sets = [_field(text.lower(), *spec) for text, spec in zip(fields, _FIELDS, strict=True)]
    minutes, hours, days, months, weekdays = sets
    weekdays = frozenset(0 if d == 7 else d for d in weekdays)  # 7 is Sunday too
    restricted = (fields[2] != "*", fields[4] != "*")  # day of month, day of week
    return Cron(" ".join(fields), minutes, hours, days, months, weekdays, *restricted)


def _field(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        match = _ITEM.match(item)
        if match is None:
            raise ValueError(f"cron {name} field: {item!r} is not `*`, `n`, `a-b` or `*/n`")
        step_text, part = match.group("step"), match.group("range")
        step = int(step_text) if step_text is not None else 1
        if step < 1:
            raise ValueError(f"cron {name} field: the step in {item!r} must be at least 1")
        if part == "*":
            start, stop = low, high
        else:
            bounds = [_value(v, name, low, high, names) for v in part.split("-")]
            start = bounds[0]
            stop = bounds[-1] if len(bounds) == 2 else (high if step_text else start)
            if start > stop:
                raise ValueError(f"cron {name} field: the range {part!r} runs backwards")
        values.update(range(start, stop + 1, step))
    return frozenset(values)


def _value(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> int:
    if text in names:
        return names.index(text) + (1 if name == "month" else 0)
    if not text.isdigit():
        raise ValueError(f"cron {name} field: {text!r} is not a number")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"cron {name} field: {value} is out of range {low}-{high}")
    return value
