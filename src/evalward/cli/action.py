"""`evalward action`: run as the GitHub Action, from the GITHUB_* environment and INPUT_*."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from evalward.host import Host


def register(commands: Any) -> None:
    commands.add_parser("action", help="run as the GitHub Action (reads the GITHUB_* environment)")


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    from evalward.action.run import main as run_action

    return run_action(out=out, host=host)
