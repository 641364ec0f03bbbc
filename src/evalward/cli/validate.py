"""`evalward validate`: check every resource file; exit 0, or 2 with every problem located."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    pass

from evalward.cli._args import add_root


def register(commands: Any) -> None:
    parser = commands.add_parser("validate", help="check every resource file and exit 0 or 2")
    add_root(parser)


def main(args: argparse.Namespace, out: TextIO) -> int:
    from pathlib import Path

    from evalward.errors import EXIT_OK, ConfigError
    from evalward.resources import load_resources

    root = Path(args.path)
    if not root.is_dir():
        raise ConfigError(f"{root}: not a directory; give the repository root to validate")
    resources = load_resources(root.resolve())
    for warning in resources.warnings:
        print(f"warning: {warning.render()}", file=out)
    print(
        f"{len(resources.agents)} agents, {len(resources.fixtures)} fixtures, "
        f"{len(resources.evals)} evals OK",
        file=out,
    )
    return EXIT_OK
