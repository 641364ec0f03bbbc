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
    import sys

    from evalward.cli._local import repository
    from evalward.definitions.loader import load_resources
    from evalward.errors import EXIT_EXTERNAL, EXIT_GATE_FAILED, EXIT_OK
    from evalward.providers.registry import build_providers, check_credentials, repo_providers
    from evalward.rundata.results import CalibrationPhase
    from evalward.scoring.judges.calibration import calibrate_named, render_calibration
    from evalward.scoring.judges.pairwise_panel import calibrate_pairs, gates, render_pairs

    env = host.env
    root = repository(args.path)
    resources = load_resources(root)
    host.started()
    located = resources.calibrations.get(args.name)
    providers = build_providers(
        env, mock_script=args.mock_script, config=repo_providers(root), cache_root=root
    )
    host.note_key_envs(providers.key_envs)

    async def go() -> int:
        pairs_said, pairs_ok = "", True
        try:
            if located is not None:
                check_credentials(list(located.resource.spec.judge_models), providers)
            if located is not None and located.resource.spec.pairs:
                measured = [
                    await calibrate_pairs(
                        args.name, located.resource, providers, model, parallel=args.parallel
                    )
                    for model in located.resource.spec.judge_models
                ]
                pairs_said = render_pairs(measured)
                pairs_ok = any(gates(m) for m in measured)
                if not located.resource.spec.examples:
                    print(host.redactor()(pairs_said), file=out)
                    return EXIT_OK if pairs_ok else EXIT_GATE_FAILED
            result = await calibrate_named(
                args.name, resources, providers, parallel=args.parallel, timeout=args.timeout
            )
        finally:
            await providers.aclose()
            unkept = providers.response_cache and providers.response_cache.unkept()
            if unkept:  # a cache's loss: said, and the calibration goes on to its result
                print(host.redactor()(f"evalward: {unkept}"), file=sys.stderr)
        # a judge model's error note can quote what its server answered, a key included
        redact = host.redactor()
        print(redact(render_calibration(result)), file=out)
        if pairs_said:
            print(redact(pairs_said), file=out)
        if not pairs_ok:
            return EXIT_GATE_FAILED
        if result.outage:
            return EXIT_EXTERNAL
        complete = not any(m.errors for m in result.models)
        calibrated = result.phase is CalibrationPhase.calibrated
        return EXIT_OK if calibrated and complete else EXIT_GATE_FAILED

    return asyncio.run(go())
