"""What one run of the pipeline is given, decided once by its front end (the action, the
command line, a shard job, a merge): the repository and what to compare, the clients, and
how to run — so the stages below take one frozen set-up instead of a dozen arguments."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalward.git import Git
from evalward.plan.plan import Plan
from evalward.plan.result_cache import ResultCache
from evalward.plan.sandbox_ready import SandboxSetup
from evalward.providers.registry import Providers
from evalward.resources import ResourceSet
from evalward.resources.gate_policy import RegressionPolicy
from evalward.rundata.pairwise_record import PairAgreement
from evalward.rundata.sides import GateConfig, Side
from evalward.rundata.spending import Budget
from evalward.runtime.isolation.sandbox import Sandbox


@dataclass(frozen=True)
class RunOptions:
    """How to run: concurrency, scope, where the gate's definitions come from, cache, budget."""

    parallel: int = 8
    run_all: bool = False
    gate_config: GateConfig = GateConfig.base
    cache: ResultCache | None = None
    budget: Budget = field(default_factory=Budget)
    sandbox: Sandbox | None = None
    """The action's: programs from a checkout run in it. None (the CLI): as evalward's user."""
    main_history: Path | None = None
    """A trusted result cache's directory, where the default branch's runs record each
    fixture's outcomes (`past.flaky`): what makes a fixture flaky on main."""
    regressions: RegressionPolicy = RegressionPolicy.none
    """The action's `fail-on-regression`, which may only tighten an Eval's: the plan runs
    the base where the decision it makes reads it."""
    allow_incomplete: bool = False
    """`allow-incomplete` (`--allow-incomplete`): runs the budget skipped do not block."""
    judge_pairs: bool = True
    """False: an Eval's pairwise judge is asked no pair, and its preference tests add no
    run. For attribution's variants, read by each fixture's own verdict, which the judge
    does not change (the Eval's verdict, left without its pairs, is not read there); the
    fixtures' pass-rate tests keep the share of the false-block rate they have beside the
    judge, as on the gate. For a shard's part, whose pairs the merge judges."""
    warm_pairs: bool = False
    """On a run with no base, replay each pairwise judge's calibration into the result cache
    all the same (`Pairs.warm`): the action's, whose cache of the default branch's runs the
    pull requests restore. Not the command line's: a local run with no base has no pair to
    judge, and a first `evalward run` would pay the replay's calls for nothing it shows."""
    judge_head_after_pairs: bool = False
    """For attribution's variants of a regression found in pairs, which read a fixture as
    regressed while its pairs find it worse: a head run's absolute judge is asked only once
    the fixture's pairs do not lean worse, or at the end where they did not settle worse
    (`execute.base_judging`)."""
    replays: dict[str, PairAgreement] = field(default_factory=dict)
    """The pairwise judges' calibration replays this job made, by their key
    (`pairwise_panel.replay_key`): attribution's variants, whose options are copies of the
    gate's, read them again rather than replay each calibration per variant where no result
    cache keeps it."""


@dataclass(frozen=True)
class Revisions:
    """What to compare. `head=None` means the working tree as it is on disk; `untracked`,
    then, the files of it git did not track (nor ignore) as the run began, which the head's
    runs may read and no commit holds (attribution's variants are commits): what the runs
    leave there (a program's `__pycache__`, its logs) is not among them. `ignored`, the
    paths of it git ignores as the run began (an ignored folder once): in no variant either,
    and a program may read them."""

    base: str | None
    head: str | None = None
    untracked: tuple[str, ...] | None = None
    ignored: tuple[str, ...] | None = None


PlanShaper = Callable[[Plan, Mapping[Side, ResourceSet]], Plan]
"""Narrows or splits a plan before it runs (the CLI's --fixture/--reps, and shards)."""


def compose(*shapers: PlanShaper | None) -> PlanShaper:
    """One shaper that applies each given one in turn (None: skipped)."""

    def shape(plan: Plan, resources: Mapping[Side, ResourceSet]) -> Plan:
        for shaper in shapers:
            if shaper is not None:
                plan = shaper(plan, resources)
        return plan

    return shape


@dataclass(frozen=True)
class RunSetup:
    """One run's repository, clients and options."""

    git: Git
    revisions: Revisions
    providers: Providers
    env: Mapping[str, str]
    """evalward's environment: where the agents' `env:` lists take their values from."""
    options: RunOptions = field(default_factory=RunOptions)
    select: Callable[[str], bool] | None = None
    """The Evals to run, by name (a schedule's, a dispatch's); None: every one."""
    shape: PlanShaper | None = None
    """Narrows the plan before it runs (the command line's --fixture/--reps)."""
    started: Callable[[], None] | None = None
    """Called once the suite is loaded: the end of start-up (`host.Host.started`)."""
    sandbox_setup: SandboxSetup | None = None
    """How `options.sandbox` is readied before a program from a checkout starts
    (`sandbox_ready.ready`, by the session); None: as it was given."""
    unloadable_base: str = ""
    """The front end's other way on when the base branch's definitions do not load, said
    after fixing them there (`prepare.BASE_FIRST`): the command line's run without --base,
    the action's bypass label. Empty: fixing them is all that is said."""

    def shaped(self, shaper: PlanShaper) -> RunSetup:
        """The same set-up, its plan also shaped by `shaper` (a shard's split), after."""
        return dataclasses.replace(self, shape=compose(self.shape, shaper))
