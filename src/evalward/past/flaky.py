"""Flakiness learnt on the default branch: each fixture's pass rate across the branch's own
runs (pushes and schedules), for an agent that did not change between them.

A run on the default branch appends, per Eval, what each fixture did on the head (its passes
over its reps), with the agent's fingerprint, the evalward version and the time, to
`fixture-runs/<eval>.json` in the result cache (`record_runs`); `actions/cache` hands that to
pull requests. A pull request reads the records made with the same fingerprint as its base's
agent (`main_history`): a fixture that both passed and failed across them flips without a
change, and is flaky on main at its observed pass rate. Records older than `MAX_AGE_DAYS`, or
made by another evalward version, are stale: said in the comment, never used.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalward.past.history import SAFE_NAME, read_object, write_atomically
from evalward.rundata.results import EvalResult

RUNS_DIR = "fixture-runs"
MAX_RECORDS = 30
MAX_AGE_DAYS = 14
MIN_RUNS = 4
"""Fewer recorded runs of a fixture than this say nothing about its rate."""


@dataclass(frozen=True)
class MainHistory:
    """What the default branch's runs say of one Eval's fixtures, for one base agent."""

    flaky: dict[str, float] = field(default_factory=dict)
    """Fixtures whose outcome flips without a change, and their observed pass rate."""
    stale: str = ""
    """Why the records were not used ("" when they were, or when there are none)."""


def record_runs(
    cache_dir: Path,
    results: Iterable[EvalResult],
    *,
    commit: str,
    agents: Mapping[str, str],
    version: str,
    now: dt.datetime | None = None,
) -> None:
    """Append each head-side Eval's fixture outcomes at `commit` (`agents`: Eval -> its agent's
    fingerprint), keeping the newest `MAX_RECORDS`. A rerun of a commit (a schedule) adds a
    record of its own: runs of an unchanged agent are what tell a flaky fixture."""
    moment = (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds")
    for result in results:
        fingerprint = agents.get(result.eval)
        if result.side != "head" or fingerprint is None or not SAFE_NAME.fullmatch(result.eval):
            continue
        outcomes: dict[str, list[int]] = {}
        for run in result.fixtures:
            if run.provider_unavailable:
                continue
            passes, runs = outcomes.get(run.fixture, [0, 0])
            outcomes[run.fixture] = [passes + run.passed, runs + 1]
        path = cache_dir / RUNS_DIR / f"{result.eval}.json"
        records = _records(path)
        records.append(
            {
                "commit": commit,
                "when": moment,
                "version": version,
                "agent": fingerprint,
                "fixtures": outcomes,
            }
        )
        write_atomically(path, json.dumps({"eval": result.eval, "records": records[-MAX_RECORDS:]}))


def main_history(
    cache_dir: Path,
    eval_name: str,
    *,
    agent: str,
    version: str,
    now: dt.datetime | None = None,
) -> MainHistory:
    """The flaky fixtures of an Eval whose base agent has fingerprint `agent`."""
    if not SAFE_NAME.fullmatch(eval_name):
        return MainHistory()
    records = _records(cache_dir / RUNS_DIR / f"{eval_name}.json")
    if not records:
        return MainHistory()
    same = [r for r in records if r.get("agent") == agent]
    if not same:
        return MainHistory(stale="recorded for another version of the agent than the base's")
    newest = same[-1]
    if newest.get("version") != version:
        return MainHistory(stale=f"recorded by evalward {newest.get('version')}, not {version}")
    moment = now or dt.datetime.now(dt.UTC)
    age = _age(newest, moment)
    if age is None:
        return MainHistory(stale="its record has no readable time")
    if age > dt.timedelta(days=MAX_AGE_DAYS):
        return MainHistory(stale=f"the newest record is {age.days} days old")
    # beside the newest, only records that are not stale themselves count
    fresh = [
        r
        for r in same
        if r.get("version") == version
        and (when := _age(r, moment)) is not None
        and when <= dt.timedelta(days=MAX_AGE_DAYS)
    ]
    return MainHistory(flaky=_flaky(fresh))


def _age(record: dict[str, Any], moment: dt.datetime) -> dt.timedelta | None:
    """How long before `moment` the record was made; None for a time that is not one with
    its zone, as every record evalward writes has."""
    try:
        when = dt.datetime.fromisoformat(str(record.get("when")))
    except ValueError:
        return None
    return moment - when if when.tzinfo is not None else None


def _flaky(records: list[dict[str, Any]]) -> dict[str, float]:
    totals: dict[str, list[int]] = {}
    for record in records:
        fixtures = record.get("fixtures")
        if not isinstance(fixtures, dict):
            continue
        for name, counts in fixtures.items():
            if not (isinstance(counts, list) and len(counts) == 2):
                continue
            passes, runs = (int(c) for c in counts)
            if not 0 <= passes <= runs:
                continue
            seen = totals.setdefault(str(name), [0, 0])
            seen[0] += passes
            seen[1] += runs
    return {
        name: passes / runs
        for name, (passes, runs) in sorted(totals.items())
        if runs >= MIN_RUNS and 0 < passes < runs
    }


def _records(path: Path) -> list[dict[str, Any]]:
    records = read_object(path).get("records")
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []
