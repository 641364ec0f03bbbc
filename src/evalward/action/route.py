"""What an event asks of the action: gate a pull request, run Evals on the current ref, or
nothing.

`route_event` is pure: the event comes in as a WorkflowContext, and on a `schedule` event the
Evals' schedules and the time come in as parameters (`eval_schedules` reads them), so every
routing rule is tested without a repository or a clock.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from evalward.action.context import WorkflowContext
from evalward.action.settings import Settings
from evalward.definitions.loader import load_resources
from evalward.errors import ConfigError
from evalward.resources.cron import Cron, parse_cron

NOT_GATED_ACTIONS = ("closed",)
"""Pull request actions that do not gate. Any other (`edited`, `assigned`, …) gates the head as
`synchronize` does: a run that skipped would turn the head's check green by an edit of the
title, in a workflow that listens to it."""
PR_NUMBER = re.compile(r"[0-9]{1,18}")
"""A pull request number as the workflow_dispatch input `pr` may write it."""
SCHEDULE_WINDOW_MINUTES = 60
"""GitHub may start a scheduled workflow late; an Eval is due if its cron fired this long ago."""

PULL_REQUEST_TARGET_REFUSAL = (
    "GITHUB_EVENT_NAME=pull_request_target: evalward refuses to run here by default. "
    "pull_request_target runs with the base repository's secrets and a write token, and "
    "evalward runs the agents of the pull request's head — code anyone who opens a pull "
    "request controls — so a fork could read your provider keys or push to your repository. "
    "Use `on: pull_request` (secrets are not passed to workflows from forks, which is the "
    "point). If you have reviewed this risk (see docs/github.md), set the input "
    "`allow-untrusted-head: true`."
)


class RouteKind(StrEnum):
    gate = "gate"
    """Gate a pull request: its head against its base, a comment and a decision."""
    run = "run"
    """Run Evals on the current ref (dispatch, schedule, push to the default branch)."""
    skip = "skip"
    """Nothing to do for this event; the action says why and passes."""


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    pr: int | None = None
    evals: frozenset[str] | None = None
    """On a schedule: the Evals that are due (None: every Eval)."""
    why: str = ""
    scope: str = ""
    """What a run covers, as the comment says it: "every Eval with this schedule", …"""
    cron: str = ""
    """The schedule event's cron (the workflow's), as the comment shows it."""


def route_event(
    context: WorkflowContext,
    settings: Settings,
    *,
    schedules: Mapping[str, Cron] | None = None,
    now: dt.datetime | None = None,
) -> Route:
    """The route of this event. `schedules` are the Evals' crons by name (a `schedule` event
    only); `now` is when the scheduled run started (default: the current time)."""
    event = context.event_name
    if event in ("pull_request", "pull_request_target"):
        if event == "pull_request_target" and not settings.allow_untrusted_head:
            raise ConfigError(PULL_REQUEST_TARGET_REFUSAL)
        if context.pr_number is None:
            raise ConfigError(f"GITHUB_EVENT_PATH: a {event} event without a pull_request")
        if context.action in NOT_GATED_ACTIONS:
            return Route(
                RouteKind.skip, why=f"the `{context.action}` action of {event} does not gate"
            )
        return Route(RouteKind.gate, pr=context.pr_number)
    if event == "workflow_dispatch":
        pr = settings.pr
        typed = context.dispatch_pr.strip()
        if pr is None and typed:
            # ASCII digits only (`isdigit` also takes "²", "7¹" and "①", which `int` refuses),
            # and few enough for `int` (it refuses more than 4300)
            if not PR_NUMBER.fullmatch(typed):
                raise ConfigError(
                    f"workflow_dispatch input `pr`: expected a pull request number, "
                    f"got {context.dispatch_pr!r}"
                )
            pr = int(typed)
        if pr:
            return Route(RouteKind.gate, pr=pr)
        return Route(
            RouteKind.run,
            why="every Eval on the current ref",
            scope="every Eval on the current ref",
        )
    if event == "schedule":
        return _scheduled(context, schedules or {}, now or dt.datetime.now(dt.UTC))
    if event == "push":
        default = context.default_branch or "main"
        if context.ref != f"refs/heads/{default}":
            return Route(
                RouteKind.skip, why=f"push to {context.ref or '?'}, not the default branch"
            )
        return Route(RouteKind.run, why=f"push to {default}", scope="every Eval")
    raise ConfigError(
        f"GITHUB_EVENT_NAME={event or '(unset)'}: evalward runs on pull_request, "
        "workflow_dispatch, schedule and push events (pull_request_target only with "
        "`allow-untrusted-head: true`)"
    )


def eval_schedules(workspace: Path) -> dict[str, Cron]:
    """Each Eval's `schedule`, by name, from the checkout (only Evals that have one)."""
    resources = load_resources(workspace)
    return {
        name: parse_cron(e.resource.spec.schedule)  # validated when the resources loaded
        for name, e in resources.evals.items()
        if e.resource.spec.schedule
    }


def _scheduled(context: WorkflowContext, schedules: Mapping[str, Cron], now: dt.datetime) -> Route:
    """The Evals whose own cron is the workflow's, else those whose cron fired in the window."""
    if not schedules:
        return Route(RouteKind.skip, why="no Eval has a `schedule`")
    trigger = " ".join(context.schedule.split())
    due = {name for name, cron in schedules.items() if trigger and cron.expression == trigger}
    scope = "every Eval with this schedule"
    if not due:
        due = {
            name
            for name, cron in schedules.items()
            if cron.fired_within(now, SCHEDULE_WINDOW_MINUTES)
        }
        scope = (
            f"no Eval has this schedule; the Evals whose own schedule fired in the last "
            f"{SCHEDULE_WINDOW_MINUTES} minutes"
        )
    if not due:
        return Route(RouteKind.skip, why="no scheduled Eval is due")
    return Route(
        RouteKind.run,
        evals=frozenset(due),
        why=f"scheduled: {', '.join(sorted(due))}",
        scope=scope,
        cron=trigger,
    )
