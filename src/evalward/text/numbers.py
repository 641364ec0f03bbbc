"""How scores, thresholds and changes are written, so that a number never contradicts its
verdict: a failing score is never written equal to or above its threshold (0.8983 against 0.90
is "0.898", not "0.90"), and a change too small for two decimals keeps its sign and the digits
that show it ("-0.004", never "-0.00"). Every surface (the comment, report.html, the check run,
the terminal) writes its numbers through here.
"""

from __future__ import annotations

import math

MIN_DIGITS = 2
MAX_DIGITS = 6


def threshold_text(threshold: float) -> str:
    """Two decimals, or the few more a threshold such as 0.875 is written with."""
    for digits in range(MIN_DIGITS, MAX_DIGITS + 1):
        shown = f"{threshold:.{digits}f}"
        if abs(float(shown) - threshold) < 1e-9:
            return shown
    # no few decimals write it: six significant digits, so that a tiny threshold such as
    # 1.2e-07 is never written as zero, which any score would seem to reach
    return f"{threshold:.{MAX_DIGITS}g}"


def score_text(score: float, threshold: float | None = None, passed: bool | None = None) -> str:
    """Two decimals, or as many more as it takes for the score to sit on the side of the
    threshold (as written by `threshold_text`) that its verdict says: below it when it failed,
    at or above it when it passed. `passed` is None for a score with no verdict."""
    if threshold is None or passed is None:
        return f"{score:.{MIN_DIGITS}f}"
    limit = float(threshold_text(threshold))
    for digits in range(MIN_DIGITS, MAX_DIGITS + 1):
        shown = f"{score:.{digits}f}"
        if (float(shown) >= limit) == passed:
            return shown
    if not passed and score < limit:  # within a millionth below: cut, never rounded up
        scale = 10**MAX_DIGITS
        cut = f"{math.floor(score * scale) / scale:.{MAX_DIGITS}f}"
        if float(cut) < limit:
            return cut
    for significant in range(1, 18):  # a threshold too small for decimals: 17 digits are exact
        shown = f"{score:.{significant}g}"
        if (float(shown) >= limit) == passed:
            return shown
    # a verdict the score does not make (an Eval whose judge could not score): the caller
    # words it; the score is written as it is
    return f"{score:.{MIN_DIGITS}f}"


def delta_text(delta: float | None) -> str:
    """A signed change with two decimals ("+0.25", "-0.60"); one that two decimals would write
    as zero keeps the digits that show it ("-0.004"); no change at all is "0.00"; none is "—"."""
    if delta is None:
        return "—"
    for digits in range(MIN_DIGITS, MAX_DIGITS - 1):
        shown = f"{delta:+.{digits}f}"
        if float(shown) != 0:
            return shown
    return f"{0:.{MIN_DIGITS}f}"


def side_text(value: float, limit: float, spec: str) -> str:
    """`value` as `spec` writes it (".0f", ".2f", ".1e", "g"), or with the more digits, in the
    same notation, that it takes to stay on its side of `limit`: a run of 1000.5 ms over a
    1000 ms bound is "1000.5 ms", not "1000 ms"."""
    shown = format(value, spec)
    notation = "e" if spec.endswith("e") else "f"
    given = spec[1:-1] if spec.startswith(".") and spec[-1] in "ef" else ""
    for digits in range(int(given or 0) + 1, 18):
        read = float(shown)
        if value == limit or (read > limit if value > limit else read < limit):
            return shown
        shown = f"{value:.{digits}{notation}}"
    return repr(value)


def bound_text(value: float, beside: float | None = None) -> str:
    """Two decimals, or two significant digits below 0.01; said beside a level (`beside`), as
    many more as it takes to read on its side of the level as the level is written
    (`side_text`): a p of 0.046 against 0.05 is "0.046", never "0.05"."""
    spec = ".1e" if value < 0.01 else ".2f"
    if beside is None:
        return format(value, spec)
    return side_text(value, float(bound_text(beside)), spec)


def seconds_text(seconds: float) -> str:
    """A duration as people read it: "850 ms", "13.6 s", "2 min 05 s"."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
