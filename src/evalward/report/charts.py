"""The report's pictures as plain inline SVG, drawn here so that they need no script, no
library and no network: an Eval's base and head scores against its threshold, the spread of
its fixture scores, and its score over recent runs.

Each chart is a small fixed-size figure for a table cell (small multiples: one row per Eval),
with a `<title>` that says in words what it shows. Text in it is escaped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from evalward.past.trend import Trend

GREEN = "#1a7f37"
RED = "#cf222e"
BASE = "#8c959f"
INK = "#1f2328"
HEAD_BINS = "#0969da"
WIDTH = 150
BINS = 10


def _svg(height: int, title: str, body: str, *, kind: str) -> str:
    label = escape(title)
    return (
        f'<svg class="chart {kind}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{label}">'
        f"<title>{label}</title>{body}</svg>"
    )


def _x(value: float) -> float:
    return round(max(0.0, min(1.0, value)) * WIDTH, 1)


def score_bars(*, head: float, base: float | None, threshold: float, passed: bool) -> str:
    """Base (grey) above head (green when the Eval passes, else red), the threshold a line."""
    before = "no base" if base is None else f"base {base:.2f}"
    title = f"{before}, head {head:.2f}, threshold {threshold:.2f}"
    body = ""
    if base is not None:
        body += f'<rect class="base" x="0" y="3" width="{_x(base)}" height="9" fill="{BASE}"/>'
    colour = GREEN if passed else RED
    body += f'<rect class="head" x="0" y="15" width="{_x(head)}" height="9" fill="{colour}"/>'
    edge = min(_x(threshold), WIDTH - 1)
    body += (
        f'<line class="threshold" x1="{edge}" x2="{edge}" y1="0" y2="27" stroke="{INK}" '
        'stroke-width="2" stroke-dasharray="3 2"/>'
    )
    return _svg(27, title, body, kind="bars")


def _bins(scores: Sequence[float]) -> list[int]:
    counts = [0] * BINS
    for score in scores:
        counts[min(BINS - 1, max(0, int(score * BINS)))] += 1
    return counts


def histogram(head: Sequence[float], base: Sequence[float]) -> str:
    """Fixture scores in ten bins: head as filled bars, base as outlines over them."""
    heads, bases = _bins(head), _bins(base)
    tallest = max([*heads, *bases, 1])
    height, floor = 30, 28
    step = WIDTH / BINS
    body = f'<line x1="0" x2="{WIDTH}" y1="{floor + 0.5}" y2="{floor + 0.5}" stroke="{BASE}"/>'
    for index in range(BINS):
        low = index / BINS
        tip = f"{low:.1f}–{low + 1 / BINS:.1f}: head {heads[index]}"
        if base:
            tip += f", base {bases[index]}"
        x = round(index * step + 1, 1)
        h = round(heads[index] / tallest * (floor - 2), 1)
        body += (
            f'<rect class="head" x="{x}" y="{floor - h}" width="{step - 2:.1f}" height="{h}" '
            f'fill="{HEAD_BINS}" fill-opacity="0.75"><title>{escape(tip)}</title></rect>'
        )
        if base and bases[index]:
            b = round(bases[index] / tallest * (floor - 2), 1)
            body += (
                f'<rect class="base" x="{x}" y="{floor - b}" width="{step - 2:.1f}" height="{b}" '
                f'fill="none" stroke="{INK}" stroke-dasharray="2 1"/>'
            )
    title = f"fixture scores on head ({len(head)} fixtures)" + (
        f" and base ({len(base)}, outlined)" if base else ""
    )
    return _svg(height, title, body, kind="histogram")


def trend(history: Trend, *, current: float, passed: bool, threshold: float) -> str:
    """The Eval's score at each recorded point, then this run's head score as the last dot."""
    height, top, bottom = 34, 3, 31
    points = history.points
    count = len(points) + 1
    step = (WIDTH - 8) / max(1, count - 1)

    def y(score: float) -> float:
        return round(bottom - max(0.0, min(1.0, score)) * (bottom - top), 1)

    coords = [(round(4 + i * step, 1), y(p.score)) for i, p in enumerate(points)]
    now = (round(4 + (count - 1) * step, 1), y(current))
    line = y(threshold)
    body = (
        f'<line class="threshold" x1="0" x2="{WIDTH}" y1="{line}" y2="{line}" stroke="{INK}" '
        'stroke-width="1" stroke-dasharray="3 2"/>'
    )
    if len(coords) > 1:
        path = " ".join(f"{x},{y_}" for x, y_ in coords)
        body += f'<polyline points="{path}" fill="none" stroke="{BASE}" stroke-width="1.5"/>'
    if coords:
        last = coords[-1]
        body += (
            f'<line x1="{last[0]}" y1="{last[1]}" x2="{now[0]}" y2="{now[1]}" stroke="{BASE}" '
            'stroke-dasharray="2 2"/>'
        )
    for (x, y_), point in zip(coords, points, strict=True):
        tip = f"{point.label}: {point.score:.2f} ({'pass' if point.passed else 'fail'})"
        fill = GREEN if point.passed else RED
        body += (
            f'<circle class="point" cx="{x}" cy="{y_}" r="2.5" fill="{fill}">'
            f"<title>{escape(tip)}</title></circle>"
        )
    fill = GREEN if passed else RED
    body += (
        f'<circle class="current" cx="{now[0]}" cy="{now[1]}" r="4" fill="{fill}" '
        f'stroke="{INK}"><title>this run: {current:.2f}</title></circle>'
    )
    scores = ", ".join(f"{p.score:.2f}" for p in points)
    title = f"score over {len(points)} {history.source}: {scores}; this run {current:.2f}"
    return _svg(height, title, body, kind="trend")
