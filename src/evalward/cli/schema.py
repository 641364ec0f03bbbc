"""`evalward schema [KIND]`: the JSON Schema of the resource kinds, for editors."""

from __future__ import annotations

import argparse
from typing import Any, TextIO


def register(commands: Any) -> None:
    parser = commands.add_parser("schema", help="print the JSON Schema of the resource kinds")
    parser.add_argument(
        "kind", nargs="?", help="Agent, EvalFixture, Eval or JudgeCalibration (default: all)"
    )


def main(args: argparse.Namespace, out: TextIO) -> int:
    import json

    from evalward.errors import EXIT_OK, ConfigError
    from evalward.resources.problems import did_you_mean
    from evalward.resources.schema import json_schema, kind_names

    kind: str | None = args.kind
    if kind is not None and kind not in kind_names():
        raise ConfigError(
            f"unknown kind {kind!r}; expected one of {', '.join(kind_names())}"
            f"{did_you_mean(kind, kind_names())}"
        )
    print(json.dumps(json_schema(kind), indent=2), file=out)
    return EXIT_OK
