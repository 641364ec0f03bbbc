"""`evalward calibrate NAME`: replay a JudgeCalibration and print each judge model's κ."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    pass

from evalward.cli._args import add_mock, add_root


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "calibrate", help="replay a JudgeCalibration and print each judge model's Cohen's κ"
    )
    parser.add_argument("name", help="the JudgeCalibration's metadata.name")
    add_root(parser)
    add_mock(parser)
    parser.add_argument("--parallel", type=int, default=4, help="judge calls at once")


def main(args: argparse.Namespace, out: TextIO) -> int:
    """Exit 0 when the calibration is Calibrated (κ ≥ 0.6), else 1."""
    import asyncio
    import os
    from pathlib import Path

    from evalward.errors import EXIT_GATE_FAILED, EXIT_OK
    from evalward.providers.registry import build_providers, check_credentials, repo_providers
    from evalward.resources import load_resources
    from evalward.results import CalibrationPhase
    from evalward.scoring.calibration import calibrate_named, render_calibration
    from evalward.security import Redactor

    env = dict(os.environ)
    root = Path(args.path).resolve()
    resources = load_resources(root)
    located = resources.calibrations.get(args.name)
    providers = build_providers(
        env, mock_script=args.mock_script, config=repo_providers(root), cache_root=root
    )

    async def go() -> int:
        try:
            if located is not None:
                check_credentials(env, list(located.resource.spec.judge_models), providers)
            result = await calibrate_named(
                args.name, resources, providers, parallel=max(1, args.parallel)
            )
        finally:
            await providers.aclose()
        # a judge model's error note can quote what its server answered, a key included
        redact = Redactor.from_env(env, providers.key_envs)
        print(redact(render_calibration(result)), file=out)
        return EXIT_OK if result.phase is CalibrationPhase.calibrated else EXIT_GATE_FAILED

    return asyncio.run(go())
