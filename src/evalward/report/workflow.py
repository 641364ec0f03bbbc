"""GitHub Actions workflow commands (`::group::`, `::error file=…,line=…::`), safely escaped.

A message cannot start a new command line: `%`, CR and LF are encoded as the runner expects,
and property values also encode `:` and `,`. GitHub shows messages and titles as annotations,
so bidirectional controls are shown by name, as in the comment (report/escape.py).
"""

from __future__ import annotations

from evalward.report.escape import reveal_bidi


def _data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(value: str) -> str:
    return _data(value).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str = "", **properties: str | int | None) -> str:
    props = ",".join(
        f"{key}={_property(reveal_bidi(str(value)))}" for key, value in properties.items() if value
    )
    return f"::{name}{' ' + props if props else ''}::{_data(reveal_bidi(message))}"
