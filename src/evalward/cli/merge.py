"""`evalward merge PARTS…`: combine every shard's results, then report and gate like `run`.

The merge computes the plan itself, from the repository (`--repo`) and the options the parts
ran with (`--base`, `--agent`, `--eval`, `--fixture`, `--reps`: give the same ones), and
takes no part of another commit or plan. The parts' budget is theirs (`run --shard
--max-model-calls`); `--allow-incomplete` is the gate's, so it is given here. With
`EVALWARD_SHARD_KEY` set, every part must be sealed with it (`run --shard` seals with it
when it is set). A part missing or given twice is an error, never a partial pass.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from evalward.cli._args import add_selection, run_output_folder

if TYPE_CHECKING:
    from evalward.host import Host


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "merge", help="combine the shard-i-of-n.json files of `run --shard`, report and gate"
    )
    parser.add_argument("parts", nargs="+", help="every shard-i-of-n.json, once each")
    parser.add_argument("--repo", default=".", help="the repository the parts ran in (default: .)")
    add_selection(parser)
    parser.add_argument(
        "--output-dir",
        type=run_output_folder,
        help="also write results.json, junit.xml, report.html, comment.md",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="pass when everything that ran passes, though the parts' budget skipped fixtures",
    )


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    import asyncio
    from pathlib import Path

    from evalward.cli._emit import Output, emit
    from evalward.cli._local import WITHOUT_BASE, Selection, compared, repository
    from evalward.flows import session
    from evalward.flows.shard_signature import KEY_ENV, check_key
    from evalward.git import Git
    from evalward.plan.progress import RunProgress
    from evalward.plan.request import RunRequest, ShardParts
    from evalward.plan.run_setup import Revisions, RunOptions, RunSetup
    from evalward.providers.registry import build_providers, repo_providers

    env = host.env
    root = repository(args.repo)
    key = check_key(env[KEY_ENV], KEY_ENV) if env.get(KEY_ENV) else None
    providers = build_providers(env, config=repo_providers(root), cache_root=root)
    host.note_key_envs(providers.key_envs)
    setup = RunSetup(
        Git(root),
        Revisions(base=args.base),
        providers,
        env,
        options=RunOptions(allow_incomplete=args.allow_incomplete),
        shape=Selection.of(args).apply,
        started=host.started,
        unloadable_base=WITHOUT_BASE,
    )
    parts = ShardParts(tuple(Path(p) for p in args.parts), key)
    outcome = asyncio.run(session.run(RunRequest(setup, RunProgress(), parts)))
    if outcome.failure is not None:
        raise outcome.failure  # a part refused, or none given: said, nothing written
    return emit(
        Output(
            out,
            host.redactor(),
            as_json=args.json,
            output_dir=args.output_dir,
            in_actions=host.env.get("GITHUB_ACTIONS") == "true",
        ),
        outcome.evaluation,
        session.decide(outcome).decision,
        base=args.base is not None,
        run=outcome.run_info(**compared(setup.git, args.base, outcome.evaluation.head_commit)),
    )
