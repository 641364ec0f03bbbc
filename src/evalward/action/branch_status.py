"""The default branch's Eval status (`status.py`), kept by the action's push and schedule runs.

Both run on the default branch (a push elsewhere is skipped; GitHub runs schedules there), so
their results are the default branch's status. It lives in the result cache directory, which
`actions/cache` keeps between runs and pull requests restore from their base branch, under the
cache's trust rule: a cache the checkout could fill is neither read nor written
(`setup.decide_cache`). A pull request's run and a dispatch run (any branch) never
write it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from evalward.action.job import Console, Job
from evalward.action.route import Route
from evalward.action.workflow import command
from evalward.definitions.loader import load_resources
from evalward.errors import EvalwardError
from evalward.git import Git
from evalward.past.status import STATUS_DIR, AgentIdentity, Phase, StatusStore, current, identities
from evalward.past.status_run import RunSource, SinceScheduled, StatusRun
from evalward.record.evaluation import Evaluation

STATUS_EVENTS = ("push", "schedule")


@dataclass
class BranchStatus:
    """This run's updates to the default branch's status, and the agents' identities as the
    run found them (what a Stale check compares with later)."""

    run: StatusRun
    agents: dict[str, AgentIdentity] = field(default_factory=dict)

    def since_scheduled(self, evaluation: Evaluation) -> list[SinceScheduled]:
        """On a schedule: each Eval beside the previous scheduled run, for the job summary."""
        if self.run.source.event != "schedule":
            return []
        return self.run.since_scheduled(evaluation.evals)

    def finish(self, console: Console, evaluation: Evaluation, *, cancelled: bool) -> None:
        """Record what finished; a cancelled run records no Eval's result."""
        if cancelled:
            self.close(console, "the run was cancelled")
            return
        try:
            self.run.finish(
                evaluation.evals,
                self.agents,
                private=evaluation.private,
                unfinished=evaluation.unfinished_evals(),
            )
        except OSError as exc:
            _not_written(console, exc)

    def close(self, console: Console, reason: str) -> None:
        """The run ends without results (an error, a missing key): no Eval stays Running."""
        try:
            self.run.close(reason)
        except OSError as exc:
            _not_written(console, exc)


def _not_written(console: Console, exc: OSError) -> None:
    console.log(command("warning", f"the Evals' status was not written to the cache: {exc}"))


def begin_status(job: Job, route: Route) -> BranchStatus:
    """Mark the Evals this push or schedule runs Running in the cache's status store, and log
    which of them were Stale (their agent changed since their last run)."""
    context = job.site.context
    source = RunSource(
        event=context.event_name,
        commit=context.sha or _head(job.clients.git),
        started=dt.datetime.now(dt.UTC),
        branch=context.ref.removeprefix("refs/heads/") or context.default_branch,
        run_url=context.run_url,
    )
    inert = BranchStatus(StatusRun(None, source))
    cache_dir = job.trusted.cache.directory
    if context.event_name not in STATUS_EVENTS or cache_dir is None:
        return inert
    try:
        resources = load_resources(context.workspace)
    except EvalwardError:
        return inert  # the run reports why its resources do not load
    chosen = sorted(n for n in resources.evals if route.evals is None or n in route.evals)
    targets = {name: resources.evals[name].resource.spec.target_agent for name in chosen}
    store = StatusStore(cache_dir / STATUS_DIR)
    writes = job.trusted.cache.mode.writes
    status = BranchStatus(StatusRun(store, source, writes=writes))
    try:
        status.agents = identities(resources, targets.values())
        for name, agent in targets.items():
            row = current(name, agent, status.run.previous_of(name), status.agents.get(agent))
            if row.phase is Phase.stale:
                job.console.log(f"evalward: {name} was Stale: {row.stale_because}")
        status.run.start(targets)
    except OSError as exc:
        _not_written(job.console, exc)
        return inert
    for problem in store.problems:
        job.console.log(command("warning", f"Eval status {problem}"))
    return status


def _head(git: Git) -> str:
    try:
        return git.resolve("HEAD")
    except EvalwardError:
        return ""
