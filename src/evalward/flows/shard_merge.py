"""Merge every shard's part into the Evaluation an unsharded run would have produced.

A part is taken for what its seal proves (`seal`: made by evalward with the shard key), and
for nothing more. The merge computes the plan itself, from the base's definitions as an
unsharded run would (`expected`), and refuses a part of another commit, one that ran another
plan or other definitions, one missing or given twice, and a result the split gives to
another part. It scores with its own definitions and reports its own change set: nothing of
what gates comes from a part but the results of the runs it was given. It judges the pairs
of an Eval judged pairwise itself, once every part's runs are in: the split may give a
pair's base run and its head run to two parts, so no part judges any (`run_part`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalward.attribution.hunks import targets_files
from evalward.errors import ConfigError
from evalward.execute.pairs import PairJudging
from evalward.execute.plan_scores import score_evals
from evalward.flows.shard import assign, definitions_digest, plan_record, run_key, source_of
from evalward.flows.shard_signature import broken
from evalward.plan.changes import ChangeSet
from evalward.plan.plan import Plan, PlannedRun, at_most, private_runs
from evalward.plan.prepare import prepare_change
from evalward.plan.request import PartCheck
from evalward.plan.run_context import RunContext
from evalward.plan.run_setup import RunSetup
from evalward.providers.pricing import PriceTable
from evalward.record.evaluation import Evaluation
from evalward.record.read import read_part
from evalward.record.schema import PlanRecord, RunKey, ShardPart
from evalward.resources import ResourceSet
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spending import Spent
from evalward.rundata.spool import TraceSpool
from evalward.scoring.judges.pairwise_panel import Judged
from evalward.verdict.compare import compare, no_baseline_notes
from evalward.verdict.settle import settle


@dataclass
class Expected:
    """What the merge computed itself: the commits, the whole plan, the definitions it scores
    with, the change, the prices the split was balanced by, and the run's context over its
    own checkouts, in which it judges the pairs."""

    source: dict[str, str]
    plan: Plan
    resources: Mapping[Side, ResourceSet]
    changes: ChangeSet
    notes: list[str]
    prices: PriceTable
    context: RunContext


@contextmanager
def expected(setup: RunSetup) -> Iterator[Expected]:
    """The plan as the parts should have computed it (`pipeline.prepare_change` with the
    same settings), while its checkouts exist."""
    with prepare_change(setup) as prepared:
        resources = {side: c.resources for side, c in prepared.checkouts.items()}
        whole = at_most(prepared.plan, resources)
        yield Expected(
            source_of(setup.git, setup.revisions),
            whole,
            resources,
            prepared.changes,
            prepared.notes,
            setup.providers.prices,
            RunContext.of(whole, prepared.checkouts, setup),
        )


Part = tuple[str, dict[str, Any], ShardPart]
"""A part as read: its file's name, its document as written (what its seal covers), and
what it holds."""


async def merge_parts(
    paths: Sequence[Path],
    plan: Expected,
    key: str | None,
    check: PartCheck | None = None,
) -> Evaluation:
    """Read each part's file and merge them into the Evaluation of `plan`; `check` sees each
    part before anything merges (the action refuses parts the checkout brings). With `key`
    every part must be sealed under it; without, none may be sealed.

    The files' documents hold every trace again; they are dropped once merged (the merged
    Evaluation's traces are in its own spool)."""
    parts = [(str(path), *read_part(path)) for path in paths]
    if check is not None:
        for path in paths:
            check(path)
    return await merge(parts, plan, key)


async def merge(parts: Sequence[Part], plan: Expected, key: str | None) -> Evaluation:
    """Every part, once each, of `plan` -> the Evaluation of the whole plan, its pairs
    judged (`_judged_pairs`)."""
    if not parts:
        raise ConfigError("merge: no shard results given; pass every shard-i-of-n.json file")
    count = _every_part_once(parts, plan, key)
    split = assign(plan.plan, plan.resources, plan.prices, count)
    owner = dict(zip(map(run_key, plan.plan.runs), split, strict=True))
    order = {run_key(run): position for position, run in enumerate(plan.plan.runs)}
    results: dict[RunKey, FixtureResult] = {}
    given: dict[RunKey, str] = {}
    """The part each result came from."""
    skipped: list[PlannedRun] = []
    # Per Eval: excused only if every part that skipped a run of its base's gating fixtures
    # could not hold that Eval's share even alone.
    over: set[str] = set()
    held: set[str] = set()
    traces = TraceSpool()
    notes = list(plan.notes)
    spent = Spent()
    for name, _, part in parts:
        index = part.shard.index
        if part.spent is not None:
            spent = spent.plus(part.spent.spent())
        for run in part.skipped:
            _given_to(name, index, run, owner)
            skipped.append(PlannedRun(Side(run[0]), run[1], run[2], run[3]))
            if plan.plan.base_gates(skipped[-1]):
                of = skipped[-1].eval
                (over if of in part.base_over_evals else held).add(of)
        for result in part.fixtures:
            found = (result.side, result.eval, result.fixture, result.rep)
            _given_to(name, index, found, owner)
            if found in results:  # before its trace is kept: one trace a run
                again = (
                    "twice; rerun the part that wrote it"
                    if given[found] == name
                    else f"as {given[found]} does; give each part once"
                )
                raise ConfigError(f"{name}: holds {_describe(found)} {again}")
            results[found], given[found] = traces.keep(result), name
        notes += [note for note in part.notes if note not in notes]
    absent = sorted(set(order) - {run_key(r) for r in skipped} - set(results))
    if absent:
        raise ConfigError(
            f"the parts together lack {len(absent)} run(s) of the plan, e.g. "
            f"{_describe(absent[0])}; rerun the part that should have run it"
        )
    fixtures = sorted(results.values(), key=lambda r: order[(r.side, r.eval, r.fixture, r.rep)])
    definitions = {s: r.evals for s, r in plan.resources.items()}
    pairs = await _judged_pairs(plan.context, fixtures, traces)
    evals = settle(score_evals(plan.plan, definitions, fixtures), definitions, pairs=pairs)
    return Evaluation(
        changes=plan.changes,
        plan=plan.plan,
        fixtures=fixtures,
        evals=evals,
        comparisons=compare(evals, plan.plan.added),
        notes=notes + no_baseline_notes(evals),
        private=private_runs(plan.plan, plan.resources),
        skipped=sorted(skipped),
        base_over=frozenset(over - held),
        traces=traces,
        spent_elsewhere=spent,
        agent_files=targets_files(plan.plan, plan.resources),
    )


async def _judged_pairs(
    context: RunContext, fixtures: list[FixtureResult], traces: TraceSpool
) -> dict[str, Judged]:
    """Per Eval judged pairwise, its judge and its pairs, judged over every part's runs as an
    unsharded run judges its own: settled without them, a fixture the pairwise judge finds
    worse would pass on its pass rate alone."""
    judging = PairJudging(context, traces)
    if not judging.active:
        return {}
    await judging.judge(fixtures)
    return judging.judged()


def _every_part_once(parts: Sequence[Part], plan: Expected, key: str | None) -> int:
    """Each part is sealed, of this merge's commits, plan and definitions, and given once,
    and none is missing. Returns how many parts the plan was split into."""
    record = PlanRecord.model_validate(plan_record(plan.plan))
    digest = definitions_digest(plan.plan, plan.resources)
    count = parts[0][2].shard.count
    seen: dict[int, str] = {}
    for name, document, part in parts:
        why = broken(document, key)
        if why is not None:
            raise ConfigError(
                f"{name}: not taken, {why}: a part must come from a shard job of this run, "
                "sealed with the same `shard-key` as this merge's"
            )
        source = part.source
        if (source.repository, source.run) != (plan.source["repository"], plan.source["run"]):
            raise ConfigError(
                f"{name}: made by workflow run {source.run or 'none'} of "
                f"{source.repository or 'no repository'}, and this merge is run "
                f"{plan.source['run'] or 'none'} of {plan.source['repository'] or 'no repository'}"
                "; merge the parts of this run's shard jobs"
            )
        if source.model_dump() != plan.source:
            raise ConfigError(
                f"{name}: holds results for commit {source.head[:12]} (base "
                f"{source.base[:12] or 'none'}), and this merge gates "
                f"{plan.source['head'][:12]} (base {plan.source['base'][:12] or 'none'}); "
                "merge the parts of this run's shard jobs"
            )
        if part.plan != record or part.definitions != digest:
            raise ConfigError(
                f"{name}: ran another plan or other definitions than this merge computes "
                "from the base's (another commit, base or `gate-config`, `run-all`, or "
                "narrowing options); give the shard jobs and the merge the same settings"
            )
        index = part.shard.index
        if part.shard.count != count or not 1 <= index <= count:
            raise ConfigError(
                f"{name}: shard {index}/{part.shard.count} is not a part of the "
                f"{count}-part split of the others"
            )
        if index in seen:
            raise ConfigError(
                f"shard {index}/{count} is given twice ({seen[index]} and {name}); give each "
                "part once"
            )
        seen[index] = name
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        raise ConfigError(
            f"shard {', '.join(missing)} missing: got {len(seen)} of {count} parts; a merge "
            "of some parts would gate on part of the plan, so every part is required"
        )
    return count


def _given_to(name: str, index: int, key: RunKey, owner: Mapping[RunKey, int]) -> None:
    part = owner.get(key)
    if part is None:
        raise ConfigError(f"{name}: {_describe(key)} is not a run of the plan")
    if part != index - 1:
        raise ConfigError(
            f"{name}: holds {_describe(key)}, which the split gives to part {part + 1}"
        )


def _describe(key: Sequence[Any]) -> str:
    return f"{key[0]} {key[1]} / {key[2]} rep {key[3]}"
