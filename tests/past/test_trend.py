"""A trend is read from files a user or a cache restore may have mangled: each bad item is
left out, the good ones still draw the chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalward.past.history import HISTORY_DIR
from evalward.past.trend import SCORES_DIR, trends

pytestmark = pytest.mark.unit


def test_a_score_log_keeps_its_good_points_and_drops_the_bad_ones(tmp_path: Path) -> None:
    log = tmp_path / "cache" / SCORES_DIR / "bot-eval.json"
    log.parent.mkdir(parents=True)
    points = [
        {"score": 0.5, "passed": False, "when": "2026-11-01T10:00:00", "commit": "a" * 40},
        "not a point",
        {"score": 1.5, "passed": True, "when": "2026-11-02T10:00:00"},
        {"score": True, "passed": True},
        {"score": float("nan")},
        {"score": 1, "passed": True, "when": "2026-11-03T10:00:00" + "x" * 100},
    ]
    log.write_text(json.dumps({"branch": "main", "points": points}))
    trend = trends(["bot-eval"], cache_dir=tmp_path / "cache")["bot-eval"]
    assert trend.source == "commits on main"
    assert [(p.score, p.passed, p.commit) for p in trend.points] == [
        (0.5, False, "a" * 40),
        (1.0, True, ""),
    ]
    assert len(trend.points[1].when) == 40


def test_the_local_history_draws_the_trend_when_the_cache_has_none(tmp_path: Path) -> None:
    history = tmp_path / HISTORY_DIR / "bot-eval.json"
    history.parent.mkdir(parents=True)
    records = [
        {"averageScores": {"score": 0.75}, "passed": True, "timestamp": "2026-11-01T10:00:00"},
        {"averageScores": [0.2], "passed": True},
        {"averageScores": {"score": "high"}},
        {"score": 0.9},
    ]
    history.write_text(json.dumps({"history": records}))
    found = trends(["bot-eval", "../escape"], cache_dir=tmp_path / "empty", root=tmp_path)
    assert list(found) == ["bot-eval"]
    assert found["bot-eval"].source == "local runs"
    assert [(p.score, p.when) for p in found["bot-eval"].points] == [(0.75, "2026-11-01T10:00:00")]
