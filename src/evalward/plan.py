"""Which runs to do: (Eval, fixture, rep, side) for every affected Eval."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from evalward.changes import ChangeSet
from evalward.resources import ResourceSet


class Side(StrEnum):
    base = "base"
    head = "head"


@dataclass(frozen=True, order=True)
class PlannedRun:
    side: Side
    eval: str
    fixture: str
    rep: int = 0


@dataclass
class Plan:
    runs: list[PlannedRun] = field(default_factory=list)
    evals: list[str] = field(default_factory=list)
    skipped_base: dict[str, str] = field(default_factory=dict)

    def for_side(self, side: Side) -> list[PlannedRun]:
        return [r for r in self.runs if r.side is side]


def build_plan(
    changes: ChangeSet, head: ResourceSet, base: ResourceSet | None, *, run_all: bool = False
) -> Plan:
    """Head runs for every affected Eval; base runs where the base branch can run it too."""
    plan = Plan()
    names = sorted(head.evals) if run_all else sorted(changes.affected_evals)
    for name in names:
        located = head.evals.get(name)
        if located is None:
            continue
        plan.evals.append(name)
        evaluation = located.resource
        reps = evaluation.spec.execution.reps_per_fixture
        for fixture in head.fixtures_of(evaluation):
            for rep in range(reps):
                plan.runs.append(PlannedRun(Side.head, name, fixture.resource.metadata.name, rep))
        if base is None:
            continue
        base_eval = base.evals.get(name)
        if base_eval is None:
            plan.skipped_base[name] = "the Eval does not exist on the base branch"
            continue
        if base_eval.resource.spec.target_agent not in base.agents:
            plan.skipped_base[name] = "the agent does not exist on the base branch"
            continue
        for fixture in base.fixtures_of(base_eval.resource):
            for rep in range(base_eval.resource.spec.execution.reps_per_fixture):
                plan.runs.append(PlannedRun(Side.base, name, fixture.resource.metadata.name, rep))
    return plan
