from __future__ import annotations

import datetime as dt

import pytest

from evalward.resources.cron import parse_cron

pytestmark = pytest.mark.unit


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("expression", "moment", "fires"),
    [
        ("0 6 * * 1", "2026-11-23T06:00", True),  # a Monday
        ("0 6 * * 1", "2026-11-24T06:00", False),
        ("0 6 * * MON", "2026-11-23T06:00", True),
        ("*/15 * * * *", "2026-11-23T10:45", True),
        ("*/15 * * * *", "2026-11-23T10:46", False),
        ("5-10/5 * * * *", "2026-11-23T10:10", True),
        ("0 0 1 jan *", "2027-01-01T00:00", True),
        ("0 0 * * 7", "2026-11-22T00:00", True),  # 7 is Sunday too
        # both day fields restricted: either matches (cron's OR rule)
        ("0 0 13 * 5", "2026-11-13T00:00", True),
        ("0 0 13 * 5", "2026-11-20T00:00", True),
        ("0 0 13 * 5", "2026-11-21T00:00", False),
        ("0,30 9-17 * * 1-5", "2026-11-23T17:30", True),
    ],
)
def test_matches(expression: str, moment: str, fires: bool) -> None:
    assert parse_cron(expression).matches(at(moment)) is fires


def test_fired_within_a_window_for_late_scheduled_runs() -> None:
    cron = parse_cron("0 6 * * *")
    assert cron.fired_within(at("2026-11-23T06:40"), 60)
    assert not cron.fired_within(at("2026-11-23T07:01"), 60)


@pytest.mark.parametrize(
    "bad", ["* * * *", "60 * * * *", "*/0 * * * *", "5-1 * * * *", "x * * * *"]
)
def test_bad_expressions_name_the_field(bad: str) -> None:
    with pytest.raises(ValueError, match=r"^(a schedule is a 5-field|cron minute field: )"):
        parse_cron(bad)
