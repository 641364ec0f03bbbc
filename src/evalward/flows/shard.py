"""Split a plan into n deterministic parts balanced by expected cost, and run one of them.

`run_part` runs part i and writes a partial results file (`evalward run --shard i/n`, the
action's `shard` input): its results, the whole plan it was split from and a digest of the
definitions it ran, sealed with the shard key (`seal`). `shard_merge` takes every part and
checks each against the plan it computes itself.

Balancing is longest-processing-time first: runs sorted by estimated cost (estimate.estimate_run;
model calls when a model has no price; plus RUN_OVERHEAD), each given to the part with the least
so far; ties go to the lower part and the earlier run, so every machine computes the same split.
The runs of the fixtures the base gates with are split first, by the base's estimates (`assign`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalward.errors import ConfigError
from evalward.flows import pipeline
from evalward.flows.shard_signature import canonical, seal
from evalward.git import Git
from evalward.plan.estimate import budget_estimate, estimate_run
from evalward.plan.plan import Plan, PlannedRun, at_most
from evalward.plan.progress import RunProgress
from evalward.plan.run_setup import Revisions, RunSetup
from evalward.providers.pricing import PriceTable
from evalward.record.schema import PlanRecord, ShardIndex, ShardPart, ShardSource, SpentInfo
from evalward.record.write import part_document
from evalward.report.files import write_text
from evalward.resources import ResourceSet
from evalward.rundata.sides import Side
from evalward.rundata.spending import Estimate
from evalward.security import Redactor
from evalward.verdict.compare import no_baseline_notes

RUN_OVERHEAD = 0.05
"""Every run also costs a start-up (a process, a judge set-up), relative to the dearest run:
so runs that make no model call (bring-your-own agents) still spread over the parts."""
_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
MAX_SHARDS = 256
"""The most parts a plan is cut into: the most jobs a GitHub Actions matrix makes. Each part
is a slot of the cut, so a count far beyond it could not even be held in memory."""


@dataclass(frozen=True)
class ShardSpec:
    index: int
    """1-based."""
    count: int

    @classmethod
    def parse(cls, text: str, where: str) -> ShardSpec:
        match = _SPEC.match(text)
        if match is None or not 1 <= int(match[1]) <= int(match[2]) <= MAX_SHARDS:
            raise ConfigError(
                f"{where}: expected i/n with 1 <= i <= n <= {MAX_SHARDS} (e.g. 2/4), got {text!r}"
            )
        return cls(int(match[1]), int(match[2]))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def file_name(self) -> str:
        return f"shard-{self.index}-of-{self.count}.json"


@dataclass(frozen=True)
class WrittenPart:
    """What `run_part` left: the part's file and how much of the plan it ran."""

    spec: ShardSpec
    path: Path
    runs: int
    planned: int
    """Runs in the whole plan, every part's together."""
    unwritten: OSError | None = None
    """Why the part's file could not be written (a full disk, a file size limit): none of
    it is on disk, so its runs are lost and the part is run again."""

    def __str__(self) -> str:
        return f"shard {self.spec}: {self.runs} of {self.planned} runs -> {self.path}"


class _Splitter:
    """The plan shaper of one part: keeps the whole plan and the definitions it was split
    from, which the part's file carries so that `merge` can check and score the whole."""

    def __init__(self, spec: ShardSpec, prices: PriceTable) -> None:
        self.spec = spec
        self.prices = prices
        self.whole = Plan()
        self.definitions: Mapping[Side, ResourceSet] = {}

    def __call__(self, plan: Plan, resources: Mapping[Side, ResourceSet]) -> Plan:
        plan = at_most(plan, resources)  # parts cannot take turns: no adaptive rounds
        self.whole, self.definitions = plan, resources
        # part `spec.index` of the plan; the Evals and skip notes stay whole
        parts = assign(plan, resources, self.prices, self.spec.count)
        return plan.with_runs(
            [run for run, part in zip(plan.runs, parts, strict=True) if part == self.spec.index - 1]
        )


async def run_part(
    setup: RunSetup,
    spec: ShardSpec,
    output_dir: Path,
    redact: Redactor,
    progress: RunProgress,
    key: str | None = None,
) -> WrittenPart:
    """Run part `spec` of the plan and write its shard-i-of-n.json in `output_dir` (redacted,
    and sealed with `key`: `seal`), telling `progress` what runs.

    The phases as `pipeline.evaluate_change` runs them, the plan shaped as the set-up says
    (the command line's --fixture/--reps) and then split. Nothing is reported or decided: the
    comment and the gate are the merge's, and so are the pairwise judge's pairs. An error
    that stopped the runs is raised as itself: a part stopped part-way writes nothing, since
    the merge would miss its runs.
    """
    splitter = _Splitter(spec, setup.providers.prices)
    # a pair's two runs may fall to two parts: the merge judges every pair (`shard_merge`)
    unpaired = dataclasses.replace(setup.options, judge_pairs=False)
    shaped = dataclasses.replace(setup.shaped(splitter), options=unpaired)
    evaluation = await pipeline.evaluate_change(shaped, progress)
    part = ShardPart(
        shard=ShardIndex(index=spec.index, count=spec.count),
        source=ShardSource.model_validate(source_of(setup.git, setup.revisions)),
        plan=PlanRecord.model_validate(plan_record(splitter.whole)),
        definitions=definitions_digest(splitter.whole, splitter.definitions),
        skipped=[run_key(run) for run in evaluation.skipped],
        base_over_evals=sorted(evaluation.base_over),
        spent=SpentInfo.of(setup.providers.spent),
    )
    # whether an Eval has a baseline is the merge's to say, of every part's base runs
    said = no_baseline_notes(evaluation.evals)
    evaluation.notes = [note for note in evaluation.notes if note not in said]
    document = part_document(evaluation, part)
    # Sealed as written: redaction may change the text, so the seal is of the redacted part.
    document = json.loads(redact(json.dumps(document)))
    if key is not None:
        document = seal(document, key)
    path = output_dir / spec.file_name
    try:
        write_text(path, json.dumps(document, indent=2) + "\n", redact)
    except OSError as exc:  # the machine's refusal, not a bug: the front end says it
        return WrittenPart(spec, path, len(evaluation.fixtures), len(splitter.whole.runs), exc)
    return WrittenPart(spec, path, len(evaluation.fixtures), len(splitter.whole.runs))


def assign(
    plan: Plan, resources: Mapping[Side, ResourceSet], prices: PriceTable, count: int
) -> list[int]:
    """The 0-based part of each run of the plan, in plan order.

    The runs of the fixtures the base gates with are split first, by what the budget counts
    for them (`budget_estimate`: the base's agent for a head run), so each part's share of
    them is the base's own to decide; every other run then fills the parts, and every run of
    a fixture held to what its base run offered (`Plan.offered_first`) goes to the part of its
    first, so that base run is done before its head runs are scored. A part's budget
    says of which Evals it could not hold its share even alone (`Trimmed.base_over`):
    balanced by the head's own estimates, a costly fixture the pull request adds would fill
    one part alone and crowd the base's runs into the others, past their budgets."""
    whole = dict(resources)
    gating = [i for i, run in enumerate(plan.runs) if plan.base_gates(run)]
    rest = [i for i, run in enumerate(plan.runs) if not plan.base_gates(run)]
    counted = [budget_estimate(plan.runs[i], plan, whole, prices) for i in gating]
    own = [estimate_run(plan.runs[i], resources[plan.runs[i].side], prices) for i in rest]
    loads = [0.0] * count
    parts = [0] * len(plan.runs)
    for positions, estimates in ((gating, counted), (rest, own)):
        _fill(positions, _weights(estimates), loads, parts)
    # a head run held to what the base's run of its fixture offered is scored beside it
    together: dict[tuple[str, str], int] = {}
    for at, run in enumerate(plan.runs):
        if (run.eval, run.fixture) in plan.offered_first:
            parts[at] = together.setdefault((run.eval, run.fixture), parts[at])
    return parts


def _weights(estimates: list[Estimate]) -> list[float]:
    """Each run's weight: its cost (its model calls when a model has no price) relative to
    the dearest, plus RUN_OVERHEAD."""
    priced = all(e.cost_usd is not None for e in estimates) and any(e.cost_usd for e in estimates)
    measures = [(e.cost_usd or 0.0) if priced else float(e.calls) for e in estimates]
    scale = max(measures, default=0.0) or 1.0
    return [m / scale + RUN_OVERHEAD for m in measures]


def _fill(positions: list[int], weights: list[float], loads: list[float], parts: list[int]) -> None:
    """Give each run at `positions` to the part with the least load so far, heaviest first
    (ties: the lower part, the earlier run)."""
    for at in sorted(range(len(positions)), key=lambda i: (-weights[i], positions[i])):
        part = min(range(len(loads)), key=lambda p: (loads[p], p))
        parts[positions[at]] = part
        loads[part] += weights[at]


def source_of(git: Git, revisions: Revisions) -> dict[str, str]:
    """The commits a plan is made from, resolved: the head and the base ("" for none); and
    the workflow run it is made in, as the runner names it to every job of the run (its
    attempt left out, so that the merge job alone may be run again)."""
    return {
        "head": git.resolve(revisions.head or "HEAD"),
        "base": git.resolve(revisions.base) if revisions.base else "",
        "repository": os.environ.get("GITHUB_REPOSITORY", ""),
        "run": os.environ.get("GITHUB_RUN_ID", ""),
    }


def plan_record(plan: Plan) -> dict[str, Any]:
    """The whole plan as a part carries it, and as `merge` compares it with its own."""
    record = {
        "evals": plan.evals,
        "runs": [run_key(r) for r in plan.runs],
        "skippedBase": plan.skipped_base,
        "notRun": plan.not_run,
        "pending": plan.pending,
        "dropped": plan.dropped,
    }
    return dict(json.loads(json.dumps(record)))


def definitions_digest(plan: Plan, resources: Mapping[Side, ResourceSet]) -> str:
    """A hash of every definition the plan's runs are made and scored from, per side: each
    Eval, its target agent, and each planned fixture."""
    material: dict[str, Any] = {}
    for side, found in sorted(resources.items()):
        runs = plan.for_side(side)
        evals = {e: found.evals[e] for e in sorted({r.eval for r in runs}) if e in found.evals}
        agents = {e.resource.spec.target_agent for e in evals.values()}
        fixtures = sorted({r.fixture for r in runs})
        material[side.value] = {
            "evals": {name: _dump(e.resource) for name, e in evals.items()},
            "agents": {
                a: _dump(found.agents[a].resource) for a in sorted(agents & set(found.agents))
            },
            "fixtures": {
                f: _dump(found.fixtures[f].resource) for f in fixtures if f in found.fixtures
            },
        }
    return hashlib.sha256(canonical(material)).hexdigest()


def _dump(resource: BaseModel) -> Any:
    return resource.model_dump(mode="json", by_alias=True)


def run_key(run: PlannedRun) -> tuple[str, str, str, int]:
    return (run.side.value, run.eval, run.fixture, run.rep)
