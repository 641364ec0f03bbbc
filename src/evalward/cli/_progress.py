"""Progress of a run: a bar redrawn in place on a terminal, plain lines otherwise (CI logs)."""

from __future__ import annotations

from typing import TextIO

from evalward.plan import Plan
from evalward.results import FixtureResult

BAR_WIDTH = 24


class Progress:
    def __init__(self, stream: TextIO, *, bar: bool | None = None) -> None:
        self.stream = stream
        self.bar = stream.isatty() if bar is None else bar
        self.total = 0
        self.done = 0
        self.failed = 0

    def planned(self, plan: Plan) -> None:
        self.total = len(plan.runs)
        if not self.bar:
            print(f"evalward: {self.total} runs planned", file=self.stream, flush=True)

    def __call__(self, result: FixtureResult) -> None:
        self.done += 1
        self.failed += not result.passed
        if self.bar:
            filled = BAR_WIDTH * self.done // max(self.total, 1)
            line = (
                f"\r[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {self.done}/{self.total}"
                f"  {self.failed} not passing  {result.eval} / {result.fixture}"
            )
            print(f"{line[:120]}\x1b[K", end="", file=self.stream, flush=True)
            return
        print(
            f"[{self.done}/{self.total}] {result.side} {result.eval} / {result.fixture} "
            f"#{result.rep}: {result.status.value} ({result.score:.2f})",
            file=self.stream,
            flush=True,
        )

    def close(self) -> None:
        if self.bar and self.done:
            print(file=self.stream, flush=True)
