"""Where scored runs' traces wait for the reports: on disk, not in memory.

Once a run is scored, only the files that print traces whole (results.json, shard files,
report.html) read its trace again, one run at a time; every other stage reads the run's
summary. Moving traces to an anonymous temporary file holds a run's memory to its summary
whatever the size of its trace: prompts and tool outputs grow with the agent, the summary
does not (bench/p4_footprint.py: 20,000 runs in one process).
"""

from __future__ import annotations

import io
import tempfile
import weakref
from collections.abc import Callable
from typing import IO

from evalward.rundata.held import held
from evalward.rundata.results import FixtureResult
from evalward.rundata.trace import Trace

_LENGTH_BITS = 40
"""A trace's length fits in 40 bits (a terabyte); its offset takes the bits above."""

RunKey = tuple[str, str, str, int]
"""side, Eval, fixture, rep: one run of a plan, which a plan never repeats."""

TraceSource = Callable[[FixtureResult], Trace]
"""Reads a result's trace: from the result itself, or from the run's trace spool."""


def key_of(result: FixtureResult) -> RunKey:
    """The run a result answers, which is what its trace is filed under."""
    return (result.side, result.eval, result.fixture, result.rep)


class TraceSpool:
    """Traces by run, as JSON in a temporary file that the operating system removes at exit."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._where: dict[RunKey, int] = {}
        """Where each trace is: its offset and length, as one number (`_LENGTH_BITS`): a
        run of 100,000 keeps 100,000 of them."""

    def keep(self, result: FixtureResult) -> FixtureResult:
        """Write the result's trace to disk and return the result without it (`trace=None`),
        as it will be held until the run's files are written (`held`).

        If the disk refuses (full, read-only, a file size limit), the trace stays in the
        result: memory is the price, not the run's results. The file is unbuffered, so the
        refusal comes here, where it is handled, and not at a later read's flush.
        """
        if result.trace is None:
            return held(result)
        key = key_of(result)
        if key in self._where:
            raise ValueError(f"a trace is already kept for {key}: a plan runs each run once")
        data = result.trace.model_dump_json().encode("utf-8")
        try:
            handle = self._open()
            offset = handle.seek(0, io.SEEK_END)
            written = handle.write(data)
        except OSError:
            return held(result)
        if written != len(data):  # cut short where the disk or the limit fell: taken back
            handle.truncate(offset)
            return held(result)
        self._where[key] = offset << _LENGTH_BITS | len(data)
        return held(result.model_copy(update={"trace": None}))

    def trace_json(self, result: FixtureResult) -> str:
        """The run's trace as JSON text, read back from disk if it was kept there."""
        if result.trace is not None:
            return result.trace.model_dump_json()
        return self._read(result).decode("utf-8")

    def trace_of(self, result: FixtureResult) -> Trace:
        """The run's trace, read back from disk if it was kept there."""
        if result.trace is not None:
            return result.trace
        return Trace.model_validate_json(self._read(result))

    def _read(self, result: FixtureResult) -> bytes:
        where = self._where.get(key_of(result))
        if where is None or self._file is None:
            raise KeyError(f"no trace kept for {key_of(result)}")
        offset, length = where >> _LENGTH_BITS, where & (1 << _LENGTH_BITS) - 1
        self._file.seek(offset)
        return self._file.read(length)

    def _open(self) -> IO[bytes]:
        if self._file is None:
            # Lives as long as the spool; the file has no name, so nothing is left behind.
            self._file = tempfile.TemporaryFile(prefix="evalward-traces-", buffering=0)  # noqa: SIM115
            weakref.finalize(self, self._file.close)
        return self._file
