"""The bypass label on a pull request: who applied it, may they, does it cover this head, and
the audit trail when it is used or refused (docs/github.md).

`gate.judge_bypass` holds the rules; this module asks GitHub for the facts they need and
records the outcome: one JSON line on stdout, a `::warning::`, a line in audit.jsonl and the
`audit` output.
"""

from __future__ import annotations

import dataclasses
import json

from evalward.action.github import GitHubClient, PullInfo
from evalward.action.job import Console, Site
from evalward.action.workflow import append_audit, command
from evalward.errors import EXIT_OK
from evalward.flows.session import Outcome, RunVerdict, decide
from evalward.verdict.gate import Bypass, BypassRecord, LabelWeighed, audit_record, judge_bypass


def check_bypass(
    site: Site,
    github: GitHubClient,
    pull: PullInfo,
    head_sha: str,
    previous: BypassRecord | None,
    needed: bool,
) -> LabelWeighed:
    """The bypass (or its refusal) for this head, and the record the comment keeps of which
    head the label was applied on (`previous`: the record the earlier comment kept). The
    label is weighed only where the gate cannot pass on its own (`needed`: `needs_bypass`),
    and as it stands when the gate decides: a label taken off while the runs went on is no
    label, however the pull request read when the job started."""
    label = site.settings.bypass_label
    if label not in pull.labels or label not in github.labels(pull.number):
        return LabelWeighed()
    applied = github.latest_labeled(pull.number, label)
    labeled_at = applied.created_at if applied else None
    covered: str | None = None
    context = site.context
    if (
        context.action == "labeled"
        and context.event_label == label
        and context.pr_number == pull.number
        and context.head_sha
    ):
        covered = context.head_sha
    elif previous is not None and previous.label == label and previous.labeled_at == labeled_at:
        covered = previous.sha
    record = BypassRecord(label, labeled_at, covered) if covered else None
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
        covered_sha=covered,
    )
    if isinstance(verdict, Bypass):
        by_author = bool(actor) and actor == pull.author
        return LabelWeighed(dataclasses.replace(verdict, by_author=by_author), record=record)
    return LabelWeighed(refusal=verdict, record=record)


def needs_bypass(outcome: Outcome) -> bool:
    """Whether the gate cannot pass on its own: its decision without the label does not pass
    (an Eval fails or could not run, an error stopped it, the budget left it incomplete, a
    judge cannot decide, a provider was down), whatever made it so."""
    return decide(outcome).decision.exit_code != EXIT_OK


def audit(console: Console, site: Site, verdict: RunVerdict, number: int, head_sha: str) -> None:
    """Record a bypass used or refused, everywhere an auditor looks."""
    decision = verdict.decision
    if decision.bypass is None and decision.refusal is None:
        return
    record = audit_record(
        decision,
        repository=site.context.repository,
        pr_number=number,
        head_sha=head_sha,
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
    append_audit(site.output_dir, record, console.redact)
    console.output({"audit": line})
