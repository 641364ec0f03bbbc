"""Split a plan into n deterministic parts balanced by expected cost, and merge their results.

`run_part` runs part i and writes a partial results file (`evalward run --shard i/n`, the
action's `shard` input); `merge_parts` takes every part (`evalward merge`, the action's
`merge` input), checks that together they are exactly the plan (no part missing, none
given twice, all from the same commit and plan), and rebuilds the Evaluation an unsharded
run would have produced: fixture results in plan order, Evals scored over all their fixtures.

Balancing is longest-processing-time first: runs sorted by estimated cost (budget.estimate_run;
model calls when a model has no price; plus RUN_OVERHEAD), each given to the part with the least
so far; ties go
to the lower part and the earlier run, so every machine computes the same split.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalward import startup
from evalward.budget import estimate_run
from evalward.changes import ChangeSet
from evalward.compare import compare
from evalward.errors import ConfigError
from evalward.evaluation import Evaluation
from evalward.execute import ProgressCallback
from evalward.git import FileChange, Git
from evalward.pipeline import PlanShaper, Revisions, RunOptions, compose, evaluate_change
from evalward.plan import Plan, PlannedRun, Side
from evalward.providers.pricing import PriceTable
from evalward.providers.registry import Providers
from evalward.report.files import write_text
from evalward.resources import Located, ResourceSet
from evalward.resources.models import Eval
from evalward.results import FixtureResult
from evalward.score import score_evals
from evalward.security import Redactor
from evalward.spool import TraceSpool

SHARD_KIND = "evalward-shard"
SHARD_SCHEMA_VERSION = 2
RUN_OVERHEAD = 0.05
"""Every run also costs a start-up (a process, a judge set-up), relative to the dearest run:
so runs that make no model call (bring-your-own agents) still spread over the parts."""
_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class ShardSpec:
    index: int
    """1-based."""
    count: int

    @classmethod
    def parse(cls, text: str, where: str) -> ShardSpec:
        match = _SPEC.match(text)
        if match is None or not 1 <= int(match[1]) <= int(match[2]):
            raise ConfigError(f"{where}: expected i/n with 1 <= i <= n (e.g. 2/4), got {text!r}")
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
        self.whole, self.definitions = plan, resources
        return split(plan, resources, self.prices, self.spec)


async def run_part(
    spec: ShardSpec,
    git: Git,
    revisions: Revisions,
    providers: Providers,
    env: Mapping[str, str],
    options: RunOptions,
    output_dir: Path,
    redact: Redactor,
    *,
    select: Callable[[str], bool] | None = None,
    narrow: PlanShaper | None = None,
    on_result: ProgressCallback | None = None,
    on_plan: Callable[[Plan], None] | None = None,
    traces: TraceSpool | None = None,
) -> WrittenPart:
    """Run part `spec` of the plan and write its shard-i-of-n.json in `output_dir` (redacted).

    The pipeline as `evaluate_change` runs it, its plan narrowed by `narrow` (the command
    line's --fixture/--reps) and then split. Nothing is reported or decided: the comment and
    the gate are the merge's.
    """
    splitter = _Splitter(spec, providers.prices)
    evaluation = await evaluate_change(
        git,
        revisions,
        providers,
        env,
        options,
        on_result=on_result,
        select=select,
        on_plan=on_plan,
        shape=compose(narrow, splitter),
        traces=traces,
    )
    source = {
        "head": git.resolve(revisions.head or "HEAD"),
        "base": git.resolve(revisions.base) if revisions.base else "",
    }
    document = partial_document(evaluation, spec, splitter.whole, splitter.definitions, source)
    path = output_dir / spec.file_name
    write_text(path, json.dumps(document, indent=2) + "\n", redact)
    return WrittenPart(spec, path, len(evaluation.fixtures), len(splitter.whole.runs))


@dataclass
class Merged:
    """Every part merged (`merge_parts`)."""

    evaluation: Evaluation
    parts: int
    compared: bool
    """The parts ran against a base commit (a pull request, `--base`), not on one ref."""


PartCheck = Callable[[Path, Mapping[str, Any]], None]
"""A caller's own rule for a part's file and document: it raises ConfigError to refuse it."""


def merge_parts(paths: Sequence[Path], check: PartCheck | None = None) -> Merged:
    """Read each part's file and merge them into the Evaluation of the whole plan; `check`
    sees each part before anything merges (the action refuses parts of another commit).

    The files' documents hold every trace again; they are dropped once merged (the merged
    Evaluation's traces are in its own spool)."""
    parts = read_parts(paths)
    if check is not None:
        for path, (_, document) in zip(paths, parts, strict=True):
            check(path, document)
    compared = bool(parts and parts[0][1].get("source", {}).get("base"))
    return Merged(merge(parts), len(parts), compared)


def assign(
    plan: Plan, resources: Mapping[Side, ResourceSet], prices: PriceTable, count: int
) -> list[int]:
    """The 0-based part of each run of the plan, in plan order."""
    estimates = [estimate_run(run, resources[run.side], prices) for run in plan.runs]
    priced = all(e.cost_usd is not None for e in estimates) and any(e.cost_usd for e in estimates)
    measures = [(e.cost_usd or 0.0) if priced else float(e.calls) for e in estimates]
    scale = max(measures, default=0.0) or 1.0
    weights = [m / scale + RUN_OVERHEAD for m in measures]
    loads = [0.0] * count
    parts = [0] * len(plan.runs)
    for position in sorted(range(len(plan.runs)), key=lambda i: (-weights[i], i)):
        part = min(range(count), key=lambda p: (loads[p], p))
        parts[position] = part
        loads[part] += weights[position]
    return parts


def split(
    plan: Plan, resources: Mapping[Side, ResourceSet], prices: PriceTable, spec: ShardSpec
) -> Plan:
    """Part `spec.index` of the plan; the Evals and skip notes stay whole."""
    parts = assign(plan, resources, prices, spec.count)
    return plan.with_runs(
        [run for run, part in zip(plan.runs, parts, strict=True) if part == spec.index - 1]
    )


def plan_digest(plan: Plan, source: Mapping[str, str]) -> str:
    material = {
        "source": dict(source),
        "evals": plan.evals,
        "runs": [_run_key(r) for r in plan.runs],
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def partial_document(
    evaluation: Evaluation,
    spec: ShardSpec,
    full_plan: Plan,
    checkouts: Mapping[Side, ResourceSet],
    source: Mapping[str, str],
) -> dict[str, Any]:
    """What one part leaves for `merge`: its results and everything needed to score the whole."""
    return {
        "kind": SHARD_KIND,
        "schemaVersion": SHARD_SCHEMA_VERSION,
        "shard": {"index": spec.index, "count": spec.count},
        "source": dict(source),
        "planDigest": plan_digest(full_plan, source),
        "plan": {
            "evals": full_plan.evals,
            "runs": [_run_key(r) for r in full_plan.runs],
            "skippedBase": full_plan.skipped_base,
            "notRun": full_plan.not_run,
            "pending": full_plan.pending,
            "dropped": full_plan.dropped,
        },
        "evalDefinitions": {
            side.value: {
                name: {
                    "resource": located.resource.model_dump(mode="json", by_alias=True),
                    "file": located.file,
                    "line": located.line,
                }
                for name, located in resources.evals.items()
                if name in full_plan.evals
            }
            for side, resources in checkouts.items()
        },
        "changes": asdict(evaluation.changes),
        "notes": evaluation.notes,
        "private": sorted([list(pair) for pair in evaluation.private]),
        "skipped": [_run_key(r) for r in evaluation.skipped],
        "fixtures": [evaluation.record_of(f) for f in evaluation.fixtures],
    }


def read_parts(paths: Sequence[Path]) -> list[tuple[str, dict[str, Any]]]:
    parts = []
    for path in paths:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the shard results ({exc.strerror})") from None
        except ValueError as exc:
            raise ConfigError(
                f"{path}: not JSON ({exc}); give the files `run --shard` wrote"
            ) from None
        if not isinstance(document, dict) or document.get("kind") != SHARD_KIND:
            raise ConfigError(
                f"{path}: not an evalward shard results file; give the files that "
                "`evalward run --shard i/n` wrote (shard-i-of-n.json)"
            )
        if document.get("schemaVersion") != SHARD_SCHEMA_VERSION:
            raise ConfigError(
                f"{path}: shard schemaVersion {document.get('schemaVersion')!r}; this evalward "
                f"reads {SHARD_SCHEMA_VERSION}: run every part with the same evalward version"
            )
        parts.append((str(path), document))
    return parts


def merge(parts: Sequence[tuple[str, dict[str, Any]]]) -> Evaluation:
    """Every part, once each, of one plan -> the Evaluation of the whole plan."""
    startup.end_pause()
    if not parts:
        raise ConfigError("merge: no shard results given; pass every shard-i-of-n.json file")
    first_name, first = parts[0]
    count = int(first["shard"]["count"])
    seen: dict[int, str] = {}
    for name, document in parts:
        shard = document["shard"]
        if int(shard["count"]) != count or document["planDigest"] != first["planDigest"]:
            raise ConfigError(
                f"{name}: shard {shard['index']}/{shard['count']} comes from a different plan "
                f"than {first_name} (another commit, base or options); run every part of one "
                "plan and merge those"
            )
        index = int(shard["index"])
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

    plan_doc = first["plan"]
    plan = Plan(
        runs=[_run_of(key) for key in plan_doc["runs"]],
        evals=list(plan_doc["evals"]),
        skipped_base=dict(plan_doc["skippedBase"]),
        not_run=dict(plan_doc["notRun"]),
        pending={name: list(fixtures) for name, fixtures in plan_doc["pending"].items()},
        dropped=dict(plan_doc["dropped"]),
    )
    order = {_run_key(run): position for position, run in enumerate(plan.runs)}
    results: dict[tuple[str, str, str, int], FixtureResult] = {}
    traces = TraceSpool()
    for name, document in parts:
        for raw in document["fixtures"]:
            result = traces.keep(FixtureResult.model_validate(raw))
            key = (result.side, result.eval, result.fixture, result.rep)
            if key in results:
                raise ConfigError(f"{name}: {_describe(key)} was run by two parts")
            results[key] = result
    skipped = [_run_of(key) for _, d in parts for key in d["skipped"]]
    expected = set(order) - {_run_key(r) for r in skipped}
    absent = sorted(expected - set(results))
    if absent:
        raise ConfigError(
            f"the parts together lack {len(absent)} run(s) of the plan, e.g. "
            f"{_describe(absent[0])}; rerun the part that should have run it"
        )
    fixtures = sorted(results.values(), key=lambda r: order.get(_result_key(r), len(order)))
    definitions = {
        Side(side): _evals_only(evals) for side, evals in first["evalDefinitions"].items()
    }
    evals = score_evals(plan, definitions, fixtures)
    notes: list[str] = []
    for _, document in parts:
        notes += [note for note in document["notes"] if note not in notes]
    changes = first["changes"]
    return Evaluation(
        changes=ChangeSet(
            changed_files=[FileChange(**c) for c in changes["changed_files"]],
            changed_agents=changes["changed_agents"],
            cosmetic_agents=changes["cosmetic_agents"],
            removed_agents=changes["removed_agents"],
            affected_evals=changes["affected_evals"],
            removed_evals=changes["removed_evals"],
            gate_changes=changes["gate_changes"],
        ),
        plan=plan,
        fixtures=fixtures,
        evals=evals,
        comparisons=compare(evals),
        notes=notes,
        private={(e, f) for _, d in parts for e, f in d["private"]},
        skipped=sorted(skipped),
        traces=traces,
    )


def _evals_only(definitions: Mapping[str, Any]) -> dict[str, Located[Eval]]:
    return {
        name: Located(Eval.model_validate(d["resource"]), d["file"], d["line"])
        for name, d in definitions.items()
    }


def _run_key(run: PlannedRun) -> tuple[str, str, str, int]:
    return (run.side.value, run.eval, run.fixture, run.rep)


def _result_key(result: FixtureResult) -> tuple[str, str, str, int]:
    return (result.side, result.eval, result.fixture, result.rep)


def _run_of(key: Sequence[Any]) -> PlannedRun:
    return PlannedRun(Side(key[0]), str(key[1]), str(key[2]), int(key[3]))


def _describe(key: Sequence[Any]) -> str:
    return f"{key[0]} {key[1]} / {key[2]} rep {key[3]}"
