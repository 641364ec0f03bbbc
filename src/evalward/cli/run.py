"""`evalward run`: the action's engine on a laptop: progress, the comment, history deltas.

With `--shard i/n` it runs one part of the plan and writes a partial results file for
`evalward merge` instead of reporting and gating.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from evalward.cli._args import add_mock, add_root, add_selection, positive, positive_amount


def register(commands: Any) -> None:
    parser = commands.add_parser("run", help="run Evals locally, print the comment, gate")
    add_root(parser)
    add_selection(parser)
    add_mock(parser)
    parser.add_argument(
        "--parallel",
        type=positive,
        default=8,
        help="fixture runs at once for the whole run (default: 8); an Eval's "
        "execution.parallel can only lower it for that Eval's runs",
    )
    parser.add_argument(
        "--max-model-calls",
        type=positive,
        metavar="N",
        help="a budget of estimated model calls: over it, the most severe fixtures run and "
        "the rest are skipped, which fails the gate as incomplete (see --allow-incomplete); "
        "what the estimate leaves is enforced on bring-your-own agents' own calls",
    )
    parser.add_argument(
        "--max-cost-usd",
        type=positive_amount,
        metavar="USD",
        help="a budget of estimated cost in US dollars (the same rule)",
    )
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="pass when everything that ran passes, though the budget skipped fixtures",
    )
    parser.add_argument(
        "--output-dir",
        help="also write the action's files here: results.json, junit.xml, report.html, "
        "comment.md (with --shard: the part's shard-i-of-n.json; default .evalward/shards)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="run everything again instead of reusing results from .evalward/cache, and "
        "store the new results there in place of the old",
    )
    parser.add_argument(
        "--no-history",
        action="store_true",
        help="do not record this run in .evalward/history nor its Evals' status in "
        ".evalward/status",
    )
    parser.add_argument(
        "--shard", metavar="I/N", help="run only part I of N of the plan and write its results"
    )


def main(args: argparse.Namespace, out: TextIO) -> int:
    import asyncio
    import datetime as dt
    import os
    import sys
    from pathlib import Path

    from evalward import history, shard
    from evalward.cli._local import Selection, check_base, emit, repository
    from evalward.cli._progress import ProgressBar
    from evalward.cli.status import record_local
    from evalward.errors import EXIT_INTERRUPTED, EXIT_OK, EvalwardError
    from evalward.evaluation import Evaluation
    from evalward.git import Git
    from evalward.interrupt import RunRecord, until_signalled
    from evalward.pipeline import Revisions, RunOptions, evaluate_change
    from evalward.plan import Plan
    from evalward.providers.registry import build_providers, repo_providers
    from evalward.record.schema import RunInfo
    from evalward.result_cache import CacheMode, ResultCache
    from evalward.results import FixtureResult
    from evalward.seal import KEY_ENV, check_key
    from evalward.security import Redactor
    from evalward.spending import Budget, spending_json, spending_line
    from evalward.spool import TraceSpool
    from evalward.trend import trends

    env = dict(os.environ)
    root = repository(args.path)
    spec = shard.ShardSpec.parse(args.shard, "--shard") if args.shard else None
    providers = build_providers(
        env, mock_script=args.mock_script, config=repo_providers(root), cache_root=root
    )
    # Traces may echo a key from the environment: everything written or printed is redacted.
    redact = Redactor.from_env(env, providers.key_envs)
    progress = ProgressBar(sys.stderr)
    selection = Selection.of(args)
    git = Git(root)
    check_base(git, args.base)
    # SIGINT (Ctrl-C) or SIGTERM stop the runs; those that finished are still reported.
    record = RunRecord()
    traces = TraceSpool()

    def on_result(result: FixtureResult) -> None:
        record.on_result(result)
        progress(result)

    def on_plan(plan: Plan) -> None:
        record.on_plan(plan)
        progress.planned(plan)

    def head() -> str:
        try:
            return git.resolve("HEAD")
        except EvalwardError:
            return ""  # not a git repository, or no commit yet

    async def go() -> int:
        started = dt.datetime.now(dt.UTC)
        revisions = Revisions(base=args.base)
        evaluation: Evaluation | None = None
        try:
            mode = CacheMode.refresh if args.no_cache else CacheMode.read_write
            cache = ResultCache(root / ".evalward" / "cache", mode)
            budget = Budget(args.max_model_calls, args.max_cost_usd)
            options = RunOptions(parallel=args.parallel, cache=cache, budget=budget)
            if spec is not None:
                part = await until_signalled(
                    shard.run_part(
                        spec,
                        git,
                        revisions,
                        providers,
                        env,
                        options,
                        Path(args.output_dir or root / ".evalward" / "shards"),
                        redact,
                        narrow=selection.apply,
                        on_result=on_result,
                        on_plan=on_plan,
                        key=check_key(env[KEY_ENV], KEY_ENV) if env.get(KEY_ENV) else None,
                    ),
                    record,
                )
            else:
                evaluation = await until_signalled(
                    evaluate_change(
                        git,
                        revisions,
                        providers,
                        env,
                        options,
                        on_result=on_result,
                        on_plan=on_plan,
                        shape=selection.apply,
                        traces=traces,
                    ),
                    record,
                )
        finally:
            progress.close()
            await providers.aclose()
        if spec is not None:
            if part is None:
                print(f"evalward: shard {spec} cancelled; no results written", file=sys.stderr)
                return EXIT_INTERRUPTED
            print(f"evalward: {part}", file=out)
            return record.exit_code(EXIT_OK)
        if evaluation is None:
            evaluation = record.partial(traces)
            decision = record.cancelled_decision()
            print(f"evalward: {decision.reason}", file=sys.stderr)
        else:
            decision = evaluation.decision(allow_incomplete=args.allow_incomplete)
        # Read before this run is recorded: the report's trend shows the runs before it.
        earlier = trends(
            [c.name for c in evaluation.comparisons],
            cache_dir=None if args.no_cache else root / ".evalward" / "cache",
            root=root,
        )
        # An outage says nothing about the agent: it is not a point in its history, and
        # neither is a run whose judge could not score, nor a cancelled run.
        measured = [
            e for e in evaluation.evals if not (e.provider_unavailable or e.incomplete_reason)
        ]
        keep = not (args.no_history or record.cancelled)
        deltas = history.record(root, measured, commit=head()) if keep else []
        if keep and not (args.fixture or args.reps):  # a narrowed run is no status
            record_local(root, evaluation, started, head(), sys.stderr)
        estimate = evaluation.estimate
        spent = spending_json(estimate, providers.spent) if estimate is not None else None
        code = emit(
            out,
            evaluation,
            decision,
            base=bool(args.base),
            as_json=args.json,
            output_dir=args.output_dir,
            redact=redact,
            extra=history.render(deltas, color=out.isatty() and "NO_COLOR" not in env),
            extra_json={"history": [d.as_json() for d in deltas], "spending": spent},
            trends=earlier,
            run=RunInfo(
                runs_planned=record.planned,
                runs_done=len(record.done),
                cancelled=record.cancelled,
            ),
        )
        if estimate is not None:
            print(f"evalward: {spending_line(estimate, providers.spent)}", file=sys.stderr)
        return record.exit_code(code)

    return asyncio.run(go())
