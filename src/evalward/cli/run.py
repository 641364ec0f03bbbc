"""`evalward run`: the action's engine on a laptop: progress, the comment, history deltas.

With `--shard i/n` it runs one part of the plan and writes a partial results file for
`evalward merge` instead of reporting and gating.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from evalward.cli._args import (
    add_mock,
    add_root,
    add_selection,
    positive,
    positive_amount,
    run_output_folder,
)

if TYPE_CHECKING:
    import datetime as dt
    from pathlib import Path

    from evalward.cli._local import Kept
    from evalward.cli._progress import ShownProgress
    from evalward.flows.session import RunVerdict
    from evalward.flows.shard import ShardSpec
    from evalward.host import Host
    from evalward.plan.run_setup import RunSetup
    from evalward.security import Redactor


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
        "what the estimate leaves is enforced as calls are made on those it cannot foresee: "
        "bring-your-own agents' own, a declarative agent's past its run's estimate, and "
        "simulated users'",
    )
    parser.add_argument(
        "--max-cost-usd",
        type=positive_amount,
        metavar="USD",
        help=(
            "a budget of estimated cost in US dollars (the same rule); once the job's calls "
            "have cost it, no agent's call is sent"
        ),
    )
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="pass when everything that ran passes, though the budget skipped fixtures",
    )
    parser.add_argument(
        "--output-dir",
        type=run_output_folder,
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


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    import asyncio
    import datetime as dt
    import sys
    from pathlib import Path

    from evalward.cli._local import WITHOUT_BASE, Kept, Selection, check_base, repository
    from evalward.cli._progress import ProgressBar, ShownProgress
    from evalward.errors import MissingSecretError
    from evalward.flows import shard
    from evalward.git import Git
    from evalward.plan.result_cache import ResultCache
    from evalward.plan.run_setup import Revisions, RunOptions, RunSetup
    from evalward.providers.registry import build_providers, repo_providers
    from evalward.rundata.cache_mode import CacheMode
    from evalward.rundata.spending import Budget
    from evalward.text.escaping import log_line

    env = host.env
    root = repository(args.path)
    spec = shard.ShardSpec.parse(args.shard, "--shard") if args.shard else None
    if spec is not None:
        _refuse_what_a_part_ignores(args, spec)
    _refuse_files_in_the_way(root, part_folder=spec is not None and not args.output_dir)
    kept = Kept.at(root, sys.stderr)
    providers = build_providers(
        env,
        mock_script=args.mock_script,
        config=kept.replies(repo_providers(root), sys.stderr),
        cache_root=root,
    )
    # Traces may echo a key from the environment: everything written or printed is redacted.
    host.note_key_envs(providers.key_envs)
    redact = host.redactor()
    budget = Budget(args.max_model_calls, args.max_cost_usd)
    if args.allow_incomplete and not budget.limited:
        print(
            "evalward: warning: --allow-incomplete is given without --max-model-calls or "
            "--max-cost-usd: it lets the gate pass without the runs a budget leaves out, and "
            "with no budget none is left out, so it changes nothing; give the budget it is "
            "for, or leave it out",
            file=sys.stderr,
        )
    git = Git(root)
    check_base(git, args.base)
    mode = CacheMode.refresh if args.no_cache else CacheMode.read_write
    options = RunOptions(
        parallel=args.parallel,
        cache=None if kept.cache is None else ResultCache(kept.cache, mode),
        budget=budget,
        main_history=kept.cache,
        allow_incomplete=args.allow_incomplete,
    )
    # The clients are built here, once, and passed in: nothing below builds one.
    setup = RunSetup(
        git=git,
        # what the working tree holds that no commit does, before a run writes in it
        revisions=Revisions(
            args.base,
            untracked=_others(git.untracked(), root, args) if args.base else None,
            ignored=_others(sorted(git.ignored()), root, args) if args.base else None,
        ),
        providers=providers,
        env=env,
        options=options,
        shape=Selection.of(args).apply,
        started=host.started,
        unloadable_base=WITHOUT_BASE,
    )
    progress = ShownProgress(bar=ProgressBar(sys.stderr))
    started = dt.datetime.now(dt.UTC)
    try:
        if spec is not None:
            output = Path(args.output_dir or root / ".evalward" / "shards")
            return asyncio.run(_run_part(setup, progress, spec, output, redact, out))
        verdict, attributed = asyncio.run(_run(setup, progress))
    finally:
        progress.bar.close()
        replies, results = providers.response_cache, options.cache
        for unkept in [replies and replies.unkept(), results and results.unkept(root)]:
            if unkept:  # a cache's loss: said, and the run goes on to its report
                print(redact(f"evalward: {unkept}"), file=sys.stderr)
    for line in attributed:  # an error's words may quote what a pull request wrote
        print(redact(f"evalward: {log_line(line)}"), file=sys.stderr)
    outcome = verdict.outcome
    failure = outcome.failure
    if failure is not None and (not outcome.began or isinstance(failure, MissingSecretError)):
        raise failure  # nothing ran, or a key is missing: said without files
    return _report(args, kept, setup, verdict, started, out, redact=redact)


def _others(listed: list[str], root: Path, args: argparse.Namespace) -> tuple[str, ...]:
    """Of the paths of the working tree git does not track (`listed`: those it does not
    ignore, or those it does), the ones the head's runs may read, which attribution's
    variants (commits) cannot hold: not what this command reads or writes itself, the mock
    script and what `--output-dir` holds (an earlier run's files), which no agent is
    given."""
    from pathlib import Path

    given = [Path(p).resolve() for p in (args.mock_script, args.output_dir) if p]
    own = [p.relative_to(root).as_posix() for p in given if p.is_relative_to(root)]
    return tuple(
        path
        for path in listed
        if not any(path == mine or path.startswith(f"{mine}/") for mine in own)
    )


def _refuse_what_a_part_ignores(args: argparse.Namespace, spec: ShardSpec) -> None:
    """`--json` and `--allow-incomplete` are of the report and the gate, which a part has
    neither of: refused, not ignored (a part's stdout was its file's name, not JSON)."""
    from evalward.errors import ConfigError

    part = f"--shard {spec} runs one part of the plan, which neither reports nor gates"
    if args.json:
        raise ConfigError(
            f"--json with --shard: {part}, so there are no results to print (the part's runs "
            f"go to {spec.file_name} in --output-dir, default .evalward/shards); leave out "
            "--json, and give it to `evalward merge`, which prints the whole run's results"
        )
    if args.allow_incomplete:
        raise ConfigError(
            f"--allow-incomplete with --shard: {part}, so there is no gate for it to let "
            "pass; give it to `evalward merge`, which gates the parts"
        )


def _refuse_files_in_the_way(root: Path, *, part_folder: bool) -> None:
    """A file where evalward keeps its result cache (or, `part_folder`, a part's default
    folder) is refused before the run, as one where `--output-dir` goes is: met after the
    runs, it would cost them."""
    from evalward.cli._local import file_in_the_way
    from evalward.errors import ConfigError
    from evalward.report.files import not_a_folder

    kept = root / ".evalward"
    places = {kept / "cache" / "results": "its result cache (.evalward/cache)"}
    if part_folder:
        places[kept / "shards"] = "a part's file (.evalward/shards, unless --output-dir)"
    for folder, what in places.items():
        place = not_a_folder(folder)
        if place is not None:
            raise ConfigError(file_in_the_way(str(place), what))


async def _run(setup: RunSetup, progress: ShownProgress) -> tuple[RunVerdict, list[str]]:
    """The run and its decision, and what attribution said:
    with a base, it traces the run's regressions to their hunks as the base's
    `evalward.yaml` asks (`flows.attribution_runs`), after the decision, which it never
    changes; an error in it is said as a warning. Its clients are closed however it ends."""
    from evalward.flows import session
    from evalward.flows.attribution_runs import attribute_verdict
    from evalward.plan.request import RunRequest

    request = RunRequest(setup, progress)
    try:
        outcome = await session.run(request)
        verdict = session.decide(outcome)
        warnings: list[str] = []
        said = await attribute_verdict(
            request, verdict, lambda warning: warnings.append(f"warning: {warning}")
        )
        return verdict, [*warnings, said] if said else warnings
    finally:
        await setup.providers.aclose()


async def _run_part(
    setup: RunSetup,
    progress: ShownProgress,
    spec: ShardSpec,
    output: Path,
    redact: Redactor,
    out: TextIO,
) -> int:
    """`--shard i/n`: one part, written for `evalward merge`; no report, no gate. A part the
    disk cannot take is said in one line, exit 3: its runs are lost, so it is run again."""
    import sys

    from evalward.errors import EXIT_EXTERNAL, EXIT_INTERRUPTED, EXIT_OK, why_refused
    from evalward.flows import session
    from evalward.flows.shard_signature import KEY_ENV, check_key
    from evalward.plan.request import RunRequest
    from evalward.text.escaping import printable

    key = check_key(setup.env[KEY_ENV], KEY_ENV) if setup.env.get(KEY_ENV) else None
    try:
        part = await session.run_part(RunRequest(setup, progress), spec, output, redact, key)
    finally:
        await setup.providers.aclose()
    if part is None:
        print(f"evalward: shard {spec} cancelled; no results written", file=sys.stderr)
        return EXIT_INTERRUPTED
    if part.unwritten is not None:
        print(
            redact(
                f"evalward: {printable(str(part.path))} was not written: "
                f"{why_refused(part.unwritten)}. The part's runs are lost: free space (or "
                "raise the file size limit) and run the part again."
            ),
            file=sys.stderr,
        )
        return EXIT_EXTERNAL
    print(f"evalward: {part}", file=out)
    return EXIT_OK


def _report(
    args: argparse.Namespace,
    kept: Kept,
    setup: RunSetup,
    verdict: RunVerdict,
    started: dt.datetime,
    out: TextIO,
    *,
    redact: Redactor,
) -> int:
    """The outcome as the command line shows it: history deltas, the local Eval status, the
    comment (or --json) and the files, the spending line of the run's own calls
    (attribution's are said apart). The reports' modules load here, once the run is over."""
    import sys

    from evalward.cli._emit import Output, emit
    from evalward.cli._local import compared
    from evalward.cli.status import record_local
    from evalward.past import history
    from evalward.past.trend import trends
    from evalward.rundata.spending import spending_json

    root = kept.root
    outcome, decision = verdict.outcome, verdict.decision
    evaluation = outcome.evaluation
    if decision.interrupted:
        print(f"evalward: {decision.reason}", file=sys.stderr)
    # Read before this run is recorded: the report's trend shows the runs before it.
    earlier = trends(
        [c.name for c in evaluation.comparisons],
        cache_dir=None if args.no_cache else kept.cache,
        root=None if kept.why else root,
    )
    # An outage says nothing about the agent: it is not a point in its history, and
    # neither is a run whose judge could not score, nor a cancelled run.
    measured = [e for e in evaluation.evals if not (e.provider_unavailable or e.incomplete_reason)]
    keep = not (args.no_history or decision.interrupted or outcome.failure)
    commit = evaluation.head_commit  # as the run found it: its results are of that tree
    deltas = history.record(root, measured, commit=commit) if keep and not kept.why else []
    estimate = evaluation.estimate
    own = outcome.spent
    spent = spending_json(estimate, own.spent()) if estimate and own else None
    color = out.isatty() and "NO_COLOR" not in setup.env
    output = Output(
        out,
        redact,
        as_json=args.json,
        output_dir=args.output_dir,
        extra=history.render(deltas, color=color),
        extra_json={"history": [d.as_json() for d in deltas], "spending": spent},
        in_actions=setup.env.get("GITHUB_ACTIONS") == "true",
    )
    where = compared(setup.git, args.base, commit)
    code = emit(
        output,
        evaluation,
        decision,
        base=bool(args.base),
        run=outcome.run_info(**where),
        trends=earlier,
    )
    # after the files: what the run found is written whatever recording its status meets
    if keep and not (args.fixture or args.reps):  # a narrowed run is no status
        record_local(root, evaluation, started, commit, sys.stderr)
    line = outcome.spending()
    if line is not None:
        print(f"evalward: {line}", file=sys.stderr)
    if outcome.failure is not None:
        raise outcome.failure  # reported, and exits, as ever: its files are written
    late = verdict.signalled_late()
    if late:
        print(f"evalward: {late}", file=sys.stderr)
    return outcome.progress.exit_code(code)
