"""GitHub Actions workflow commands (`::group::`, `::error file=…,line=…::`), safely escaped.

A message cannot start a new command line: `%`, CR and LF are encoded as the runner expects,
and property values also encode `:` and `,` (`escaping.command_data`, `command_property`).
GitHub shows messages and titles as annotations, so bidirectional controls are shown by name,
as in the comment.
"""

from __future__ import annotations

from evalward.escaping import command_data, command_property, reveal_bidi


def command(name: str, message: str = "", **properties: str | int | None) -> str:
    props = ",".join(
        f"{key}={command_property(reveal_bidi(str(value)))}"
        for key, value in properties.items()
        if value
    )
    return f"::{name}{' ' + props if props else ''}::{command_data(reveal_bidi(message))}"
