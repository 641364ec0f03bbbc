"""The stages from a change to scored, compared results, shared by the action and the CLI.

This module wires stages together; it owns no client. Git and the providers come in as
parameters, so tests run it against real repositories and local model servers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from evalward.errors import ConfigError, MissingSecretError, ResourceError
from evalward.flows.execute import Execution, ProgressCallback
from evalward.flows.rounds import Rounds, flaky_on_main, run_rounds
from evalward.flows.run_setup import RunSetup
from evalward.git import FileChange, Git
from evalward.past.status import AgentIdentity, identity_of
from evalward.providers.registry import Providers, check_credentials
from evalward.record.evaluation import Evaluation
from evalward.resources import ResourceSet, load_resources
from evalward.resources.repo_config import CONFIG_FILE, RepoConfig, load_config, parse_config
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import GateConfig, Side
from evalward.rundata.spending import Allowance, Estimate
from evalward.rundata.spool import TraceSpool
from evalward.stages.base_resources import load_base
from evalward.stages.changes import ChangeSet, detect_changes
from evalward.stages.compare import compare
from evalward.stages.estimate import (
    estimate_meanwhile,
    estimate_plan,
    refuse_unpriced,
    trim_to_budget,
)
from evalward.stages.fingerprint import FileIndex
from evalward.stages.plan import (
    Checkout,
    Plan,
    PlanFor,
    PlannedRun,
    build_plan,
    gate_resources,
    private_runs,
    undefined,
)
from evalward.stages.plan_scores import EvalsBySide, score_evals
from evalward.stages.playgrounds import uses_playgrounds, world_names
from evalward.stages.preflight import planned_models, refuse_plan
from evalward.stages.reach import agents_reach, world_reach
from evalward.stages.result_cache import CacheKeys
from evalward.stages.settle import settle


@dataclass
class Prepared:
    """A change detected and planned, with both sides' trees on disk, before anything runs."""

    changes: ChangeSet
    plan: Plan
    checkouts: dict[Side, Checkout]
    notes: list[str]


@contextmanager
def prepare_change(setup: RunSetup) -> Iterator[Prepared]:
    """Detect the change and plan it; the base worktree lives as long as the context."""
    git, revisions, options = setup.git, setup.revisions, setup.options
    from_base = options.gate_config is GateConfig.base
    with ExitStack() as stack:
        head_root = stack.enter_context(_tree(git, revisions.head))
        tip = git.resolve(revisions.base) if revisions.base is not None else None
        merge_base = git.merge_base(tip, git.resolve(revisions.head or "HEAD")) if tip else None
        # Where resources live, what is skipped and the Evals' defaults decide what gates:
        # the pull request's own `evalward.yaml` must not choose them.
        config = config_at(git, tip) if tip is not None and from_base else None
        head = load_resources(head_root, config=config)
        if setup.started is not None:
            setup.started()
        bases = _Bases(git, stack, head, head_root, config, from_base)
        if tip is not None and merge_base is not None:
            bases.load(revisions.head, tip, merge_base)
        index = FileIndex(head_root)  # one reading of the head's tree: changes and cache keys
        changes = detect_changes(bases.changed, head, bases.base, bases.gating, index)
        gate = gate_resources(head, bases.gating, options.gate_config)
        made = PlanFor(
            head=head,
            gating=bases.gating,
            config=options.gate_config,
            run_all=options.run_all or revisions.base is None,
            regressions=options.regressions,
        )
        plan = build_plan(changes, gate, bases.base, made)
        if from_base and bases.gating is not None and tip is not None:
            plan.undefined = undefined(bases.gating, f"the base branch ({tip[:12]})", config)
        else:
            plan.undefined = undefined(head, "the checkout", config or load_config(head_root))
        if setup.select is not None:
            plan.evals = [name for name in plan.evals if setup.select(name)]
            plan.runs = [run for run in plan.runs if setup.select(run.eval)]
        head_sha = git.commit_of(revisions.head or "HEAD") or ""
        world, names = bases.world(tip, plan, gate)
        checkouts = {
            Side.head: Checkout(
                Side.head, head_root, gate, index, sha=head_sha, world=world, world_names=names
            )
        }
        if from_base and bases.gating is not None:  # the base's fixtures, scored as the base
            gated = frozenset(bases.gating.fixtures)
            checkouts[Side.head] = replace(checkouts[Side.head], gate_fixtures=gated)
        if bases.base is not None and bases.root is not None:
            if merge_base is not None and not bases.whole:
                # Everything any base run of this job may read — planned now or added by a
                # later round — is written before the first one starts.
                runs = plan.may_run(Side.base)
                reach = agents_reach(bases.base, runs, git.tree(merge_base))
                bases.root = stack.enter_context(git.worktree(merge_base, reach.checkout))
            checkouts[Side.base] = Checkout(Side.base, bases.root, bases.base, sha=merge_base or "")
        if setup.shape is not None:
            plan = setup.shape(plan, {side: c.resources for side, c in checkouts.items()})
        yield Prepared(changes, plan, checkouts, bases.notes)


@dataclass
class _Bases:
    """The base side of a change: the merge base's resources (what the change is diffed from
    and what the base side runs) and the ones that gate (the base branch's tip)."""

    git: Git
    stack: ExitStack
    head: ResourceSet
    head_root: Path
    config: RepoConfig | None
    from_base: bool
    changed: list[FileChange] = field(default_factory=list)
    base: ResourceSet | None = None
    root: Path | None = None
    whole: bool = False
    """`root` is a whole checkout of the merge base (the base loaded from one)."""
    gating: ResourceSet | None = None
    notes: list[str] = field(default_factory=list)

    def world(
        self, tip: str | None, plan: Plan, gate: ResourceSet
    ) -> tuple[Path | None, frozenset[str]]:
        """The base branch's tree, with what the head side's playgrounds read of it, when
        they are ones the base branch defines (`gate-config: base`): they are made from it,
        not from the head."""
        gating = self.gating
        if not self.from_base or gating is None or tip is None:
            return None, frozenset()
        if not uses_playgrounds(plan, gate, Side.head):
            return None, frozenset()
        reach = world_reach(gating, plan.may_run(Side.head))
        return self.stack.enter_context(self.git.worktree(tip, reach.checkout)), world_names(gating)

    def load(self, head_commit: str | None, tip: str, merge_base: str) -> None:
        git = self.git
        self.changed = git.changed_files(merge_base, head_commit)
        dirty = git.dirty_paths() if self.head_root == git.repo else set()
        config = self.config or load_config(self.head_root)
        try:
            differs = _paths(self.changed) | dirty
            loaded = load_base(git, merge_base, self.head, differs, self.stack, config)
            self.base, self.root, self.whole = loaded.resources, loaded.root, loaded.whole
        except ResourceError as exc:
            if self.from_base:
                raise _unloadable(exc, merge_base) from None
            self.notes.append(
                f"the base branch's resources do not load, so there is no baseline: "
                f"{exc.problems[0].render()}"
            )
        if not self.from_base or tip == merge_base:
            self.gating = self.base
            return
        # What gates is the base branch as it is now, not as it was when the pull request
        # branched off: the merge base is only what the change is diffed from and what the
        # base side runs.
        differs = _paths(git.changed_files(tip, head_commit)) | dirty
        try:
            self.gating = load_base(git, tip, self.head, differs, self.stack, config).resources
        except ResourceError as exc:
            raise _unloadable(exc, tip) from None


async def evaluate_change(
    setup: RunSetup,
    *,
    on_result: ProgressCallback | None = None,
    on_plan: Callable[[Plan], None] | None = None,
    traces: TraceSpool | None = None,
) -> Evaluation:
    """Detect the change, plan, run both sides, score and compare.

    With `gate_config=base` the Evals and fixtures that gate come from the base branch's tip.
    Traces move to `traces` (a new spool if none is given) as runs are scored.
    """
    traces = TraceSpool() if traces is None else traces
    try:
        ran = await _run_change(setup, on_result=on_result, on_plan=on_plan, traces=traces)
    except _Stopped as stop:
        raise RunStopped(_evaluated(stop.ran, traces), stop.error) from stop.error
    return _evaluated(ran, traces)


class RunStopped(Exception):
    """An error stopped the runs once they had begun: `evaluation` scores the runs that had
    finished, `error` is what stopped them."""

    def __init__(self, evaluation: Evaluation, error: Exception) -> None:
        super().__init__(str(error))
        self.evaluation = evaluation
        self.error = error


class _Stopped(Exception):
    def __init__(self, ran: _Ran, error: Exception) -> None:
        super().__init__(str(error))
        self.ran = ran
        self.error = error


def _evaluated(ran: _Ran, traces: TraceSpool) -> Evaluation:
    """The runs scored, per Eval and side, and compared."""
    # Scoring reads only the Evals: the checkouts and every loaded fixture are gone by now,
    # so a large suite's definitions and its results are not in memory together.
    evals = settle(score_evals(ran.plan, ran.evals, ran.fixtures), ran.evals, ran.flaky)
    for result in evals:
        if result.side == "base" and result.provider_unavailable:
            ran.notes.append(
                f"{result.eval}: no baseline — every base run failed to reach its model "
                "provider after retries"
            )
    return Evaluation(
        ran.changes,
        ran.plan,
        ran.fixtures,
        evals,
        compare(evals),
        ran.notes,
        ran.private,
        ran.skipped,
        ran.estimate,
        traces,
        ran.agents,
        head_commit=ran.head_commit,
    )


@dataclass
class _Ran:
    """What running a plan leaves for scoring, without the checkouts it ran in."""

    changes: ChangeSet
    plan: Plan
    fixtures: list[FixtureResult]
    evals: EvalsBySide
    notes: list[str]
    private: set[tuple[str, str]]
    skipped: list[PlannedRun]
    estimate: Estimate | None
    agents: dict[str, AgentIdentity]
    head_commit: str
    flaky: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per adaptive Eval, its fixtures that are flaky on main (`past.flaky`)."""


async def _run_change(
    setup: RunSetup,
    *,
    on_result: ProgressCallback | None,
    on_plan: Callable[[Plan], None] | None,
    traces: TraceSpool,
) -> _Ran:
    providers, env, options = setup.providers, setup.env, setup.options
    with prepare_change(setup) as prepared:
        changes, plan = prepared.changes, prepared.plan
        checkouts, notes = prepared.checkouts, prepared.notes
        refuse_plan(plan, checkouts, providers)
        keys = CacheKeys(checkouts, providers) if options.cache is not None else None
        resources = {side: checkout.resources for side, checkout in checkouts.items()}
        cached = options.cache.holds(keys) if options.cache and keys else None
        plan, skipped, estimate = _budgeted(plan, resources, setup, cached, notes)
        if cached is not None:
            plan.reused = sum(cached(run) for run in plan.runs)
        if on_plan is not None:
            on_plan(plan)
        _check_keys(env, plan, checkouts, providers)
        finished: list[FixtureResult] = []

        def record(result: FixtureResult) -> None:
            finished.append(result)
            if on_result is not None:
                on_result(result)

        how = _execution(setup, record, keys, traces, estimate)
        # Without a budget the estimate is only reported. When the cache can answer no run,
        # it is of every run, and it is made while the runs wait on their model calls.
        meanwhile = estimate is None and cached is None and not plan.adaptive
        estimating = _estimating(plan, resources, providers) if meanwhile else None
        flaky, stale = flaky_on_main(
            options.main_history, plan, checkouts, keys or CacheKeys(checkouts, providers)
        )
        notes += stale
        try:
            on_more = (lambda grown, _: on_plan(grown)) if on_plan else None
            rounds = Rounds(options.budget, estimate, on_more, flaky)
            fixtures, more_notes, left_out = await run_rounds(
                plan, checkouts, providers, how, rounds
            )
            notes += more_notes
            skipped += left_out
        except Exception as exc:
            if estimating is not None:
                estimating.cancel()
            head = checkouts[Side.head].resources
            agents = _head_agents(plan, head, keys or CacheKeys(checkouts, providers))
            raise _Stopped(
                _Ran(
                    changes,
                    plan,
                    finished,
                    {side: checkout.resources.evals for side, checkout in checkouts.items()},
                    notes,
                    private_runs(plan, {side: c.resources for side, c in checkouts.items()}),
                    skipped,
                    estimate,
                    agents,
                    checkouts[Side.head].sha,
                    flaky,
                ),
                exc,
            ) from exc
        except BaseException:
            if estimating is not None:
                estimating.cancel()
            raise
        if estimate is None:  # only the runs that ran: reused ones cost nothing
            reused = [result.cached for result in fixtures]
            estimate = await _estimate_after(estimating, plan, resources, providers, reused)
        head = checkouts[Side.head].resources
        agents = _head_agents(plan, head, keys or CacheKeys(checkouts, providers))
        return _Ran(
            changes,
            plan,
            fixtures,
            {side: checkout.resources.evals for side, checkout in checkouts.items()},
            notes,
            private_runs(plan, {side: c.resources for side, c in checkouts.items()}),
            skipped,
            estimate,
            agents,
            checkouts[Side.head].sha,
            flaky,
        )


def _budgeted(
    plan: Plan,
    resources: dict[Side, ResourceSet],
    setup: RunSetup,
    cached: Callable[[PlannedRun], bool] | None,
    notes: list[str],
) -> tuple[Plan, list[PlannedRun], Estimate | None]:
    """The plan cut to the run's budget, the runs it left out and its estimate (none without
    a budget); a `max-cost-usd` refuses models without a price. Says in `notes` what it cut."""
    providers, budget = setup.providers, setup.options.budget
    if not budget.limited:
        return plan, [], None
    if budget.max_cost_usd is not None and providers.override is None:
        refuse_unpriced(plan, resources, providers.prices, cached)
    trimmed = trim_to_budget(plan, resources, providers.prices, budget, cached)
    notes += [trimmed.note] if trimmed.skipped else []
    return trimmed.plan, trimmed.skipped, trimmed.estimate


def _execution(
    setup: RunSetup,
    on_result: ProgressCallback | None,
    keys: CacheKeys | None,
    traces: TraceSpool,
    estimate: Estimate | None,
) -> Execution:
    """How the plan's runs are run: the run's options, and what its budget leaves them."""
    options = setup.options
    return Execution(
        parallel=options.parallel,
        env=setup.env,
        on_result=on_result,
        cache=options.cache,
        keys=keys,
        traces=traces,
        allowance=Allowance.left_by(options.budget, estimate),
        sandbox=options.sandbox,
    )


def _estimating(
    plan: Plan, resources: dict[Side, ResourceSet], providers: Providers
) -> asyncio.Future[Estimate]:
    """The estimate of every run, made while the runs wait on their model calls."""
    return asyncio.ensure_future(estimate_meanwhile(plan, resources, providers.prices))


def _check_keys(
    env: Mapping[str, str], plan: Plan, checkouts: dict[Side, Checkout], providers: Providers
) -> None:
    """Every key the plan's models need is there; a missing one may be skipped only when
    the base side needs it too (`_base_lacks_a_key`)."""
    try:
        check_credentials(env, planned_models(plan, checkouts), providers)
    except ConfigError as exc:
        skippable = _base_lacks_a_key(env, plan, checkouts, providers)
        raise MissingSecretError(str(exc), skippable=skippable) from None


async def _estimate_after(
    estimating: asyncio.Future[Estimate] | None,
    plan: Plan,
    resources: dict[Side, ResourceSet],
    providers: Providers,
    reused: list[bool],
) -> Estimate:
    """The estimate made while the runs ran, unless some were reused after all (another run
    stored results meanwhile): then one of only the runs that ran."""
    if estimating is not None and not any(reused):
        return await estimating
    if estimating is not None:
        estimating.cancel()
    return estimate_plan(plan, resources, providers.prices, reused)


def _head_agents(plan: Plan, head: ResourceSet, keys: CacheKeys) -> dict[str, AgentIdentity]:
    """The identities of the agents the head side's Evals target, taken while their files are
    there to hash (a worktree is gone once the run ends). The result cache's keys already
    hold their fingerprints."""
    targets = {head.evals[e].resource.spec.target_agent for e in plan.evals if e in head.evals}
    return {
        name: identity_of(head.agents[name], keys.agent(Side.head, name))
        for name in sorted(targets)
        if name in head.agents
    }


def config_at(git: Git, commit: str) -> RepoConfig:
    """The `evalward.yaml` of a commit (defaults when it has none)."""
    return parse_config(git.read_files(commit, [CONFIG_FILE]).get(CONFIG_FILE))


def _paths(changed: list[FileChange]) -> set[str]:
    return {c.path for c in changed} | {c.old_path for c in changed if c.old_path}


def _unloadable(exc: ResourceError, commit: str) -> ResourceError:
    """The base branch's definitions decide what gates; when they do not load, nothing can."""
    return ResourceError(exc.problems, source=f"the base branch ({commit[:12]})")


@contextmanager
def _tree(git: Git, commit: str | None) -> Iterator[Path]:
    """The working tree when it already is `commit` (or no commit is asked for), else a worktree."""
    if commit is None or git.resolve("HEAD") == git.resolve(commit):
        yield git.repo
        return
    with git.worktree(commit) as path:
        yield path


def _base_lacks_a_key(
    env: Mapping[str, str], plan: Plan, checkouts: dict[Side, Checkout], providers: Providers
) -> bool:
    """Whether the base's own side of this plan needs a key that is absent — as on a fork's
    pull request, which gets no secret at all — or there is no base to ask (a push, a dispatch
    run). With no base run in the plan (only new agents), the base's agents and judges as a
    whole are asked."""
    base = checkouts.get(Side.base)
    if base is None:
        return True
    models = planned_models(plan, {Side.base: base}) if plan.for_side(Side.base) else []
    if not models:
        resources = base.resources
        found = {m for a in resources.agents.values() for m in a.resource.spec.models[:1]}
        found |= {m for e in resources.evals.values() for m in e.resource.spec.judge.models}
        models = sorted(m for m in found if m)
    try:
        check_credentials(env, models, providers)
    except ConfigError:
        return True
    return False
