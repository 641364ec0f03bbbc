"""The `evalward` command line: the same engine as the action, for a laptop or any CI."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TextIO

from evalward import __version__
from evalward.errors import EXIT_GATE_FAILED, EXIT_OK, ConfigError
from evalward.gate import decide
from evalward.git import Git
from evalward.pipeline import Revisions, RunOptions, evaluate_change
from evalward.providers.registry import build_providers
from evalward.report import files
from evalward.report.markdown import ReportContext, marker_for, render_comment
from evalward.resources import load_resources
from evalward.resources.problems import did_you_mean
from evalward.result_cache import ResultCache
from evalward.security import Redactor


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalward",
        description="Run the evals of the agents a change touches, compare with a base, gate.",
    )
    parser.add_argument("--version", action="version", version=f"evalward {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser("run", help="run Evals locally and print the PR comment")
    run.add_argument("path", nargs="?", default=".", help="repository root (default: .)")
    run.add_argument(
        "--base",
        help="compare with this git ref and run only the Evals the change affects "
        "(default: run every Eval, no baseline)",
    )
    run.add_argument("--mock-script", help="serve every model call from this mock script")
    run.add_argument("--parallel", type=int, default=8, help="runs at once (default: 8)")
    run.add_argument("--output-dir", help="also write results.json and comment.md here")
    run.add_argument(
        "--no-cache",
        action="store_true",
        help="run everything again instead of reusing results from .evalward/cache",
    )

    validate = commands.add_parser("validate", help="check every resource file and exit 0 or 2")
    validate.add_argument("path", nargs="?", default=".", help="repository root (default: .)")

    calibrate = commands.add_parser(
        "calibrate", help="replay a JudgeCalibration and print each judge model's Cohen's κ"
    )
    calibrate.add_argument("name", help="the JudgeCalibration's metadata.name")
    calibrate.add_argument("path", nargs="?", default=".", help="repository root (default: .)")
    calibrate.add_argument("--mock-script", help="serve every model call from this mock script")
    calibrate.add_argument("--parallel", type=int, default=4, help="judge calls at once")
    schema = commands.add_parser("schema", help="print the JSON Schema of the resource kinds")
    schema.add_argument(
        "kind", nargs="?", help="Agent, EvalFixture, Eval or JudgeCalibration (default: all)"
    )

    commands.add_parser("action", help="run as the GitHub Action (reads the GITHUB_* environment)")
    return parser


def main(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    if args.command == "run":
        return _run(args, out)
    if args.command == "validate":
        return _validate(Path(args.path), out)
    if args.command == "calibrate":
        return _calibrate(args, out)
    if args.command == "schema":
        return _schema(args.kind, out)
    if args.command == "action":
        from evalward import action

        return action.main(out=out)
    build_parser().print_help(out)
    return EXIT_OK


def _run(args: argparse.Namespace, out: TextIO) -> int:
    env = dict(os.environ)
    root = Path(args.path).resolve()
    providers = build_providers(env, mock_script=args.mock_script)
    redact = Redactor.from_env(env)

    async def go() -> int:
        try:
            cache = None if args.no_cache else ResultCache(root / ".evalward" / "cache")
            evaluation = await evaluate_change(
                Git(root),
                Revisions(base=args.base),
                providers,
                env,
                RunOptions(parallel=args.parallel, cache=cache),
            )
        finally:
            await providers.aclose()
        decision = decide(evaluation.comparisons, None)
        body = render_comment(
            ReportContext(
                comparisons=evaluation.comparisons,
                decision=decision,
                changes=evaluation.changes if args.base else None,
                skipped_base=evaluation.plan.skipped_base,
                marker=marker_for("local"),
            )
        )
        if args.output_dir:
            output_dir = Path(args.output_dir)
            files.write_results(output_dir, evaluation, decision, redact)
            files.write_text(output_dir / "comment.md", body, redact)
        print(redact(body), file=out)
        return decision.exit_code

    return asyncio.run(go())


def _validate(root: Path, out: TextIO) -> int:
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


def _calibrate(args: argparse.Namespace, out: TextIO) -> int:
    """Exit 0 when the calibration is Calibrated (κ ≥ 0.6), else 1."""
    from evalward.providers.registry import check_credentials
    from evalward.results import CalibrationPhase
    from evalward.scoring.calibration import calibrate_named, render_calibration

    env = dict(os.environ)
    resources = load_resources(Path(args.path).resolve())
    located = resources.calibrations.get(args.name)
    providers = build_providers(env, mock_script=args.mock_script)

    async def go() -> int:
        try:
            if located is not None:
                check_credentials(env, list(located.resource.spec.judge_models), providers)
            result = await calibrate_named(
                args.name, resources, providers, parallel=max(1, args.parallel)
            )
        finally:
            await providers.aclose()
        print(render_calibration(result), file=out)
        return EXIT_OK if result.phase is CalibrationPhase.calibrated else EXIT_GATE_FAILED

    return asyncio.run(go())


def _schema(kind: str | None, out: TextIO) -> int:
    import json

    from evalward.resources.schema import json_schema, kind_names

    if kind is not None and kind not in kind_names():
        raise ConfigError(
            f"unknown kind {kind!r}; expected one of {', '.join(kind_names())}"
            f"{did_you_mean(kind, kind_names())}"
        )
    print(json.dumps(json_schema(kind), indent=2), file=out)
    return EXIT_OK
