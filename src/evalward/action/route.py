"""What an event asks of the action: gate a pull request or a merge queue's group, run Evals
on the current ref, or nothing.

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
from evalward.action.github import COMMIT
from evalward.action.settings import Settings
from evalward.definitions.loader import load_resources
from evalward.errors import ConfigError
from evalward.resources.cron import Cron, parse_cron

NOT_GATED_ACTIONS = ("closed",)
"""Pull request actions that do not gate. Any other (`edited`, `assigned`, …) gates the head as
`synchronize` does: a run that skipped would turn the head's check green by an edit of the
title, in a workflow that listens to it."""
NOT_GATED_GROUP_ACTIONS = ("destroyed",)
"""merge_group actions that do not gate: `destroyed` comes once the group is merged, taken
out of the queue or made anew, when its check no longer counts. `checks_requested` (and any
action GitHub may add) gates the group's commit."""
GROUP_REF = re.compile(
    r"refs/heads/gh-readonly-queue/(?P<base>.+)/pr-(?P<pr>[0-9]{1,18})-[0-9a-f]{40}(?:[0-9a-f]{24})?"
)
"""The queue's branch of a group, `merge_group.head_ref`: its base branch, then the pull
request the group ends with and a commit."""
PR_NUMBER = re.compile(r"(?=[0-9]*[1-9])[0-9]{1,18}")
"""A pull request number as the workflow_dispatch input `pr` may write it: 1 or more, as
GitHub numbers them (`0` names none, and is no way to leave the input empty)."""
SERVED_EVENTS = (
    "evalward runs on pull_request, merge_group, workflow_dispatch, schedule and push events "
    "(pull_request_target only with `allow-untrusted-head: true`)"
)
"""The events the action serves, as a refusal of another names them."""
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
    group = "group"
    """Gate a merge queue's group: its commit against its base branch's tip, a decision and
    the check on its commit; no comment."""
    run = "run"
    """Run Evals on the current ref (dispatch, schedule, push to the default branch)."""
    skip = "skip"
    """Nothing to do for this event; the action says why and passes."""


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    pr: int | None = None
    """The pull request to gate; on a merge queue's group, the one it ends with, whose bypass
    label counts (None: its queue branch names none)."""
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
    if event == "merge_group":
        return _grouped(context)
    if event == "workflow_dispatch":
        pr = settings.pr
        typed = context.dispatch_pr.strip()
        if pr is None and typed:
            # ASCII digits only (`isdigit` also takes "²", "7¹" and "①", which `int` refuses),
            # and few enough for `int` (it refuses more than 4300)
            if not PR_NUMBER.fullmatch(typed):
                raise ConfigError(
                    f"workflow_dispatch input `pr`: expected a pull request number (1 or "
                    f"more), got {context.dispatch_pr!r}; leave it empty to run every Eval "
                    "on the current ref"
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
    if not event:
        raise ConfigError(
            f"GITHUB_EVENT_NAME=(unset): {SERVED_EVENTS}, and reads which one from it, as GitHub "
            "sets it for every step"
        )
    raise ConfigError(
        f"GITHUB_EVENT_NAME={event}: {SERVED_EVENTS}, and has nothing to gate on `{event}`; take "
        f"`{event}` out of the workflow's `on:`, or skip the evalward step on it (`if: "
        f"github.event_name != '{event}'`)"
    )


def _grouped(context: WorkflowContext) -> Route:
    """A merge queue's group gates its commit (`merge_group.head_sha`) against its base
    branch (`base_ref`), as a pull request's head against its base. The pull request it
    ends with is read from the queue's branch name, for its bypass label alone: a name that
    does not parse gates all the same, with no bypass (`why` says so)."""
    if context.action in NOT_GATED_GROUP_ACTIONS:
        return Route(
            RouteKind.skip, why=f"the `{context.action}` action of merge_group does not gate"
        )
    for field, sha in (("base_sha", context.base_sha), ("head_sha", context.head_sha)):
        if not COMMIT.fullmatch(sha or ""):
            shown = f"{sha!r}, not a commit" if sha else "missing"
            raise ConfigError(
                f"GITHUB_EVENT_PATH: the merge_group event's `merge_group.{field}` is {shown}, "
                "where GitHub writes the commits of the group's change; run evalward from a "
                "workflow `on: merge_group` as GitHub starts it"
            )
    branch = context.group_branch
    if not context.group_base_ref.startswith("refs/heads/") or not branch:
        shown = f"{context.group_base_ref!r}, not a branch" if context.group_base_ref else "missing"
        raise ConfigError(
            f"GITHUB_EVENT_PATH: the merge_group event's `merge_group.base_ref` is {shown}, "
            "where GitHub writes the branch the group merges into (refs/heads/<branch>), whose "
            "tip the group is gated against; run evalward from a workflow `on: merge_group` "
            "as GitHub starts it"
        )
    named = GROUP_REF.fullmatch(context.group_ref)
    if named is None or named["base"] != branch:
        return Route(
            RouteKind.group,
            why=(
                f"`merge_group.head_ref` {context.group_ref or '(none)'!r} does not name a "
                f"pull request as the queue's branches of {context.group_base_ref} do "
                f"(refs/heads/gh-readonly-queue/{branch}/pr-<number>-<commit>), so "
                "no bypass label is weighed: the group gates on its Evals alone"
            ),
        )
    return Route(RouteKind.group, pr=int(named["pr"]))


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
