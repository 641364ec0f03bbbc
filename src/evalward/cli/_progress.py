"""Progress of a run: a bar redrawn in place on a terminal, plain lines otherwise (CI logs).

Output is throttled to one write per `REFRESH_SECONDS`: a run of thousands of fast fixtures
otherwise spends more time writing progress than scoring."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TextIO

from evalward.plan.plan import MoreRuns, Plan
from evalward.plan.progress import RunProgress, reused_mark
from evalward.rundata.results import FixtureResult
from evalward.text.counts import counted

BAR_WIDTH = 24
REFRESH_SECONDS = 0.2


class ProgressBar:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.bar = stream.isatty()
        self.total = 0
        self.done = 0
        self.failed = 0
        self._pending: list[str] = []
        self._last_write = float("-inf")

    def planned(self, plan: Plan) -> None:
        self.total = len(plan.runs)
        if not self.bar:
            planned = counted(self.total, "run")
            print(f"evalward: {planned} planned", file=self.stream, flush=True)
        if plan.reused:
            print(
                f"evalward: {plan.reused} of {self.total} runs reused from the result cache, "
                "not run again (--no-cache runs everything)",
                file=self.stream,
                flush=True,
            )

    def grown(self, plan: Plan, more: MoreRuns) -> None:
        """A round's runs: the total they make, and (in a log) what asked for them."""
        self.total = len(plan.runs)
        if not self.bar:
            self._write()  # the lines of the runs before it come first
            print(f"evalward: {more.text(self.total)}", file=self.stream, flush=True)

    def __call__(self, result: FixtureResult) -> None:
        self.done += 1
        self.failed += not result.passed and not result.not_judged
        if self.bar:
            filled = BAR_WIDTH * self.done // max(self.total, 1)
            line = (
                f"\r[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {self.done}/{self.total}"
                f"  {self.failed} not passing  {result.eval} / {result.fixture}"
            )
            self._pending = [f"{line[:120]}\x1b[K"]  # only the latest state is worth drawing
        else:
            self._pending.append(
                f"[{self.done}/{self.total}] {result.side} {result.eval} / {result.fixture} "
                f"#{result.rep}: {result.outcome} ({result.score:.2f}{reused_mark(result)})\n"
            )
        now = time.monotonic()
        if now - self._last_write >= REFRESH_SECONDS:
            self._last_write = now
            self._write()

    def close(self) -> None:
        self._write()
        if self.bar and self.done:
            print(file=self.stream, flush=True)

    def _write(self) -> None:
        if self._pending:
            self.stream.write("".join(self._pending))
            self.stream.flush()
            self._pending = []


@dataclass
class ShownProgress(RunProgress):
    """What has run so far (`plan.progress.RunProgress`), drawn as it goes."""

    bar: ProgressBar = field(kw_only=True)

    def on_plan(self, plan: Plan) -> None:
        super().on_plan(plan)
        self.bar.planned(plan)

    def on_more(self, plan: Plan, more: MoreRuns) -> None:
        super().on_more(plan, more)
        self.bar.grown(plan, more)

    def on_result(self, result: FixtureResult) -> None:
        super().on_result(result)
        self.bar(result)
