"""What the scripts that write a generated doc share: write it, or with `--check` exit 1 when
the committed file is not what the script would write (CI runs the check)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_or_check(target: Path, render: Callable[[], str], script: str, description: str) -> int:
    """The main of `scripts/<script>`, which writes `target` as `render` makes it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="fail when the file is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            print(f"{target.relative_to(ROOT)} is out of date: run scripts/{script}")
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    return 0
