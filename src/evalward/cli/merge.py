"""`evalward merge PARTS…`: combine every shard's results, then report and gate like `run`.

A part missing or given twice is an error, never a partial pass.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "merge", help="combine the shard-i-of-n.json files of `run --shard`, report and gate"
    )
    parser.add_argument("parts", nargs="+", help="every shard-i-of-n.json, once each")
    parser.add_argument(
        "--output-dir", help="also write results.json, junit.xml, report.html, comment.md"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def main(args: argparse.Namespace, out: TextIO) -> int:
    import os
    from pathlib import Path

    from evalward.cli._local import emit
    from evalward.report.files import RunInfo
    from evalward.security import Redactor
    from evalward.shard import merge_parts

    merged = merge_parts([Path(p) for p in args.parts])
    evaluation = merged.evaluation
    decision = evaluation.decision()
    return emit(
        out,
        evaluation,
        decision,
        base=merged.compared,
        as_json=args.json,
        output_dir=args.output_dir,
        redact=Redactor.from_env(os.environ),
        run=RunInfo(runs_planned=len(evaluation.plan.runs), runs_done=len(evaluation.fixtures)),
    )
