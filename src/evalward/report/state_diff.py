"""A playground's state in report.html: what the run changed, as the bounded line diff from
the state before the run to the state after it that the run record keeps."""

from __future__ import annotations

from typing import Any

from evalward.rundata.playground_state import PlaygroundRecord


def state_diff(record: PlaygroundRecord) -> dict[str, Any]:
    """{"n": the playground's name, "d": [[op, line]...] with op "-", "+", " " or "@",
    "more": lines left out, "t": whether the final state was cut}."""
    shown: dict[str, Any] = {"n": record.name, "d": record.changes}
    if record.changes_left_out:
        shown["more"] = record.changes_left_out
    if record.truncated:
        shown["t"] = True
    return shown
