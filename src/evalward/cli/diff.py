"""`evalward diff A.json B.json`: compare two results files as the PR comment would.

A is the before (its head-side results play the base), B the after. Exit code: the gate's
on B's Evals (0 pass, 1 fail), so a script can use it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pathlib import Path

    from evalward.host import Host


def register(commands: Any) -> None:
    parser = commands.add_parser("diff", help="compare two results.json files like the comment")
    parser.add_argument("before", help="results.json of the earlier run (plays the base)")
    parser.add_argument("after", help="results.json of the later run")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    import json
    from pathlib import Path

    from evalward.record.summary import summarize
    from evalward.report.markdown import ReportContext, marker_for, render_comment
    from evalward.text.escaping import TERMINAL
    from evalward.verdict.compare import compare
    from evalward.verdict.gate import decide

    host.started()  # no run follows: nothing here lives long enough to be worth the pause
    before, before_private = _read(Path(args.before), side="base")
    after, after_private = _read(Path(args.after), side="head")
    comparisons = compare(before + after)
    decision = decide(comparisons, None)
    if args.json:
        document = [
            {
                "eval": c.name,
                "before": c.base.score if c.base else None,
                "after": c.head.score,
                "delta": c.delta,
                "passed": c.head.passed,
                "fixtures": [{"fixture": f.fixture, "change": f.change.value} for f in c.fixtures],
            }
            for c in comparisons
        ]
        print(json.dumps({"result": decision.result.value, "evals": document}, indent=2), file=out)
    else:
        body = render_comment(
            ReportContext(
                comparisons=comparisons,
                decision=decision,
                marker=marker_for("diff"),
                # the runs of both files, summed as a run's comment sums both sides'
                summary=summarize(
                    comparisons, decision, [f for r in before + after for f in r.fixtures]
                ),
                private=before_private | after_private,
            ),
            sink=TERMINAL,
        )
        print(body, file=out)
    return decision.exit_code


def _read(path: Path, side: str) -> tuple[list[Any], set[tuple[str, str]]]:
    """The head-side EvalResults of a results file, with their fixture runs, as `side`."""
    from evalward.record.read import read_results

    document = read_results(path)
    runs = [f.model_copy(update={"side": side}) for f in document.fixtures if f.side == "head"]
    private = {(f.eval, f.fixture) for f in document.fixtures if f.visibility == "private"}
    results = [
        entry.model_copy(
            update={"side": side, "fixtures": [r for r in runs if r.eval == entry.eval]}
        )
        for entry in document.evals
        if entry.side == "head"
    ]
    return results, private
