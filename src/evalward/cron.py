"""A 5-field cron matcher for `Eval.spec.schedule`, with the POSIX semantics GitHub uses.

Small enough to own: croniter (the usual library) announced it is no longer maintained, and
evalward only needs "does this expression fire at this minute", not iteration or seconds.
Supported: `*`, numbers, `a-b`, `*/n`, `a-b/n`, `a/n`, lists, month and weekday names; when
both day-of-month and day-of-week are restricted a day matches either (as cron does).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from evalward.errors import ConfigError

_NAMES = {
    3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
}
_RANGES = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
_FIELDS = ["minute", "hour", "day of month", "month", "day of week"]


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


def parse_cron(expression: str, where: str = "schedule") -> Cron:
    parts = expression.split()
    if len(parts) != 5:
        raise ConfigError(
            f"{where}: {expression!r} is not a cron expression; expected 5 fields "
            "(minute hour day-of-month month day-of-week), e.g. '0 6 * * 1'"
        )
    sets = [_field(parts[i], i, where, expression) for i in range(5)]
    weekdays = frozenset(0 if d == 7 else d for d in sets[4])
    return Cron(
        " ".join(parts),
        sets[0],
        sets[1],
        sets[2],
        sets[3],
        weekdays,
        days_restricted=parts[2] != "*",
        weekdays_restricted=parts[4] != "*",
    )


def _field(text: str, index: int, where: str, expression: str) -> frozenset[int]:
    low, high = _RANGES[index]
    values: set[int] = set()

    def number(token: str) -> int:
        names = _NAMES.get(index, [])
        if token.lower() in names:
            return names.index(token.lower()) + (1 if index == 3 else 0)
        if not token.isdigit():
            raise ValueError(token)
        value = int(token)
        if not low <= value <= high:
            raise ValueError(token)
        return value

    try:
        for item in text.split(","):
            body, _, step_text = item.partition("/")
            step = int(step_text) if step_text else 1
            if step < 1:
                raise ValueError(step_text)
            if body == "*":
                start, stop = low, high
            elif "-" in body:
                first, _, last = body.partition("-")
                start, stop = number(first), number(last)
            else:
                start = number(body)
                stop = high if step_text else start
            if start > stop:
                raise ValueError(body)
            values.update(range(start, stop + 1, step))
    except ValueError:
        raise ConfigError(
            f"{where}: {expression!r}: the {_FIELDS[index]} field {text!r} is not valid; "
            f"expected *, a number in {low}-{high}, a range a-b, a step */n, or a list of those"
        ) from None
    return frozenset(values)
