"""An Eval's score over its recent runs, for report.html's trend chart.

Two sources, both already kept between runs:

- the result cache (`.evalward/cache`, kept by `actions/cache`): a run on a push to the default
  branch appends each Eval's score at that commit to `scores/<eval>.json`, so a pull request
  whose cache was restored from the default branch sees the Eval's score over recent commits;
- the local history (`.evalward/history`, seed 002), which `evalward run` appends to.

A chart is drawn only from points that exist: no history, no chart.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalward.past.history import HISTORY_DIR, SAFE_NAME, read_object, write_atomically
from evalward.rundata.results import EvalResult

SCORES_DIR = "scores"
MAX_POINTS = 30


@dataclass(frozen=True)
class TrendPoint:
    score: float
    passed: bool
    when: str
    """ISO 8601 time the run was recorded."""
    commit: str = ""

    @property
    def label(self) -> str:
        return self.commit[:7] if self.commit else self.when[:16].replace("T", " ")


@dataclass(frozen=True)
class Trend:
    source: str
    """What the points are, for the chart's caption: `commits on main`, `local runs`."""
    points: list[TrendPoint]


def record_commit(
    cache_dir: Path,
    results: Iterable[EvalResult],
    *,
    commit: str,
    branch: str,
) -> None:
    """Append each head-side Eval's score at `commit` to the cache's score log (a rerun of
    the same commit replaces its point), keeping the newest `MAX_POINTS`. An advisory Eval's
    score (nothing in it gated) is no point."""
    moment = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    for result in results:
        if result.side != "head" or result.advisory or not SAFE_NAME.fullmatch(result.eval):
            continue
        path = cache_dir / SCORES_DIR / f"{result.eval}.json"
        points = [p for p in _cached_points(read_object(path, finite=False)) if p.commit != commit]
        points.append(TrendPoint(result.score, result.passed, moment, commit))
        document = {
            "eval": result.eval,
            "branch": branch,
            "points": [asdict(p) for p in points[-MAX_POINTS:]],
        }
        write_atomically(path, json.dumps(document, ensure_ascii=False) + "\n")


def trends(
    evals: Iterable[str], *, cache_dir: Path | None = None, root: Path | None = None
) -> dict[str, Trend]:
    """Each Eval's trend: from the cache's score log when it has points, else from the local
    history under `root`; Evals with neither are left out."""
    found: dict[str, Trend] = {}
    for name in evals:
        if not SAFE_NAME.fullmatch(name):
            continue
        if cache_dir is not None:
            document = read_object(cache_dir / SCORES_DIR / f"{name}.json", finite=False)
            points = _cached_points(document)
            if points:
                branch = str(document.get("branch") or "the default branch")
                found[name] = Trend(f"commits on {branch}", points[-MAX_POINTS:])
                continue
        if root is not None:
            points = _history_points(root / HISTORY_DIR / f"{name}.json")
            if points:
                found[name] = Trend("local runs", points[-MAX_POINTS:])
    return found


def _score(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number <= 1 else None


def _cached_points(document: dict[str, Any]) -> list[TrendPoint]:
    """The points a trend file's document keeps: `{score, passed, when, commit}` each."""
    return _points(document.get("points"), lambda item: item.get("score"), "when")


def _history_points(path: Path) -> list[TrendPoint]:
    """The points of the local history's records, whose score is `averageScores.score`."""
    return _points(read_object(path, finite=False).get("history"), _average_score, "timestamp")


def _average_score(record: dict[str, Any]) -> object:
    scores = record.get("averageScores")
    return scores.get("score") if isinstance(scores, dict) else None


def _points(
    raw: object, score_of: Callable[[dict[str, Any]], object], when_key: str
) -> list[TrendPoint]:
    """Each well-formed item as a point; a file someone edited loses only its bad items."""
    points: list[TrendPoint] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        score = _score(score_of(item))
        if score is None:
            continue
        points.append(
            TrendPoint(
                score,
                item.get("passed") is True,
                str(item.get(when_key) or "")[:40],
                str(item.get("commit") or "")[:64],
            )
        )
    return points
