"""`evalward schema [KIND]`: the JSON Schema of the resource kinds, for editors."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from evalward.host import Host


def register(commands: Any) -> None:
    parser = commands.add_parser("schema", help="print the JSON Schema of the resource kinds")
    parser.add_argument(
        "kind", nargs="?", help="Agent, EvalFixture, Eval or JudgeCalibration (default: all)"
    )


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    import json

    from evalward.errors import EXIT_OK, ConfigError
    from evalward.resources.models import KINDS
    from evalward.resources.reading.problems import did_you_mean
    from evalward.resources.schema import json_schema

    host.started()  # no run follows: nothing here lives long enough to be worth the pause
    kind: str | None = args.kind
    if kind is not None and kind not in KINDS:
        raise ConfigError(
            f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}{did_you_mean(kind, KINDS)}"
        )
    print(json.dumps(json_schema(kind), indent=2), file=out)
    return EXIT_OK
