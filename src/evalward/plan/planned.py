"""The plan phase's entry (`plan`) and its one value, `Planned`, which the execute phase takes
whole (`execute.run_plan`). Nothing here runs an agent: what is refused, cut or missing is
known before the first model call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from evalward.errors import ConfigError, MissingSecretError
from evalward.plan.changes import ChangeSet
from evalward.plan.estimate import Trimmed, refuse_unpriced, trim_to_budget
from evalward.plan.plan import PlannedRun
from evalward.plan.preflight.preflight import planned_models, refuse_plan, warning_notes
from evalward.plan.prepare import Prepared, prepare_change
from evalward.plan.progress import RunProgress
from evalward.plan.request import RunRequest
from evalward.plan.run_context import RunContext
from evalward.providers.registry import check_credentials, check_variables
from evalward.rundata.sides import Side
from evalward.rundata.spending import Estimate


@dataclass(frozen=True)
class Planned:
    """A change's runs, ready to start: what the execute phase takes whole."""

    changes: ChangeSet
    context: RunContext
    """The plan (cut to the budget), its checkouts, the set-up and the keys."""
    progress: RunProgress
    """Who hears of each run and each round, and where their traces go."""
    notes: tuple[str, ...]
    """What planning told: the definitions' warnings, what the budget cut."""
    trimmed: Trimmed | None
    """The budget's cut of the plan (None without a budget): what it left out, what it
    counted, and the Evals whose own runs of the fixtures the base gates with it could not
    hold even alone (`Trimmed.base_over`)."""

    @property
    def skipped(self) -> tuple[PlannedRun, ...]:
        """The runs the budget left out."""
        return tuple(self.trimmed.skipped) if self.trimmed is not None else ()

    @property
    def estimate(self) -> Estimate | None:
        """The budget's estimate of the runs it kept (None without a budget: the execute
        phase estimates the runs that ran)."""
        return self.trimmed.estimate if self.trimmed is not None else None

    @property
    def counted(self) -> Estimate | None:
        """What the budget counted for the runs it kept (None without a budget)."""
        return self.trimmed.counted if self.trimmed is not None else None


@contextmanager
def plan(request: RunRequest) -> Iterator[Planned]:
    """The request's change prepared and planned: refused or cut as the definitions and the
    budget say, announced to the request's progress, and its keys checked (a missing one:
    `MissingSecretError`, which the front end weighs against `on-missing-secrets`). Its
    checkouts are removed once the block ends."""
    setup, progress = request.setup, request.progress
    with prepare_change(setup) as prepared:
        yield _planned(prepared, RunContext.of(prepared.plan, prepared.checkouts, setup), progress)


def _planned(prepared: Prepared, context: RunContext, progress: RunProgress) -> Planned:
    notes = list(prepared.notes)
    refused = refuse_plan(context.plan, context.checkouts, context.providers, context.env)
    notes += warning_notes(refused)
    cached = context.cached()
    trimmed = _budgeted(context, cached, notes)
    plan = trimmed.plan if trimmed is not None else context.plan
    context = context.with_plan(plan)
    if cached is not None:
        plan.reused = sum(cached(run) for run in plan.runs)
    progress.evals = {side: resources.evals for side, resources in context.resources.items()}
    # set, but no request could carry it: said before any plan, as no secret is missing
    check_variables(planned_models(plan, context.checkouts), context.providers)
    progress.on_plan(plan)
    _check_keys(context)
    return Planned(prepared.changes, context, progress, tuple(notes), trimmed)


def _budgeted(
    context: RunContext, cached: Callable[[PlannedRun], bool] | None, notes: list[str]
) -> Trimmed | None:
    """The plan cut to the run's budget, with the runs it left out and its estimate (None
    without a budget); a `max-cost-usd` refuses models without a price. Runs `cached` says
    the result cache answers cost nothing. Says in `notes` what it cut."""
    plan, providers, budget = context.plan, context.providers, context.budget
    if not budget.limited:
        return None
    resources = context.resources
    if budget.max_cost_usd is not None and providers.override is None:
        refuse_unpriced(plan, resources, providers.prices, cached)
    trimmed = trim_to_budget(plan, resources, providers.prices, budget, cached)
    notes += [trimmed.note] if trimmed.skipped else []
    return trimmed


def _check_keys(context: RunContext) -> None:
    """Every key the plan's models need is there; a missing one may be skipped only when
    the base side needs it too (`_base_lacks_a_key`)."""
    models = planned_models(context.plan, context.checkouts)
    try:
        check_credentials(models, context.providers)
    except ConfigError as exc:
        raise MissingSecretError(str(exc), skippable=_base_lacks_a_key(context)) from None


def _base_lacks_a_key(context: RunContext) -> bool:
    """Whether the base's own side of this plan needs a key that is absent — as on a fork's
    pull request, which gets no secret at all — or there is no base to ask (a push, a dispatch
    run). The base's side is every run it may make in any round (`Plan.may_run`: adaptive
    reps' and `baseRuns: whereRead`'s runs come in later rounds), as the key check asks; only
    with none at all (only new agents) are the base's agents and judges as a whole asked."""
    plan, base = context.plan, context.checkouts.get(Side.base)
    if base is None:
        return True
    models = planned_models(plan, {Side.base: base})
    if not models:
        resources = base.resources
        found = {m for a in resources.agents.values() for m in a.resource.spec.models[:1]}
        found |= {m for e in resources.evals.values() for m in e.resource.spec.judge.models}
        models = sorted(m for m in found if m)
    try:
        check_credentials(models, context.providers)
    except ConfigError:
        return True
    return False
