"""The bypass label on a pull request: who applied it, may they, does it cover this head, and
the audit trail when it is used or refused (docs/github.md).

`gate.judge_bypass` holds the rules; this module asks GitHub for the facts they need and
records the outcome: one JSON line on stdout, a `::warning::`, a line in audit.jsonl and the
`audit` output.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta

from evalward.action.context import WorkflowContext
from evalward.action.github import Comment, GitHubClient, LabelEvent, PullInfo
from evalward.action.job import Console, Site
from evalward.action.workflow import AUDIT_FILE, append_audit, command
from evalward.errors import EXIT_OK
from evalward.flows.session import Outcome, RunVerdict, decide
from evalward.report.markdown import shown_head
from evalward.text.escaping import printable
from evalward.verdict.gate import (
    Bypass,
    BypassRecord,
    BypassRefusal,
    LabelWeighed,
    audit_record,
    judge_bypass,
)


def check_bypass(
    site: Site,
    github: GitHubClient,
    pull: PullInfo,
    head_sha: str,
    previous: BypassRecord | None,
    needed: bool,
    *,
    shown: Comment | None = None,
) -> LabelWeighed:
    """The bypass (or its refusal) for this head, and the record the comment keeps of which
    head the label was applied on (`previous`: the record the earlier comment kept). The
    label is weighed only where the gate cannot pass on its own (`needed`: `needs_bypass`),
    and as it stands when the gate decides: a label taken off while the runs went on is no
    label, however the pull request read when the job started. This run's `labeled` payload
    shows the head only when it is the event of the label that stands (`stale_payload`), and
    covers it only when evalward's comment (`shown`, as it stands) showed that head's result
    when the label was applied (`unseen_head`)."""
    label = site.settings.bypass_label
    if label not in pull.labels or label not in github.labels(pull.number):
        other = next((name for name in pull.labels if name.casefold() == label.casefold()), "")
        if needed and other:  # never honoured: the gate stays red, and says who and why
            applied = github.latest_labeled(pull.number, other)
            actor, at = (applied.actor, applied.created_at) if applied else (None, None)
            refusal = BypassRefusal(other, actor, at, None, _case(other, label))
            return LabelWeighed(refusal=refusal)
        return LabelWeighed()
    applied = github.latest_labeled(pull.number, label)
    labeled_at = applied.created_at if applied else None
    record: BypassRecord | None = None
    unproven = ""
    context = site.context
    if (
        context.action == "labeled"
        and context.event_label == label
        and context.pr_number == pull.number
        and context.head_sha
    ):
        unproven = stale_payload(context, applied) or unseen_head(
            github, shown, context.head_sha, labeled_at
        )
        if not unproven:
            base = context.event_base_ref or None
            record = BypassRecord(label, labeled_at, context.head_sha, base)
    if (
        record is None
        and previous is not None
        and (previous.label, previous.labeled_at) == (label, labeled_at)
    ):
        record = previous
    if not needed:
        return LabelWeighed(record=record)
    actor = applied.actor if applied else None
    permission = github.permission(actor) if actor else None
    verdict = judge_bypass(
        label=label,
        scope=site.settings.bypass_scope,
        head_sha=head_sha,
        applied_by=actor,
        applied_at=labeled_at,
        permission=permission,
        covered_sha=record.sha if record else None,
        # a merge queue's group merges into its own branch, whatever the pull request reads
        base_ref=context.group_branch or pull.base_ref,
        covered_base=record.base if record else None,
        unproven=unproven,
    )
    if isinstance(verdict, Bypass):
        by_author = bool(actor) and actor == pull.author
        return LabelWeighed(dataclasses.replace(verdict, by_author=by_author), record=record)
    return LabelWeighed(refusal=verdict, record=record)


def _case(found: str, label: str) -> str:
    """Why a label written in other capitals than the `bypass-label` input does not count."""
    return (
        f"the action input bypass-label is {printable(label)!r}, written in other capitals: "
        "GitHub holds one label of a name whatever its case, and evalward weighs only the "
        f"label written as the input is; set the input bypass-label to {printable(found)!r}, "
        "or rename the label to the input's spelling"
    )


LABELED_SKEW = timedelta(seconds=5)
"""How much earlier than the `labeled` event's `created_at` the payload's
`pull_request.updated_at` may read and still be that event's own: GitHub writes both to the
second, in separate writes. A label removed and applied again within it is not told apart."""


def stale_payload(context: WorkflowContext, applied: LabelEvent | None) -> str:
    """Why this run's `labeled` payload is not the event of the label that stands ("" when it
    is). Only that event shows the head the label was applied on: a run still going on when
    the label was removed and applied again (by anyone, on another head) reads the newer event
    from the API, and a re-run replays its old payload. The payload is that event's when the
    same user sent it and it was made no earlier than the event (`LABELED_SKEW`)."""
    if applied is None or not applied.actor:
        return "the issue events API does not say who applied the label that stands"
    if context.event_sender != applied.actor:
        return (
            f"it is the label {context.event_sender or 'someone'} applied, and the label that "
            f"stands was applied by {applied.actor}"
        )
    made, labeled = instant(context.event_updated_at), instant(applied.created_at)
    if made is None or labeled is None:
        return (
            f"its time ({context.event_updated_at or 'none'}) cannot be weighed against the "
            f"label's ({applied.created_at or 'none'})"
        )
    if made < labeled - LABELED_SKEW:
        return (
            f"it was made at {context.event_updated_at}, before the label that stands was "
            f"applied at {applied.created_at} (a re-run of an earlier run, or the label was "
            "removed and applied again since)"
        )
    return ""


def unseen_head(
    github: GitHubClient, shown: Comment | None, head: str, labeled_at: str | None
) -> str:
    """Why the label does not cover `head`, the head its `labeled` payload shows ("" when it
    does). A label is applied on the result its author read in evalward's comment: where the
    comment showed another head's (a push landed just before the label, and its run was
    cancelled or had not reported), or showed this head's only after the label, or was last
    edited by someone else (its foot may name any head), the payload's head is one its
    author never saw fail. With no comment yet, the label came before any result: it covers
    the head it was applied on, whatever it does."""
    if shown is None:
        return ""
    reported = shown_head(shown.body)
    if reported is not None and not head.startswith(reported):
        return (
            f"the label was applied while evalward's comment showed the result of head "
            f"{reported}, not of this head {head[:12]}, pushed before the label: apply the "
            "label again once this head's result is posted"
        )
    written, labeled = instant(shown.updated_at), instant(labeled_at)
    if written is not None and labeled is not None and written > labeled + LABELED_SKEW:
        return (
            f"evalward's comment showed this head's result only at {shown.updated_at}, after "
            f"the label was applied at {labeled_at}: apply the label again"
        )
    editor = github.last_editor(shown)
    if editor is not None and not github.is_own(editor):
        return (
            f"evalward's comment, which the label was applied beside, was last edited by "
            f"{printable(editor)}, not by evalward: apply the label again"
        )
    return ""


def instant(text: str | None) -> datetime | None:
    """GitHub's ISO 8601 time with its zone; None for anything else."""
    try:
        moment = datetime.fromisoformat(text or "")
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def needs_bypass(outcome: Outcome) -> bool:
    """Whether the gate cannot pass on its own: its decision without the label does not pass
    (an Eval fails or could not run, an error stopped it, the budget left it incomplete, a
    judge cannot decide, a provider was down), whatever made it so."""
    return decide(outcome).decision.exit_code != EXIT_OK


def audit(
    console: Console,
    site: Site,
    verdict: RunVerdict,
    number: int | None,
    head_sha: str,
    base_ref: str,
) -> None:
    """Record a bypass used or refused, everywhere an auditor looks; an audit.jsonl the
    runner cannot take is lost (`Console.lose`): the job then does not end clean. `head_sha`
    is the commit the check is written on (a merge queue's group's, for its pull request
    `number`), `base_ref` the branch it is gated into."""
    decision = verdict.decision
    if decision.bypass is None and decision.refusal is None:
        return
    record = audit_record(
        decision,
        repository=site.context.repository,
        pr_number=number,
        head_sha=head_sha,
        base_ref=base_ref,
        run_url=site.context.run_url,
    )
    line = json.dumps(record)
    console.log(line)
    if decision.bypass is not None:
        who = decision.bypass.applied_by
        if decision.bypass.by_author:
            who = f"{who} (the pull request's own author)"
        what = (
            f"the error that stopped it: {decision.error}"
            if decision.error
            else f"failing: {', '.join(decision.failing_evals)}"
        )
        console.log(
            command(
                "warning",
                f"evalward gate bypassed by {who} with the {decision.bypass.label!r} label; "
                + what,
            )
        )
    elif decision.refusal is not None:
        console.log(command("warning", f"evalward bypass refused: {decision.refusal.reason}"))
    try:
        append_audit(site.output_dir, record, console.redact)
    except OSError as exc:
        console.lose(f"the audit record in {site.output_dir / AUDIT_FILE}", exc)
    console.output({"audit": line})
