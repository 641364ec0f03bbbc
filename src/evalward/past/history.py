"""Seed 002's experiment history: every local run of an Eval is a timestamped set, and each
run shows its scores' delta against the previous set (green up, red down).

One JSON file per Eval in `.evalward/history/<eval>.json`:

    {"name": "support-bot-eval",
     "history": [{"timestamp": "...", "commit": "...", "passed": true,
                  "averageScores": {"score": 0.8, "passRate": 0.75, "axis:tone": 0.9},
                  "runs": [{"fixture": "...", "rep": 0, "status": "pass", "score": 1.0,
                            "output": "..."}]}]}

The newest `MAX_SETS` sets are kept. Only head-side results are recorded: the history follows
the code on disk, not the base it is compared with. `commit` (the checked-out commit, when the
directory is a git repository) labels the set in report.html's trend chart.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

from evalward.errors import UnsafeFile, printable, why_refused
from evalward.files.safe_files import read_text
from evalward.rundata.results import EvalResult
from evalward.text import jsontext
from evalward.text.cuts import cap_chars
from evalward.text.numbers import delta_text

HISTORY_DIR = Path(".evalward") / "history"
MAX_FILE_BYTES = 16 * 1024 * 1024
"""The largest history file read (it is read as a file anyone may have put there), and the
largest file the flaky and trend stores read back (a restored cache: read as `safe_files`
reads)."""
MAX_SETS = 200
OUTPUT_CHARS = 2000
SAFE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
"""An Eval name the stores kept between runs (flaky, trend, status) name a file by."""


@dataclass(frozen=True)
class Delta:
    metric: str
    value: float
    previous: float | None

    @property
    def change(self) -> float | None:
        return None if self.previous is None else self.value - self.previous


@dataclass(frozen=True)
class EvalDeltas:
    eval: str
    deltas: list[Delta]
    first: bool
    same_fixtures: bool
    """False when the previous set ran other fixtures (e.g. a --fixture filter), so the
    numbers are not like for like."""

    def as_json(self) -> dict[str, Any]:
        return {
            "eval": self.eval,
            "first": self.first,
            "sameFixtures": self.same_fixtures,
            "scores": {
                d.metric: {"value": d.value, "previous": d.previous, "delta": d.change}
                for d in self.deltas
            },
        }


def average_scores(result: EvalResult) -> dict[str, float]:
    scores = {
        "score": result.score,
        "passRate": result.passing / result.total if result.total else 0.0,
    }
    axes: dict[str, list[float]] = {}
    for fixture in result.fixtures:
        for axis, value in fixture.axes.items():
            axes.setdefault(axis, []).append(value)
    for axis in sorted(axes):
        scores[f"axis:{axis}"] = sum(axes[axis]) / len(axes[axis])
    return scores


def record(
    root: Path, results: Iterable[EvalResult], commit: str = "", err: TextIO | None = None
) -> list[EvalDeltas]:
    """Append one set per head-side Eval result and return its deltas against the last set.
    A history file it cannot read is set aside, and `err` (stderr by default) told so; one
    the disk cannot take (full, read-only, a file where its folder should be) costs that
    Eval's history alone, said to `err`: never the run's report, which is written after."""
    moment = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    directory = root / HISTORY_DIR
    out: list[EvalDeltas] = []
    for result in results:
        if result.side != "head":
            continue
        path = directory / f"{result.eval}.json"
        try:
            deltas = _record_one(path, result, moment, commit, err or sys.stderr)
        except OSError as exc:
            print(
                f"evalward: not written: {printable(str(path))} ({why_refused(exc)}): this run "
                f"is not in {result.eval}'s history; free space, or make {HISTORY_DIR} a "
                "folder evalward can write in, for the next run to be recorded",
                file=err or sys.stderr,
            )
            continue
        out.append(deltas)
    return out


def _record_one(
    path: Path, result: EvalResult, moment: str, commit: str, err: TextIO
) -> EvalDeltas:
    """Append `result`'s set to the history at `path`; its deltas against the last set."""
    experiment = _load(path, result.eval, err)
    history: list[dict[str, Any]] = experiment["history"]
    previous = history[-1] if history else None
    scores = average_scores(result)
    runs = [
        {
            "fixture": f.fixture,
            "rep": f.rep,
            "status": f.status.value,
            "score": f.score,
            "output": cap_chars(f.output, OUTPUT_CHARS),
        }
        for f in result.fixtures
    ]
    labels = {"commit": commit} if commit else {}
    history.append(
        {
            "timestamp": moment,
            **labels,
            "passed": result.passed,
            "averageScores": scores,
            "runs": runs,
        }
    )
    experiment["history"] = history[-MAX_SETS:]
    _write(path, experiment)
    before = previous["averageScores"] if previous else {}
    return EvalDeltas(
        result.eval,
        [Delta(k, v, _number(before.get(k))) for k, v in scores.items()],
        first=previous is None,
        same_fixtures=previous is None
        or {r["fixture"] for r in previous.get("runs", [])} == {r["fixture"] for r in runs},
    )


def render(deltas: list[EvalDeltas], color: bool = False) -> str:
    """Seed 002's lines: `→ score: 85.00% (🟢+0.15)`, one block per Eval."""
    if not deltas:
        return ""
    lines = [f"Since the previous local run ({HISTORY_DIR}):"]
    for entry in deltas:
        note = " (first run)" if entry.first else ""
        if not entry.same_fixtures:
            note = " (the previous run ran other fixtures)"
        lines.append(f"{entry.eval}{note}")
        lines += [f"  → {d.metric}: {d.value * 100:.2f}% ({_mark(d, color)})" for d in entry.deltas]
    return "\n".join(lines)


def _mark(delta: Delta, color: bool) -> str:
    change = delta.change
    if change is None:
        return "new"
    if change > 1e-9:  # a change two decimals would write as none keeps its digits
        text, ansi = f"🟢{delta_text(change)}", "\x1b[32m"
    elif change < -1e-9:
        text, ansi = f"🔴{delta_text(change)}", "\x1b[31m"
    else:
        text, ansi = "⚪+0.00", ""
    return f"{ansi}{text}\x1b[0m" if color and ansi else text


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _load(path: Path, name: str, err: TextIO) -> dict[str, Any]:
    try:
        data = jsontext.loads(read_text(path, MAX_FILE_BYTES), finite=False)
    except FileNotFoundError:
        return {"name": name, "history": []}
    except (OSError, ValueError) as exc:
        why = unreadable(exc)
    else:
        why = _not_history(data) or ""
        if not why:
            return cast(dict[str, Any], data)
    # kept aside, not overwritten: a run never fails over its history, nor loses it
    aside = path.with_name(path.name + ".unreadable")
    path.replace(aside)
    print(
        f"evalward: {path}: not a history evalward can read ({why}); set aside as {aside.name}, "
        f"and {name}'s history (its deltas, report.html's trend) starts again with this run",
        file=err,
    )
    return {"name": name, "history": []}


def unreadable(exc: OSError | ValueError) -> str:
    """Why a file evalward keeps for itself (a history, a status) cannot be read as JSON, in
    words: not a file it reads, not UTF-8, or not JSON (where, in Python's words)."""
    if isinstance(exc, UnsafeFile):
        return f"it {exc.reason}"
    if isinstance(exc, OSError):
        return f"it cannot be read: {exc.strerror or exc}"
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    return f"not JSON: {exc}"


def _not_history(data: object) -> str | None:
    """What keeps `data` from being a history `record` appends to (None: nothing)."""
    if not isinstance(data, dict):
        return "JSON, but not an object"
    sets = data.get("history")
    if not isinstance(sets, list):
        return "JSON, but no `history` list"
    if sets and not _is_set(sets[-1]):
        return (
            "JSON, but its last set has no `averageScores` object or a run whose `fixture` is "
            "not a name"
        )
    return None


def _is_set(entry: object) -> bool:
    """Whether `entry` is a set as `record` reads the last one: its scores, and its runs'
    fixtures, each a name (a hand-edited file may hold anything: a list there could not be
    compared with this run's; the trend chart reads every set on its own terms)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("averageScores"), dict):
        return False
    runs = entry.get("runs", [])
    return isinstance(runs, list) and all(
        isinstance(r, dict) and isinstance(r.get("fixture"), str) for r in runs
    )


def read_object(path: Path, *, finite: bool = True) -> dict[str, Any]:
    """The JSON object a store kept between runs holds in `path` ({} when it is missing,
    unreadable, or no object), read as `safe_files` reads; `finite=False` takes NaN."""
    try:
        data = jsontext.loads(read_text(path, MAX_FILE_BYTES), finite=finite)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, data: dict[str, Any]) -> None:
    """One set a line, each encoded by json's C encoder: an indented dump goes through the pure
    Python one, and 200 sets of a 1,000-fixture suite made every local run spend seconds here.
    """
    rest = {key: value for key, value in data.items() if key != "history"}
    # The placeholder is the last key, so the last `"history": null` in the text is it.
    opening, closing = json.dumps({**rest, "history": None}, ensure_ascii=False).rsplit(
        '"history": null', 1
    )
    sets = "".join(
        f"{',' if index else ''}\n  {json.dumps(s, ensure_ascii=False)}"
        for index, s in enumerate(data["history"])
    )
    last = "\n" if sets else ""
    write_atomically(path, f'{opening}"history": [{sets}{last}]{closing}\n')


def write_atomically(path: Path, text: str) -> None:
    """Write `text` beside `path` and rename it over it, so an interrupted run or a refused
    write never leaves half a file: how every store kept between runs (history, flaky,
    trend, status) writes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        Path(temporary).replace(path)
    finally:  # a write the disk refused leaves no half file behind
        Path(temporary).unlink(missing_ok=True)
