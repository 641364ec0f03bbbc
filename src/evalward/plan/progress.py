"""What a run has done so far: its plan as it grows, the runs that finished, their traces,
and whether a signal cancelled it.

Every phase tells it as it goes (`on_plan`, `on_more`, `on_result`); the front ends show it
(a log line, a progress bar) by overriding those, and a cancelled run is reported from it
(`flows.session`): what finished before the signal is kept.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from evalward.errors import EXIT_INTERRUPTED
from evalward.plan.plan import MoreRuns, Plan
from evalward.resources import Located
from evalward.resources.models import Eval
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spool import TraceSpool


def reused_mark(result: FixtureResult) -> str:
    """What a run's progress line adds when the result cache answered it: it did not run
    again."""
    return ", reused" if result.cached else ""


@dataclass
class RunProgress:
    """What has run so far, as the phases report it (`on_plan`, `on_more`, `on_result`)."""

    plan: Plan | None = None
    done: list[FixtureResult] = field(default_factory=list)
    cancelled: bool = False
    started: float = field(default_factory=time.monotonic)
    """When the run started (`time.monotonic`): its wall time is measured from here."""
    traces: TraceSpool = field(default_factory=TraceSpool)
    """Where the runs' traces move as they are scored: a cancelled run's are still here."""
    evals: Mapping[Side, Mapping[str, Located[Eval]]] = field(default_factory=dict)
    """Each side's Eval definitions, once planned: a run a signal or an error stops is
    scored over the runs that finished (`flows.pipeline.partial`)."""

    @property
    def planned(self) -> int:
        return len(self.plan.runs) if self.plan else 0

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def on_plan(self, plan: Plan) -> None:
        self.plan = plan

    def on_more(self, plan: Plan, more: MoreRuns) -> None:
        """A round grew the plan by `more` (adaptive reps, the pairwise judge's pairs, the
        base runs a failing head needs)."""
        self.plan = plan

    def on_result(self, result: FixtureResult) -> None:
        self.done.append(result)

    def exit_code(self, code: int) -> int:
        """The run's exit code: 130 once it was cancelled, even after its results were in."""
        return EXIT_INTERRUPTED if self.cancelled else code
