"""The run's progress: a bar redrawn in place on a terminal, one plain line per run elsewhere."""

from __future__ import annotations

import io

import pytest

from evalward.cli._progress import ProgressBar
from evalward.plan.plan import MoreRuns, Plan, PlannedRun
from evalward.rundata.results import AssertionResult, FixtureResult, Severity, Status, Verdict
from evalward.rundata.sides import Side

pytestmark = pytest.mark.unit


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
    progress = ProgressBar(stream)
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
    progress = ProgressBar(stream)
    progress.planned(PLAN)
    progress(result("a", Status.passed))
    progress.close()
    assert stream.getvalue().splitlines() == [
        "evalward: 2 runs planned",
        "[1/2] head e / a #0: pass (1.00)",
    ]


class CountingLog(io.StringIO):
    writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_many_fast_results_are_written_in_a_few_batches_and_none_is_lost() -> None:
    stream = CountingLog()
    progress = ProgressBar(stream)
    runs = [PlannedRun(Side.head, "e", f"f{i}") for i in range(500)]
    progress.planned(Plan(runs=runs))
    for run in runs:
        progress(result(run.fixture, Status.passed))
    progress.close()
    lines = stream.getvalue().splitlines()
    assert lines[1] == "[1/500] head e / f0 #0: pass (1.00)"
    assert lines[-1] == "[500/500] head e / f499 #0: pass (1.00)"
    assert len(lines) == 501
    assert stream.writes < 100  # one per line would be 500


def test_a_round_says_what_asked_for_its_runs_after_the_lines_before_it() -> None:
    """A grown plan is announced after the runs already shown, with why each run was asked
    for and how many the result cache answers; a run the cache answered says so."""
    stream = io.StringIO()
    progress = ProgressBar(stream)
    progress.planned(PLAN)
    progress(result("a", Status.passed))
    progress(result("b", Status.passed))
    grown = Plan(runs=[*PLAN.runs, *(PlannedRun(Side.base, "e", f) for f in "ab")])
    progress.grown(grown, MoreRuns(pairwise=2, reused=2))
    progress(result("a", Status.passed).model_copy(update={"side": "base", "cached": True}))
    progress.close()
    assert stream.getvalue().splitlines() == [
        "evalward: 2 runs planned",
        "[1/2] head e / a #0: pass (1.00)",
        "[2/2] head e / b #0: pass (1.00)",
        "evalward: 2 more runs that the pairwise judge's open tests ask for, 4 in all "
        "(2 of them reused from the result cache, not run again)",
        "[3/4] base e / a #0: pass (1.00, reused)",
    ]


def test_a_round_asked_for_by_several_tests_counts_each() -> None:
    more = MoreRuns(adaptive=3, pairwise=1, base_read=2)
    assert more.text(20) == (
        "6 more runs, 20 in all: 3 where outcomes are open (adaptive reps); 1 that the "
        "pairwise judge's open tests ask for; 2 on the base, of fixtures the head did not pass"
    )
    assert MoreRuns(adaptive=1).text(17) == (
        "1 more run where outcomes are open (adaptive reps), 17 in all"
    )


def test_a_base_run_whose_judge_waits_is_neither_a_skip_nor_not_passing() -> None:
    """Scored before its judge is asked (only where the verdict reads it), a base run is
    `skipped` in its status: the line says its judge is deferred, and the bar does not count
    it as not passing."""
    waiting = result("a", Status.skipped).model_copy(
        update={
            "side": "base",
            "assertions": [
                AssertionResult(
                    type="judge",
                    status=Status.skipped,
                    score=0.0,
                    weight=1.0,
                    severity=Severity.medium,
                    deferred=True,
                )
            ],
        }
    )
    lines, bar = io.StringIO(), Terminal()
    for stream in (lines, bar):
        progress = ProgressBar(stream)
        progress.planned(PLAN)
        progress(waiting)
        progress.close()
    assert lines.getvalue().splitlines()[1] == "[1/2] base e / a #0: judge deferred (0.00)"
    assert "] 1/2  0 not passing" in bar.getvalue()
