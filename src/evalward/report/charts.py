"""The report's pictures as plain inline SVG, drawn here so that they need no script, no
library and no network: an Eval's base and head scores against its threshold, its fixtures on
head (passing, regressed, failing), and its score over recent runs when there are any.

Each chart is a small fixed-size figure for a table cell (small multiples: one row per Eval),
with a `<title>` that says in words what it shows. Text in it is escaped here.
"""

from __future__ import annotations

from html import escape

from evalward.past.trend import Trend
from evalward.text.counts import counted

GREEN = "#1a7f37"
RED = "#cf222e"
BASE = "#8c959f"
INK = "#1f2328"
REGRESSED = "#82071e"
WIDTH = 150


def _svg(height: int, title: str, body: str, *, kind: str) -> str:
    label = escape(title)
    return (
        f'<svg class="chart {kind}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{label}">'
        f"<title>{label}</title>{body}</svg>"
    )


def _x(value: float) -> float:
    return round(max(0.0, min(1.0, value)) * WIDTH, 1)


def score_bars(
    *,
    head: float,
    base: float | None,
    threshold: float | None,
    passed: bool,
    head_text: str | None = None,
    base_text: str | None = None,
    threshold_text: str | None = None,
) -> str:
    """Base (grey) above head (green when the Eval passes, else red), the threshold a line
    (none with adaptive reps, which read no threshold). The title writes the numbers as the
    table does (`digits`), never contradicting the verdict."""
    before = "no base" if base is None else f"base {base_text or f'{base:.2f}'}"
    title = f"{before}, head {head_text or f'{head:.2f}'}"
    if threshold is not None:
        title += f", threshold {threshold_text or f'{threshold:.2f}'}"
    body = ""
    if base is not None:
        body += f'<rect class="base" x="0" y="3" width="{_x(base)}" height="9" fill="{BASE}"/>'
    colour = GREEN if passed else RED
    body += f'<rect class="head" x="0" y="15" width="{_x(head)}" height="9" fill="{colour}"/>'
    if threshold is not None:
        edge = min(_x(threshold), WIDTH - 1)
        body += (
            f'<line class="threshold" x1="{edge}" x2="{edge}" y1="0" y2="27" stroke="{INK}" '
            'stroke-width="2" stroke-dasharray="3 2"/>'
        )
    return _svg(27, title, body, kind="bars")


def outcomes(*, passing: int, regressed: int, failing: int, total: int) -> str:
    """The Eval's gating fixtures on head as one bar: passing (green), regressed (dark red),
    failing but not regressed (red), the rest (grey: timed out with nothing evaluated, an
    outage). The share that regressed is what a pull request's reviewer looks for."""
    if total <= 0:
        return _svg(14, "no fixture gates", "", kind="outcomes")
    rest = max(0, total - passing - regressed - failing)
    parts = [
        ("passing", passing, GREEN),
        ("regressed", regressed, REGRESSED),
        ("failing", failing, RED),
        ("other", rest, BASE),
    ]
    body, x = "", 0.0
    for name, number, colour in parts:
        if not number:
            continue
        width = round(number / total * WIDTH, 1)
        tip = f"{number} {name}"
        body += (
            f'<rect class="{name}" x="{round(x, 1)}" y="2" width="{width}" height="10" '
            f'fill="{colour}"><title>{escape(tip)}</title></rect>'
        )
        x += width
    said = ", ".join(f"{number} {name}" for name, number, _ in parts if number)
    return _svg(14, f"{counted(total, 'fixture')} on head: {said}", body, kind="outcomes")


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
