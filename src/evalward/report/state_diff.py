"""A playground's state in report.html: what the run changed, as a bounded line diff of the
state before the run and after it (both kept, bounded, in the run record)."""

from __future__ import annotations

import difflib
from typing import Any

from evalward.playground_state import PlaygroundRecord

DIFF_LINES = 400
"""Lines of diff shown per run at most; the rest is counted."""


def state_diff(record: PlaygroundRecord) -> dict[str, Any]:
    """{"n": the playground's name, "d": [[op, line]...] with op "-", "+", " " or "@",
    "more": lines left out, "t": whether the recorded states were cut}."""
    lines: list[list[str]] = []
    for line in difflib.unified_diff(
        record.initial.splitlines(), record.final.splitlines(), lineterm="", n=2
    ):
        if line.startswith(("---", "+++")):
            continue
        lines.append(["@", line] if line.startswith("@@") else [line[:1], line[1:]])
    shown: dict[str, Any] = {"n": record.name, "d": lines[:DIFF_LINES]}
    if len(lines) > DIFF_LINES:
        shown["more"] = len(lines) - DIFF_LINES
    if record.truncated:
        shown["t"] = True
    return shown
