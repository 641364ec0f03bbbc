"""`evalward status`: seed 003's status of every Eval: its phase (Pending, Running, Passed,
Failed, or Stale when its agent changed since its last run), last result and score, fixtures
passing, when it last ran and its judge agreement.

It reads the default branch's status from the result cache (`--cache-dir`), which the action
writes on push and schedule runs and `actions/cache` keeps; without one (or with `--local`),
the status of local runs, which `evalward run` writes to `.evalward/status`. A store the
checkout could have filled (committed, in a submodule, behind a symbolic link) is not read,
as the action does not read such a cache. `record_local` is `evalward run`'s side.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from evalward.cli._args import add_root

if TYPE_CHECKING:
    import datetime as dt
    from pathlib import Path

    from evalward.host import Host
    from evalward.past.status import StatusRow
    from evalward.record.evaluation import Evaluation

NO_STATUS = (
    "No Eval has a status yet. The action records the default branch's on every push to it "
    "and every `schedule` run, in its result cache (`cache-dir`, kept by actions/cache; "
    "restore that cache into {cache} to read it here), and `evalward run` records local "
    "runs' in .evalward/status."
)

REWRITTEN = {
    "default-branch": "delete it, or restore the action's cache again after its next push to "
    "the default branch or `schedule` run, which writes it anew",
    "local": "delete it, or let the next `evalward run` of that Eval write it anew (one "
    "without --no-history, --fixture or --reps)",
}
"""What to do about a status file that is ignored, by store: the next run that records the
Eval's status writes it anew; deleting it only stops the warning sooner."""


DEFAULT_CACHE_DIR = ".evalward/cache"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "status", help="each Eval's status: phase (Stale, …), last result, score, last run"
    )
    add_root(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the status as JSON (the status file's field names)",
    )
    parser.add_argument(
        "--local",
        action="store_true",
        help="the status of local runs (.evalward/status), not the default branch's",
    )
    parser.add_argument(
        "--cache-dir",
        default=DEFAULT_CACHE_DIR,
        help="the result cache holding the default branch's status, as the action's "
        "`cache-dir` (default: .evalward/cache)",
    )


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    import json
    import sys

    from evalward.cli._local import distrusted, repository
    from evalward.definitions.loader import load_resources
    from evalward.errors import EXIT_OK, ConfigError
    from evalward.past.status import LOCAL_STATUS_DIR, STATUS_DIR, StatusStore, status_rows
    from evalward.resources.reading.discover import relative

    host.started()  # no run follows: nothing here lives long enough to be worth the pause
    root = repository(args.path)
    resources = load_resources(root)
    cache = root / args.cache_dir  # an absolute --cache-dir stays as it is
    if args.cache_dir != DEFAULT_CACHE_DIR and not args.local and not cache.is_dir():
        raise ConfigError(
            f"--cache-dir {args.cache_dir}: no such folder, so there is no status of the "
            "default branch to read; give the folder the action's `cache-dir` keeps (its "
            "cache restored there), or leave it out"
        )
    # each store: its kind, the folder whose trust decides, the status folder, what it is
    local = ("local", root / LOCAL_STATUS_DIR, root / LOCAL_STATUS_DIR, "local runs' status")
    branch = ("default-branch", cache, cache / STATUS_DIR, "the result cache")
    stores = [local] if args.local else [branch, local]
    source: str | None = None
    directory: Path | None = None
    rows = status_rows(resources, None)
    notes: list[str] = []
    for kind, trusted_root, folder, what in stores:
        shown = f"{what} ({relative(trusted_root, root)})"
        distrust = distrusted(root, trusted_root, what=shown)
        if distrust:
            notes.append(f"{relative(folder, root)} not read: {distrust}")
            continue
        store = StatusStore(folder)
        found = status_rows(resources, store)
        notes += [f"{problem}; {REWRITTEN[kind]}" for problem in store.problems]
        if any(row.record is not None for row in found):
            source, directory, rows = kind, folder, found
            break
    redact = host.redactor()
    for note in notes:
        print(redact(f"evalward: {note}"), file=sys.stderr)
    if args.json:
        document = {
            "source": source,
            "directory": relative(directory, root) if directory else None,
            "evals": [row.document() for row in rows],
        }
        print(redact(json.dumps(document, indent=2, ensure_ascii=False)), file=out)
        return EXIT_OK
    print(redact(render(rows)), file=out)
    if source is None:
        print(NO_STATUS.format(cache=relative(cache, root)), file=out)
    else:
        whose = (
            "the default branch's status (the action's push and schedule runs)"
            if source == "default-branch"
            else "local runs' status (`evalward run`), not the default branch's"
        )
        print(f"From {relative(directory or root, root)}: {whose}.", file=out)
    return EXIT_OK


def render(rows: list[StatusRow]) -> str:
    """The table, then a line for each Eval that is Stale, Running or was interrupted."""
    from evalward.past.status import EvalStatus
    from evalward.text.escaping import terminal_inline

    header = (
        "Eval",
        "Agent",
        "Phase",
        "Last result",
        "Score",
        "Passing/total",
        "Last run at",
        "Judge agreement",
    )
    table = [header]
    lines: list[str] = []
    for row in rows:
        record = row.record or EvalStatus(name=row.name)  # none yet: every field unset
        kappa = record.judge_agreement
        table.append(
            (
                row.name,
                row.agent,
                row.phase.value,
                record.last_result or "—",
                record.last_score or "—",
                f"{record.passing_fixtures}/{record.total_fixtures}"
                if record.last_result is not None
                else "—",
                (record.last_run_at or "—").replace("T", " ").replace("Z", " UTC"),
                "—" if kappa is None else f"{kappa:.2f}",
            )
        )
        if row.stale_because:
            lines.append(f"{row.name} is Stale: {row.stale_because}.")
        if record.running is not None:
            lines.append(
                f"{row.name} is Running since {record.running.at} "
                f"({_attempt(record.running.event, record.running.commit)}); a run that was "
                "killed leaves this until the next run."
            )
        if record.interrupted is not None:
            cut = record.interrupted
            lines.append(
                f"{row.name}: the run of {cut.at} ({_attempt(cut.event, cut.commit)}) recorded "
                f"no result: {cut.reason}."
            )
    widths = [max(len(terminal_inline(r[i], 80)) for r in table) for i in range(len(header))]
    text = [
        "  ".join(terminal_inline(cell, 80).ljust(widths[i]) for i, cell in enumerate(r)).rstrip()
        for r in table
    ]
    return "\n".join(text + ([""] + [terminal_inline(x, 600) for x in lines] if lines else []))


def _attempt(event: str, commit: str) -> str:
    return ", ".join(part for part in (event, commit[:7]) if part) or "no detail"


def record_local(
    root: Path, evaluation: Evaluation, started: dt.datetime, commit: str, err: TextIO
) -> None:
    """`evalward run`'s results as the local runs' status (.evalward/status)."""
    from evalward.cli._local import distrusted
    from evalward.past.status import LOCAL_STATUS_DIR, StatusStore
    from evalward.past.status_run import RunSource, StatusRun

    directory = root / LOCAL_STATUS_DIR
    distrust = distrusted(root, directory, what=f"the Evals' status ({LOCAL_STATUS_DIR})")
    if distrust:
        print(f"evalward: the Evals' status was not written: {distrust}", file=err)
        return
    run = StatusRun(StatusStore(directory), RunSource("local", commit, started))
    try:
        run.finish(
            evaluation.evals,
            evaluation.agents,
            private=evaluation.private,
            unfinished=evaluation.unfinished_evals(),
        )
    except OSError as exc:  # costs the status alone: the run's report is written after
        from evalward.errors import printable, why_refused

        where = printable(str(directory))  # not the name of the temporary file it was refused
        print(
            f"evalward: the Evals' status was not written in {where}: {why_refused(exc)}", file=err
        )
