"""`evalward calibrate NAME`: replay a JudgeCalibration and print each judge model's κ."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from evalward.cli._args import add_mock, add_root, positive, positive_amount

if TYPE_CHECKING:
    from evalward.host import Host


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "calibrate", help="replay a JudgeCalibration and print each judge model's Cohen's κ"
    )
    parser.add_argument("name", help="the JudgeCalibration's metadata.name")
    add_root(parser)
    add_mock(parser)
    parser.add_argument(
        "--parallel",
        type=positive,
        default=4,
        help="judge calls at once (default: 4), never more than the judge's provider takes "
        "(its maxConcurrency in evalward.yaml)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_amount,
        default=60.0,
        metavar="SECONDS",
        help="how long one judge call may take (default: 60, a judge call's own limit)",
    )


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    """Exit 0 when the calibration is Calibrated (κ ≥ 0.6) with every example scored, 3 when
    no example could be scored because the judges' provider was unavailable (an outage), else
    1 (an Eval does not gate with a judge whose calibration misses examples)."""
    import asyncio
    from pathlib import Path

    from evalward.errors import EXIT_EXTERNAL, EXIT_GATE_FAILED, EXIT_OK
    from evalward.providers.registry import build_providers, check_credentials, repo_providers
    from evalward.resources import load_resources
    from evalward.rundata.results import CalibrationPhase
    from evalward.scoring.calibration import calibrate_named, render_calibration

    env = host.env
    root = Path(args.path).resolve()
    resources = load_resources(root)
    host.started()
    located = resources.calibrations.get(args.name)
    providers = build_providers(
        env, mock_script=args.mock_script, config=repo_providers(root), cache_root=root
    )
    host.note_key_envs(providers.key_envs)

    async def go() -> int:
        try:
            if located is not None:
                check_credentials(env, list(located.resource.spec.judge_models), providers)
            result = await calibrate_named(
                args.name, resources, providers, parallel=args.parallel, timeout=args.timeout
            )
        finally:
            await providers.aclose()
        # a judge model's error note can quote what its server answered, a key included
        redact = host.redactor()
        print(redact(render_calibration(result)), file=out)
        if result.outage:
            return EXIT_EXTERNAL
        complete = not any(m.errors for m in result.models)
        calibrated = result.phase is CalibrationPhase.calibrated
        return EXIT_OK if calibrated and complete else EXIT_GATE_FAILED

    return asyncio.run(go())
