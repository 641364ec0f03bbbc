"""The `evalward` command line: one small module per command, each imported when it runs.

Every command module imports only the standard library at its top and the engine inside
its `main`, so `evalward --version` and `evalward --help` start in a few milliseconds.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import TYPE_CHECKING, TextIO

from evalward import __version__

if TYPE_CHECKING:
    from evalward.host import Host

COMMANDS = (
    "init",
    "import",
    "run",
    "plan",
    "diff",
    "status",
    "merge",
    "promote",
    "calibrate",
    "validate",
    "schema",
    "action",
)
MODULES = {"import": "import_config"}
"""Commands whose module has another name (`import` is a Python keyword)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalward",
        description="Run the evals of the agents a change touches, compare with a base, gate.",
    )
    parser.add_argument("--version", action="version", version=f"evalward {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"evalward.cli.{MODULES.get(name, name)}").register(commands)
    return parser


def main(argv: list[str], out: TextIO | None = None, host: Host | None = None) -> int:
    """Run the command `argv` names with the `host`'s environment (a new one: this process's)."""
    from evalward.host import Host

    out = out or sys.stdout
    host = host or Host.of_process()
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _refuse(parser, args.command, unknown)
    if args.command is None:
        parser.print_help(out)
        return 0
    command = importlib.import_module(f"evalward.cli.{MODULES.get(args.command, args.command)}")
    code: int = command.main(args, out, host)
    return code


def _refuse(parser: argparse.ArgumentParser, command: str | None, unknown: list[str]) -> None:
    """Refuse what no option of the command takes with the command's own usage (argparse
    says it with the top-level one), naming the option a misspelt one likely meant."""
    import difflib

    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    refusing = commands.choices.get(command, parser) if command is not None else parser
    known = [o for action in refusing._actions for o in action.option_strings]
    first = next((word.split("=", 1)[0] for word in unknown if word.startswith("-")), "")
    close = difflib.get_close_matches(first, known, n=1, cutoff=0.6) if first else []
    hint = f" (did you mean {close[0]}?)" if close else ""
    refusing.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
