"""`evalward diff A.json B.json`: compare two results files as the PR comment would.

A is the before (its head-side results play the base), B the after. Exit code: the gate's
on B's Evals (0 pass, 1 fail), so a script can use it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from evalward.text.counts import counted, first_few

if TYPE_CHECKING:
    from pathlib import Path

    from evalward.host import Host
    from evalward.rundata.results import EvalResult


LISTED = 5
"""The Evals a note names at most: a note is one line of the comment."""


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
    notes = _missing(before, after, args.before, args.after) + _own_verdicts(after, args.after)
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
        said = {"result": decision.result.value, "evals": document, "notes": notes}
        print(json.dumps(said, indent=2), file=out)
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
                notes=notes,
            ),
            sink=TERMINAL,
            whole_report="each run's `results.json` and `report.html`",
        )
        print(body, file=out)
    return decision.exit_code


def _read(path: Path, side: str) -> tuple[list[EvalResult], set[tuple[str, str]]]:
    """The head-side EvalResults of a results file, with their fixture runs, as `side`."""
    from evalward.record.read import read_results

    document = read_results(path)
    runs = [f.model_copy(update={"side": side}) for f in document.fixtures if f.side == "head"]
    private = {(f.eval, f.fixture) for f in document.fixtures if f.visibility == "private"}
    results: list[EvalResult] = [
        entry.model_copy(
            update={"side": side, "fixtures": [r for r in runs if r.eval == entry.eval]}
        )
        for entry in document.evals
        if entry.side == "head"
    ]
    return results, private


def _missing(
    before: list[EvalResult], after: list[EvalResult], first: str, second: str
) -> list[str]:
    """A note naming the Evals of the earlier file the later one lacks: the table lists the
    later file's Evals only, so without it they would vanish from the comparison unsaid."""
    names = {r.eval for r in after}
    gone = sorted({r.eval for r in before} - names)
    if not gone:
        return []
    unrelated = not names & {r.eval for r in before}
    shared = "; the two files share no Eval: give two runs of the same suite" if unrelated else ""
    return [
        f"{second} has no results of {counted(len(gone), 'Eval')} of "
        f"{first}: {first_few(gone, LISTED)}; they are not compared{shared}"
    ]


def _own_verdicts(after: list[EvalResult], second: str) -> list[str]:
    """A note naming the Evals of the later file whose verdict its own run settled with tests
    diff cannot run again: adaptive reps' sequential tests need the Eval's gate policy, and a
    pairwise judge a model, neither of which results.json holds. Their verdict lines (head
    against "base not run", the regressions counted) are then that run's, not this
    comparison's, and said to be. One note, naming LISTED Evals at most:
    a note is one line of the comment, and a suite of such Evals would fill it with copies."""
    own = sorted({r.eval for r in after if r.sequential is not None or r.pairwise is not None})
    if not own:
        return []
    named = first_few(own, LISTED)
    whose = f"{named}: its verdict is" if len(own) == 1 else f"{named}: their verdicts are"
    return [
        f"{whose} {second}'s own, settled when it ran (sequential tests, a pairwise judge: "
        "diff cannot run them again); Base → Head compares the two files, the verdict lines "
        "do not: run `evalward run --base REF` for the change's"
    ]
