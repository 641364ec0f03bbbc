"""Which runs to do: (Eval, fixture, rep, side) for every affected Eval.

By default the definitions that gate — Evals, fixtures, judge calibrations — come from the
base branch, so a pull request cannot lower its own threshold or weaken its own fixtures;
what it adds (new fixtures, new Evals) runs too, because it only adds checks. The agents
under test always come from the head.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from evalward.changes import ChangeSet
from evalward.resources import ResourceSet


class Side(StrEnum):
    base = "base"
    head = "head"


class GateConfig(StrEnum):
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
    not_run: dict[str, str] = field(default_factory=dict)
    """Affected Evals that cannot run on the head, and why."""
    reused: int = 0
    """Runs whose result the result cache already holds: they will not run again."""

    def for_side(self, side: Side) -> list[PlannedRun]:
        return [r for r in self.runs if r.side is side]


def gate_resources(head: ResourceSet, base: ResourceSet | None, config: GateConfig) -> ResourceSet:
    """The resources the head side runs with: head agents, and gate definitions per `config`."""
    if base is None or config is GateConfig.head:
        return head
    return ResourceSet(
        root=head.root,
        agents=head.agents,
        fixtures={**head.fixtures, **base.fixtures},
        evals={**head.evals, **base.evals},
        calibrations={**head.calibrations, **base.calibrations},
        warnings=head.warnings,
    )


def build_plan(
    changes: ChangeSet,
    gate: ResourceSet,
    base: ResourceSet | None,
    *,
    run_all: bool = False,
) -> Plan:
    """Head runs for every affected Eval; base runs where the base branch can run it too."""
    plan = Plan()
    names = sorted(gate.evals) if run_all else sorted(changes.affected_evals)
    for name in names:
        located = gate.evals.get(name)
        if located is None:
            continue
        evaluation = located.resource
        if evaluation.spec.target_agent not in gate.agents:
            plan.not_run[name] = f"its agent {evaluation.spec.target_agent} is not on the head"
            continue
        plan.evals.append(name)
        reps = evaluation.spec.execution.reps_per_fixture
        for fixture in gate.fixtures_of(evaluation):
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
