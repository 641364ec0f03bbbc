"""Arguments several commands share. The module imports the standard library only, so parsing
stays cheap; a check that needs more (the run's file names) imports it when its option is given,
by a command that imports it to run anyway."""

from __future__ import annotations

import argparse
import os


def add_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        nargs="?",
        default=".",
        type=nameable,
        help="a folder of the repository: its git working tree is read from the top (default: .)",
    )


def nameable(text: str) -> str:
    """A path whose every name a file system can hold (`files.inside.overlong_name`)."""
    from evalward.files.inside import NAME_MAX, overlong_name

    name = overlong_name(text)
    if name is not None:
        raise argparse.ArgumentTypeError(
            f"{name[:40]}…: a name of {len(os.fsencode(name))} bytes, longer than a file "
            f"or folder's name can be ({NAME_MAX})"
        )
    return text


def add_selection(parser: argparse.ArgumentParser) -> None:
    """What to run: the change against --base, narrowed by agent, Eval, fixture and reps."""
    parser.add_argument(
        "--base",
        help="compare with this git ref and run only the Evals the change affects "
        "(default: run every Eval, no baseline)",
    )
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="A",
        help="only Evals of this agent (repeatable)",
    )
    parser.add_argument(
        "--eval", action="append", default=[], metavar="E", help="only this Eval (repeatable)"
    )
    parser.add_argument(
        "--fixture",
        action="append",
        default=[],
        metavar="F",
        help="only this fixture (repeatable)",
    )
    parser.add_argument(
        "--reps", type=reps, metavar="N", help="reps per fixture instead of the Eval's own"
    )


def add_mock(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mock-script", help="serve every model call from this mock script")


MAX_REPS = 1000
"""The most reps `--reps` asks of each fixture: the bound of an Eval's `repsPerFixture`."""


def reps(text: str) -> int:
    """`--reps`: a whole number from 1 to MAX_REPS (a larger one planned runs without end)."""
    value = positive(text)
    if value > MAX_REPS:
        raise argparse.ArgumentTypeError(
            f"expected at most {MAX_REPS} (as an Eval's repsPerFixture), got {value}"
        )
    return value


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def positive_amount(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an amount such as 0.50, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected an amount above 0, got {text}")
    return value


def output_folder(text: str) -> str:
    """A folder to write into (created if missing). A file where it or a folder on the way to
    it must be, or a folder evalward cannot write, is refused as the command starts, not
    after a run whose results it would lose."""
    from pathlib import Path

    from evalward.report.files import not_a_folder, unwritable

    path = Path(nameable(text))
    place = not_a_folder(path)
    if place is not None:
        raise argparse.ArgumentTypeError(
            f"{place} is a file, where evalward needs a folder to write into; give a "
            "folder (it is created if missing)"
        )
    reason = unwritable(path)
    if reason is not None:
        raise argparse.ArgumentTypeError(f"{reason}; give a folder evalward can write into")
    return text


def run_output_folder(text: str) -> str:
    """`output_folder` for a run's files: one of them that cannot be written where it goes (a
    folder named results.json) is refused before the run, whose results it would lose."""
    from pathlib import Path

    from evalward.report.files import not_a_file

    place = not_a_file(Path(output_folder(text)))
    if place is not None:
        raise argparse.ArgumentTypeError(
            f"{place} is not a file, and evalward writes the run's {place.name} there; remove "
            "it or give another folder"
        )
    return text
