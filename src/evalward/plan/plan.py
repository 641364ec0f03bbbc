"""Which runs to do: (Eval, fixture, rep, side) for every affected Eval.

By default (`gate-config: base`) the definitions that gate — Evals, fixtures, judge
calibrations — come from the base branch, so a pull request cannot lower its own threshold,
weaken or dilute its fixtures, or make its Evals disappear:

- every Eval of the base that targets an agent the change touches gates, even when the pull
  request deleted or renamed it; when its agent is gone from the head it cannot run, and that
  fails the gate (`Plan.not_run`);
- an Eval gates with the base's fixtures only; fixtures the pull request adds to it run and are
  shown, and gate once merged (`Plan.pending`), so trivially passing additions cannot lift a
  failing score;
- Evals the pull request adds run and gate: they can only add failures.

The agents under test always come from the head.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalward.files.committed import RepoFiles
from evalward.plan.changes import ChangeSet
from evalward.plan.fingerprint import FileIndex
from evalward.resources import ResourceSet
from evalward.resources.gate_policy import BaseRuns, RegressionPolicy
from evalward.resources.models import Eval
from evalward.resources.reading.repo_config import RepoConfig
from evalward.rundata.sides import GateConfig, Side
from evalward.text.counts import counted

if TYPE_CHECKING:
    from evalward.plan.preflight.tool_refs import RemovedTool


@dataclass(frozen=True, order=True)
class PlannedRun:
    side: Side
    eval: str
    fixture: str
    rep: int = 0


@dataclass(frozen=True)
class MoreRuns:
    """A round's runs beyond those planned so far, by what asked for them: what the run's
    log says when its plan grows, so that a run the cache answers is not taken for one that
    ran, nor a base run the pairwise judge pairs for a rep of adaptive reps."""

    adaptive: int = 0
    """Reps the sequential tests ask for where a fixture's outcome is open."""
    pairwise: int = 0
    """Runs the pairwise judge's open preference tests ask for, to pair with the other
    side's."""
    base_read: int = 0
    """Held-back base runs of fixtures the head did not pass (`Plan.base_when_failing`)."""
    reused: int = 0
    """Of them, the runs the result cache answers: they do not run again."""

    @property
    def runs(self) -> int:
        return self.adaptive + self.pairwise + self.base_read

    def text(self, total: int) -> str:
        """ "2 more runs where outcomes are open (adaptive reps), 6 in all", each reason
        counted when there are several, and how many the cache answers."""
        reasons = [
            (self.adaptive, "where outcomes are open (adaptive reps)"),
            (self.pairwise, "that the pairwise judge's open tests ask for"),
            (self.base_read, "on the base, of fixtures the head did not pass"),
        ]
        given = [(count, why) for count, why in reasons if count]
        if len(given) == 1:
            said = f"{counted(self.runs, 'more run')} {given[0][1]}, {total} in all"
        else:
            each = "; ".join(f"{count} {why}" for count, why in given)
            said = f"{counted(self.runs, 'more run')}, {total} in all: {each}"
        if self.reused:
            said += f" ({self.reused} of them reused from the result cache, not run again)"
        return said


@dataclass
class Plan:
    runs: list[PlannedRun] = field(default_factory=list)
    evals: list[str] = field(default_factory=list)
    skipped_base: dict[str, str] = field(default_factory=dict)
    not_run: dict[str, str] = field(default_factory=dict)
    """Affected Evals that gate but cannot run on the head, and why: the gate fails."""
    pending: dict[str, list[str]] = field(default_factory=dict)
    """Per Eval, fixtures that run on the head but gate only once merged (added by the PR)."""
    dropped: dict[str, str] = field(default_factory=dict)
    """Affected Evals the PR removed under `gate-config: head`, where its definitions gate."""
    reused: int = 0
    """Runs whose result the result cache already holds: they will not run again."""
    adaptive: dict[str, list[str]] = field(default_factory=dict)
    """Evals with adaptive reps (`execution.reps`): the head runs each fixture's minimum, and
    further rounds add reps where the outcome is open (`rounds`); the base fixtures listed
    run only where the verdict reads them."""
    base_when_failing: dict[str, list[PlannedRun]] = field(default_factory=dict)
    """Fixed-rep Evals whose decision reads the head only (`failOnRegression: none`, not
    tightened by the action): their base runs, held back. A round after the head's runs the
    ones of fixtures the head did not pass, so the comparison tells a regression from a
    fixture already failing; a fixture the head passes costs nothing on the base."""
    undefined: str = ""
    """When the definitions that gate hold no Eval at all: that, and where they were looked
    for ("the base branch (abc123) defines no Eval: evalward looked in evals/ …")."""
    added: list[str] = field(default_factory=list)
    """Evals the pull request adds (the base branch defines none of that name): they gate, but
    a budget keeps their runs only with what the base's own leave (`estimate.trim_to_budget`)."""
    base_behind: dict[str, str] = field(default_factory=dict)
    """Eval -> the agent its base side runs, where the base branch has changed that agent
    since the pull request branched off (its definition, or a file it reads, differs between
    the merge base and the tip: `prepare.behind_tip`). What the default branch recorded of
    the merge base's agent, and what that agent would cost, are then not the base branch's
    to say: no fixture of the Eval is flaky on main from those records
    (`rounds.flaky_on_main`), and the budget's "cannot hold even alone" excuses none of its
    runs (`Evaluation.skipped_gating`). Empty where the merge base is the tip."""

    offered_first: frozenset[tuple[str, str]] = frozenset()
    """(Eval, fixture) whose head runs are held to the tools the base's run of it offered its
    model (`tool_refs.gate_guards`): that base run is never held back, an adaptive Eval's
    first rep of it runs in the first round, and a shard runs it beside the head's
    (`shard.assign`), so it is done before they are scored (`base_first`)."""

    def for_side(self, side: Side) -> list[PlannedRun]:
        return [r for r in self.runs if r.side is side]

    def base_first(self, fixtures: frozenset[tuple[str, str]]) -> None:
        """Hold `fixtures` to the tools their base runs offered (`offered_first`): their
        held-back base runs join the plan's, and an adaptive Eval's base rep 0 of each runs
        in the first round."""
        self.offered_first = frozenset((e, f) for e, f in fixtures if e in self.evals)
        fixtures = self.offered_first
        for name, held in self.base_when_failing.items():
            first = [run for run in held if (name, run.fixture) in fixtures]
            self.runs += first
            held[:] = [run for run in held if run not in first]
        for name, bases in self.adaptive.items():
            self.runs += [
                PlannedRun(Side.base, name, fixture, 0)
                for fixture in bases
                if (name, fixture) in fixtures
            ]

    def may_run(self, side: Side) -> list[PlannedRun]:
        """A run (rep 0) of each (Eval, fixture) that may run on `side` in this job: planned
        now, or added by a later round (adaptive reps, the base runs held back until the
        head has run). What is checked, keyed or checked out before the first run must hold
        for every one of them, not only for the first round's."""
        found = {(r.eval, r.fixture) for r in self.runs if r.side is side}
        if side is Side.base:
            found |= {(r.eval, r.fixture) for held in self.base_when_failing.values() for r in held}
            found |= {(name, f) for name, fixtures in self.adaptive.items() for f in fixtures}
        return [PlannedRun(side, name, fixture, 0) for name, fixture in sorted(found)]

    def next_reps(self) -> dict[tuple[Side, str, str], int]:
        """Per (side, Eval, fixture) planned, the rep its next run takes: one past its highest."""
        return {
            (r.side, r.eval, r.fixture): r.rep + 1 for r in sorted(self.runs, key=lambda r: r.rep)
        }

    def adaptive_runs(self, name: str, reps: int) -> list[PlannedRun]:
        """An adaptive Eval's runs at `reps` reps each: every head fixture planned, then every
        base fixture its rounds draw from."""
        heads = sorted({r.fixture for r in self.runs if r.eval == name and r.side is Side.head})
        runs = [PlannedRun(Side.head, name, f, rep) for f in heads for rep in range(reps)]
        bases = self.adaptive.get(name, [])
        return runs + [PlannedRun(Side.base, name, f, rep) for f in bases for rep in range(reps)]

    def with_runs(self, runs: list[PlannedRun]) -> Plan:
        """The same plan (Evals, reasons, pending fixtures) with other runs: a part of it."""
        return dataclasses.replace(self, runs=runs)

    def gates(self, run: PlannedRun) -> bool:
        """Whether the run's result counts towards its Eval's score."""
        return run.side is Side.base or run.fixture not in self.pending.get(run.eval, ())

    def base_gates(self, run: PlannedRun) -> bool:
        """Whether the run is of a fixture the base's own definitions gate with: it gates, and
        its Eval is not one the pull request adds. A budget keeps these first."""
        return run.eval not in self.added and self.gates(run)


def gate_resources(head: ResourceSet, base: ResourceSet | None, config: GateConfig) -> ResourceSet:
    """The resources the head side runs with: head agents, and gate definitions per `config`."""
    if base is None or config is GateConfig.head:
        return head
    return ResourceSet(
        root=head.root,
        door=head.door,
        agents=head.agents,
        fixtures={**head.fixtures, **base.fixtures},
        evals={**head.evals, **base.evals},
        calibrations={**head.calibrations, **base.calibrations},
        warnings=head.warnings,
    )


def base_side_resources(base: ResourceSet, gating: ResourceSet | None) -> ResourceSet:
    """What the base side runs: the merge base's agents, with the definitions that gate (the
    base branch's tip, under `gate-config: base`) in place of its own Evals, fixtures and
    calibrations. Both sides then run the same fixtures, and the comparison says what the
    change does to the agent; a pull request that branched off before the base branch added
    or changed one is compared on it all the same, where the merge base alone would have
    no base run of it, and no regression to answer for. In place, not beside: a fixture the
    base branch has removed since the merge base is no base run (its Eval's selector would
    pick it up again, and the budget count it among the fixtures the base gates with)."""
    if gating is None or gating is base:
        return base
    return dataclasses.replace(
        base, fixtures=gating.fixtures, evals=gating.evals, calibrations=gating.calibrations
    )


@dataclass(frozen=True)
class PlanFor:
    """What a plan is made for beside the change: `head` is the head's own resources, whose
    Eval definitions say which fixtures the pull request adds (pending); `gating` the base
    branch's definitions that gate (its tip's, which may be newer; the base side's when not
    given), under `config`; `run_all` plans every Eval, not only the affected ones;
    `regressions` is the action's `fail-on-regression`, which tightens the Eval's."""

    head: ResourceSet | None = None
    gating: ResourceSet | None = None
    config: GateConfig = GateConfig.base
    run_all: bool = False
    regressions: RegressionPolicy = RegressionPolicy.none


def build_plan(
    changes: ChangeSet, gate: ResourceSet, base: ResourceSet | None, made: PlanFor = PlanFor()
) -> Plan:
    """Head runs for every affected Eval; base runs where the base branch can run it too,
    and where the decision reads them (`base_when_failing`).

    `base` is what the base side runs (the merge base's resources); `gate` is what
    `gate_resources` gives for the definitions that gate and `made.config`.
    """
    head, config, run_all, regressions = made.head, made.config, made.run_all, made.regressions
    gating = made.gating if made.gating is not None else base
    plan = Plan()
    names = sorted(gate.evals) if run_all else sorted(changes.affected_evals)
    from_base = gating is not None and config is GateConfig.base
    for name in names:
        located = gate.evals.get(name)
        if located is None:
            plan.dropped[name] = "the pull request removes it (`gate-config: head`)"
            continue
        eval_def = located.resource
        target = eval_def.spec.target_agent
        if target not in gate.agents or target in changes.displaced_agents:
            plan.not_run[name] = changes.why_gone(target)
            continue
        plan.evals.append(name)
        if gating is not None and name not in gating.evals:
            plan.added.append(name)
        adaptive = eval_def.spec.execution.reps
        reps = eval_def.spec.execution.reps_per_fixture if adaptive is None else adaptive.min
        if adaptive is not None:
            plan.adaptive[name] = []
        fixtures = [f.resource.metadata.name for f in gate.fixtures_of(eval_def)]
        if from_base and gating is not None and name in gating.evals:
            fixtures, pending = _base_fixtures(name, gate, gating, head or gate)
            if pending:
                plan.pending[name] = pending
        elif from_base and head is not None:
            # An Eval the pull request adds selects among the head's fixtures (their labels as
            # the head has them); a fixture the base also has runs as the base defines it.
            fixtures = [f.resource.metadata.name for f in head.fixtures_of(eval_def)]
        fixtures = sorted([*fixtures, *plan.pending.get(name, [])])
        plan.runs += [PlannedRun(Side.head, name, f, rep) for f in fixtures for rep in range(reps)]
        if base is not None:
            policy = eval_def.spec.scoring.gate
            # Whether it judges in pairs, by its own fixtures: one the pull request adds to a
            # base Eval (pending) must not bring every base run forward (`Plan.pending`).
            own = gating if from_base and gating is not None and name in gating.evals else gate
            reads_base = (
                policy.base_runs is BaseRuns.always
                or policy.fail_on_regression.tightest(regressions) is not RegressionPolicy.none
                or _pairwise(eval_def, own)  # every pair needs its base run
            )
            _plan_base(plan, name, base, adaptive=adaptive is not None, reads_base=reads_base)
    return plan


def _pairwise(eval_def: Eval, resources: ResourceSet) -> bool:
    """Whether the Eval, or one of its fixtures, asks for the pairwise judge."""
    if eval_def.spec.judge.pairwise is not None:
        return True
    return any(f.resource.spec.pairwise is not None for f in resources.fixtures_of(eval_def))


def _plan_base(
    plan: Plan, name: str, base: ResourceSet, *, adaptive: bool, reads_base: bool
) -> None:
    """The base runs of Eval `name`, where the base branch can run it: its reps of each
    fixture, held back for the fixtures the head fails unless the decision `reads_base`
    (`base_when_failing`), or (`adaptive`) the fixtures its rounds draw from."""
    base_eval = base.evals.get(name)
    if base_eval is None:
        plan.skipped_base[name] = "the Eval does not exist on the base branch"
        return
    if base_eval.resource.spec.target_agent not in base.agents:
        plan.skipped_base[name] = "the agent does not exist on the base branch"
        return
    runs = plan.runs if reads_base or adaptive else plan.base_when_failing.setdefault(name, [])
    reps = range(base_eval.resource.spec.execution.reps_per_fixture)
    for located_fixture in base.fixtures_of(base_eval.resource):
        base_name = located_fixture.resource.metadata.name
        if adaptive:
            plan.adaptive[name].append(base_name)
        else:
            runs += [PlannedRun(Side.base, name, base_name, rep) for rep in reps]


def at_most(plan: Plan, resources: Mapping[Side, ResourceSet]) -> Plan:
    """The plan with its adaptive Evals at their maximum reps on both sides, every base run
    held back run at once, and no rounds:
    for shards, whose parts cannot take turns, and must not decide on fewer reps than the
    Eval may need (a fixture's verdict then reads every rep)."""
    if not plan.adaptive and not plan.base_when_failing:
        return plan
    runs = [run for run in plan.runs if run.eval not in plan.adaptive]
    runs += [run for held in plan.base_when_failing.values() for run in held]
    for name in plan.adaptive:
        reps = resources[Side.head].evals[name].resource.spec.execution.reps
        runs += plan.adaptive_runs(name, reps.max if reps is not None else 1)
    return dataclasses.replace(plan, runs=runs, adaptive={}, base_when_failing={})


def undefined(resources: ResourceSet, whose: str, config: RepoConfig | None) -> str:
    """When the definitions that gate hold no Eval at all: that, and where evalward looked."""
    if resources.evals:
        return ""
    return f"{whose} defines no Eval: evalward looked in {(config or RepoConfig()).searched()}"


def _base_fixtures(
    name: str, gate: ResourceSet, base: ResourceSet, head: ResourceSet
) -> tuple[list[str], list[str]]:
    """The base Eval's own fixtures (they gate), and those the head adds to it (pending):
    new fixtures its selector matches, or that the head's version of the Eval selects."""
    base_eval = base.evals[name].resource
    gating = {f.resource.metadata.name for f in base.fixtures_of(base_eval)}
    selected = {f.resource.metadata.name for f in gate.fixtures_of(base_eval)}
    head_eval = head.evals.get(name)
    if head_eval is not None:
        selected |= {f.resource.metadata.name for f in head.fixtures_of(head_eval.resource)}
    return sorted(gating), sorted(selected - gating)


@dataclass(frozen=True)
class Checkout:
    """One side of the comparison: a tree on disk and the resources loaded from it."""

    side: Side
    root: Path
    resources: ResourceSet
    index: FileIndex | None = field(default=None, compare=False)
    """The listing of `root` change detection read, for the result cache's keys to read
    the same (None: listed when first asked)."""
    sha: str = ""
    """The commit the side comes from: the merge base for the base, HEAD for the head (also
    when the working tree has changes); "" when there is none yet."""
    world: Path | None = field(default=None, compare=False)
    """The tree the definitions that gate come from (the base branch's, under `gate-config:
    base`): playgrounds of `world_names` are made from it (playgrounds.py); None: `root`."""
    world_names: frozenset[str] = frozenset()
    world_files: RepoFiles | None = field(default=None, compare=False)
    """The door to `world`'s files: its commit's (files/committed.py)."""
    gate_fixtures: frozenset[str] = frozenset()
    """The fixtures of this (head) side that the base branch defines (`gate-config: base`):
    their code scorers run as the base side's user, which no program of the pull request
    runs as."""
    removed_tools: Mapping[tuple[str, str], tuple[RemovedTool, ...]] = field(
        default_factory=dict, compare=False
    )
    """By (Eval, fixture) of `gate_fixtures`: the tools its checks that pass without a call
    name, which the base side's agent has and this (head) side's does not (`tool_refs.
    removed_tools`). Those checks fail: the pull request cannot make the base's guard vacuous
    by renaming the tool it guards."""
    reads: frozenset[str] | None = None
    """What this side's runs read of `root` (`plan/reach.py`), when `root` holds more: every
    agent's together. None: all of it."""
    agent_reads: Mapping[str, frozenset[str] | None] = field(default_factory=dict, compare=False)
    """By agent, what its own runs read of `root` (`reach.reach_of_each`): all its agent
    user's copy holds, so that it reads no file its cache key does not hash. None: all."""

    @property
    def files(self) -> RepoFiles:
        """The one door to the files this side's definitions name (files/committed.py)."""
        return self.resources.files


def private_runs(plan: Plan, resources: Mapping[Side, ResourceSet]) -> set[tuple[str, str]]:
    """Held-out fixtures: private on either side, or every fixture of a private Eval."""
    private: set[tuple[str, str]] = set()
    for run in plan.runs:
        found = resources[run.side]
        fixture = found.fixtures[run.fixture].resource
        if "private" in (found.evals[run.eval].resource.spec.visibility, fixture.spec.visibility):
            private.add((run.eval, run.fixture))
    return private


def head_targets(plan: Plan, head: ResourceSet) -> list[str]:
    """The agents the plan's Evals target that the head defines, by name."""
    targets = {head.evals[e].resource.spec.target_agent for e in plan.evals if e in head.evals}
    return sorted(name for name in targets if name in head.agents)
