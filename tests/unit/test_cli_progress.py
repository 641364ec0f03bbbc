"""The run's progress: a bar redrawn in place on a terminal, one plain line per run elsewhere."""

from __future__ import annotations

import io

from evalward.cli._progress import Progress
from evalward.plan import Plan, PlannedRun, Side
from evalward.results import FixtureResult, Severity, Status, Verdict


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def result(fixture: str, status: Status) -> FixtureResult:
    return FixtureResult(
        eval="e",
        fixture=fixture,
        side="head",
        status=status,
        score=1.0 if status is Status.passed else 0.0,
        verdict=Verdict.passed,
        severity=Severity.medium,
    )


PLAN = Plan(runs=[PlannedRun(Side.head, "e", "a"), PlannedRun(Side.head, "e", "b")])


def test_a_terminal_gets_one_bar_redrawn_in_place() -> None:
    stream = Terminal()
    progress = Progress(stream)
    progress.planned(PLAN)
    progress(result("a", Status.passed))
    progress(result("b", Status.failed))
    progress.close()
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert "\r[" + "#" * 12 + "-" * 12 + "] 1/2  0 not passing" in text
    assert "\r[" + "#" * 24 + "] 2/2  1 not passing  e / b" in text


def test_a_log_gets_plain_lines() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    progress.planned(PLAN)
    progress(result("a", Status.passed))
    progress.close()
    assert stream.getvalue().splitlines() == [
        "evalward: 2 runs planned",
        "[1/2] head e / a #0: pass (1.00)",
    ]
