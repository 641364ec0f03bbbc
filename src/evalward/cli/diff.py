"""`evalward diff A.json B.json`: compare two results files as the PR comment would.

A is the before (its head-side results play the base), B the after. Exit code: the gate's
on B's Evals (0 pass, 1 fail), so a script can use it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pathlib import Path


def register(commands: Any) -> None:
    parser = commands.add_parser("diff", help="compare two results.json files like the comment")
    parser.add_argument("before", help="results.json of the earlier run (plays the base)")
    parser.add_argument("after", help="results.json of the later run")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")


def main(args: argparse.Namespace, out: TextIO) -> int:
    import json
    from pathlib import Path

    from evalward.compare import compare
    from evalward.escaping import TERMINAL
    from evalward.gate import decide
    from evalward.report.markdown import ReportContext, marker_for, render_comment

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
                private=before_private | after_private,
            ),
            sink=TERMINAL,
        )
        print(body, file=out)
    return decision.exit_code


def _read(path: Path, side: str) -> tuple[list[Any], set[tuple[str, str]]]:
    """The head-side EvalResults of a results file, with their fixture runs, as `side`."""
    import json

    from evalward.errors import ConfigError
    from evalward.report.files import RESULTS_SCHEMA_VERSION
    from evalward.results import EvalResult, FixtureResult

    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc}); give a results.json") from None
    if not isinstance(document, dict) or "evals" not in document or "fixtures" not in document:
        raise ConfigError(f"{path}: not an evalward results.json (no `evals` and `fixtures`)")
    version = document.get("schemaVersion")
    if version != RESULTS_SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: results schemaVersion {version!r}; this evalward reads "
            f"{RESULTS_SCHEMA_VERSION}"
        )
    try:
        runs = [
            FixtureResult.model_validate(f).model_copy(update={"side": side})
            for f in document["fixtures"]
            if f.get("side") == "head"
        ]
        private = {
            (f["eval"], f["fixture"])
            for f in document["fixtures"]
            if f.get("visibility") == "private"
        }
        results = []
        for raw in document["evals"]:
            if raw.get("side") != "head":
                continue
            result = EvalResult.model_validate(raw)
            own = [r for r in runs if r.eval == result.eval]
            results.append(result.model_copy(update={"side": side, "fixtures": own}))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: a malformed results.json ({exc})") from None
    return results, private
