"""What the action tells the runner: workflow commands (`::group::`, `::error file=…,line=…::`),
safely escaped, its outputs (GITHUB_OUTPUT), the job summary and the bypass audit log.

A message cannot start a new command line: `%`, CR and LF are encoded as the runner expects,
and property values also encode `:` and `,` (`escaping.command_data`, `command_property`).
GitHub shows messages and titles as annotations, so bidirectional controls are shown by name,
as in the comment.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalward.security import Redact
from evalward.text.escaping import UNSHOWABLE, command_data, command_property, reveal_controls


def command(name: str, message: str = "", **properties: str | int | None) -> str:
    props = ",".join(
        f"{key}={command_property(reveal_controls(str(value)))}"
        for key, value in properties.items()
        if value
    )
    return f"::{name}{' ' + props if props else ''}::{command_data(reveal_controls(message))}"


AUDIT_FILE = "audit.jsonl"
"""The audit record the action appends to in its output folder, beside a run's files."""


def append_audit(output_dir: Path, record: dict[str, Any], redact: Redact) -> None:
    """Append the record as one line of audit.jsonl, whole or not at all: a line cut short
    (a full disk) is taken back, so that the next run's record is not joined to half of
    this one."""
    output_dir.mkdir(parents=True, exist_ok=True)
    line = redact(json.dumps(record, sort_keys=False)) + "\n"
    data = memoryview(line.encode("utf-8", errors=UNSHOWABLE))
    with (output_dir / AUDIT_FILE).open("ab", buffering=0) as handle:
        start = handle.seek(0, os.SEEK_END)
        try:
            while data:
                data = data[handle.write(data) or 0 :]
        except OSError:
            handle.truncate(start)
            raise


def append_summary(path: str | None, markdown: str, redact: Redact) -> None:
    if not path:
        return
    with Path(path).open("a", encoding="utf-8", errors=UNSHOWABLE) as handle:
        handle.write(redact(markdown) + "\n")


@dataclass
class Outputs:
    """The step's GITHUB_OUTPUT, and the names this run has written to it: whatever ends the
    run, `result` is written once (`run.main`)."""

    path: str | None
    written: set[str] = field(default_factory=set)

    def write(self, values: dict[str, str], redact: Redact) -> None:
        """GITHUB_OUTPUT in the heredoc form, with a random delimiter no value can contain."""
        if self.path:
            with Path(self.path).open("a", encoding="utf-8", errors=UNSHOWABLE) as handle:
                for name, value in values.items():
                    delimiter = f"EOF_{secrets.token_hex(8)}"
                    handle.write(f"{name}<<{delimiter}\n{redact(value)}\n{delimiter}\n")
        self.written.update(values)
