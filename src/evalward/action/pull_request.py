"""Gate a pull request: run its head against its base, decide, comment, annotate, check; and
a merge queue's group of pull requests by the same path, its commit against its base branch.

GitHub failing after the runs (finding the earlier comment, the bypass label, posting) costs
a warning, never the decision, the files or the summary.
"""

from __future__ import annotations

from collections.abc import Callable

from evalward.action.attributed import SECTION, UNRETIRED, attribute, review
from evalward.action.bypass import audit, check_bypass, needs_bypass
from evalward.action.context import WorkflowContext
from evalward.action.evaluate import evaluate, missing_secrets
from evalward.action.github import COMMIT, Comment, GitHubClient, PullInfo
from evalward.action.job import Console, Job, Site
from evalward.action.publish.checks import annotate, report_check
from evalward.action.publish.outputs import (
    SUMMARY_LIMIT,
    add_summary,
    conclude,
    gate_report,
    group_report,
    write_everything,
)
from evalward.action.settings import CommentMode, Settings
from evalward.action.workflow import command
from evalward.errors import (
    ConfigError,
    GitError,
    GitHubError,
    MissingSecretError,
    ResourceError,
    UnknownPullRequest,
)
from evalward.flows.session import Outcome, RunVerdict, decide
from evalward.git import Git
from evalward.plan.request import RunRequest
from evalward.report.markdown import render_unloadable
from evalward.text import utf8
from evalward.text.escaping import printable
from evalward.verdict.gate import (
    BypassRecord,
    BypassRefusal,
    GateDecision,
    GateResult,
    LabelWeighed,
)


def fork_dispatch_refusal(pull: PullInfo) -> str:
    where = f"the fork {pull.head_repo}" if pull.head_repo else "a repository that is gone"
    return (
        f"GITHUB_EVENT_NAME=workflow_dispatch: pull request #{pull.number} comes from {where}, "
        "and evalward refuses to gate it here by default. workflow_dispatch runs with this "
        "repository's secrets and token, and evalward runs the agents of the pull request's "
        "head — code whoever opened it controls — so it could read your provider keys or "
        "push to your repository, as on pull_request_target. Fork pull requests are gated by "
        "`on: pull_request` (secrets are not passed to forks). If you have reviewed this head "
        "(see docs/github.md), set the input `allow-untrusted-head: true`."
    )


UNKNOWN = (404, 410)
"""What GitHub answers for a pull request it does not know (or no longer has)."""


def pull_request(site: Site, github: GitHubClient, number: int) -> PullInfo:
    """The pull request to gate; on workflow_dispatch only one whose head is this
    repository's, unless untrusted heads are allowed (pull_request_target's rule). One
    GitHub's API does not know is a configuration error, named where its number came from."""
    try:
        pull = github.pull_request(number)
    except GitHubError as exc:
        if exc.status in UNKNOWN:
            raise UnknownPullRequest(unknown_pull(site, number, exc)) from None
        raise
    dispatched = site.context.event_name == "workflow_dispatch"
    if dispatched and not pull.head_in_repository and not site.settings.allow_untrusted_head:
        raise ConfigError(fork_dispatch_refusal(pull))
    return pull


PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
"""The events whose payload names the head the job's own check is written on."""


def gated_head(context: WorkflowContext, pull: PullInfo) -> str:
    """The head a pull request's gate runs on. On a pull_request event, the event's own
    (`pull_request.head.sha`): GitHub writes the job's conclusion, the check named after the
    job that branch protection requires, on that commit; a re-run of an older run (GitHub
    replays its payload) or a run a push overtook before it started would otherwise gate the
    newer head GitHub's API names, and its pass turn the older head's check green. A manual
    run (`workflow_dispatch` with `pr`) names no head: the pull request's, as the API has it."""
    if context.event_name not in PULL_REQUEST_EVENTS:
        return pull.head_sha
    head = context.head_sha or ""
    if not COMMIT.fullmatch(head):
        shown = f"{head!r}, not a commit" if head else "missing"
        raise ConfigError(
            f"GITHUB_EVENT_PATH: the {context.event_name} event's `pull_request.head.sha` is "
            f"{shown}, where GitHub writes the head the run gates, the commit its job's check is "
            f"written on; run evalward from a workflow `on: {context.event_name}` as GitHub "
            "starts it"
        )
    return head


def number_source(site: Site) -> str:
    """Where the number of the pull request to gate came from, as the workflow's author
    finds it (`route.route_event` takes it from there)."""
    if site.context.event_name != "workflow_dispatch":
        return f"the {site.context.event_name} event's `pull_request.number` (GITHUB_EVENT_PATH)"
    if site.settings.pr is not None:
        return "the action input `pr`"
    return "the workflow_dispatch input `pr`"


def unknown_pull(site: Site, number: int, exc: GitHubError) -> str:
    context = site.context
    return (
        f"{number_source(site)}: pull request #{number} is not known to GitHub's API at "
        f"{context.api_url} in {context.repository} ({exc.answer}). Name a pull request of "
        f"{context.repository}; GitHub answers {exc.status} as well when the token cannot read "
        "the repository's pull requests (the workflow needs `permissions: pull-requests: "
        "read`), or when GITHUB_REPOSITORY or GITHUB_API_URL name another repository or server."
    )


async def gate(job: Job, request: RunRequest) -> int:
    """Gate the job's pull request: the runs `request` asks the phases for (`action.run` made
    it, the one door into a run), the bypass label weighed, and the verdict written,
    commented and checked."""
    pull, github = job.pull, job.clients.github
    assert pull is not None and github is not None, "main() looks the pull request up with it"
    number, head_sha = pull.number, request.setup.revisions.head or "HEAD"
    job.console.log(
        command("group", f"evalward: pull request #{number} ({pull.base_sha}..{head_sha})")
    )
    outcome = await _outcome(job.console, job.site.settings, pull, request)
    if isinstance(outcome, int):
        return outcome  # skipped: a key is missing, and the inputs allow that
    evaluation = outcome.evaluation
    for note in evaluation.notes:
        job.console.log(command("notice", note))

    existing = _earlier_comment(job.console, github, number, job.site.marker)
    previous = _record_of(job.console, github, existing)
    needed = needs_bypass(outcome)
    verdict = await _decided(
        job.console,
        request,
        outcome,
        lambda: _weigh(job, github, pull, head_sha, previous, needed, shown=existing),
    )
    report = gate_report(job.site, verdict, pull, head_sha)
    body = write_everything(job, verdict, report)
    audit(job.console, job.site, verdict, number, head_sha, pull.base_ref)
    annotate(job.console, report)

    failure = outcome.failure
    bypassed = verdict.decision.result is GateResult.bypassed
    if _moved_on(job, github, number, head_sha):
        report_check(job, verdict, report, head_sha, into=pull.base_ref)
        return conclude(job.console, verdict)
    earlier = existing is not None and (SECTION in existing.body or UNRETIRED in existing.body)
    unretired = review(
        job,
        github,
        pull,
        head_sha,
        attribution=evaluation.attribution,
        blocking=report.blocking,
        earlier=earlier,
    )
    if isinstance(failure, ResourceError) and not bypassed:
        comment_unloadable(job, pull, head_sha, failure)
    elif should_comment(job.site.settings.comment, verdict.decision, existing is not None):
        # the next run looks for review comments to mark where the comment says it has some
        marked = unretired and SECTION not in body
        _post_comment(job, github, pull, f"{body}\n{UNRETIRED}" if marked else body)
    report_check(job, verdict, report, head_sha, into=pull.base_ref)
    return conclude(job.console, verdict)


async def _decided(
    console: Console,
    request: RunRequest,
    outcome: Outcome,
    weigh: Callable[[], LabelWeighed],
) -> RunVerdict:
    """`outcome` decided with the bypass label as `weigh` finds it, attributed, and decided
    again if the label no longer holds: attribution (`mode: always`) may have run for
    minutes, so the label is weighed as it stands when the check is written, and what
    attribution found stays for the reports."""
    verdict = decide(outcome, weigh())
    await attribute(console, request, verdict)
    if verdict.decision.result is GateResult.bypassed:
        again = weigh()
        if again.bypass is None:
            verdict = decide(outcome, again)
    return verdict


def group_base(site: Site, github: GitHubClient, git: Git) -> str:
    """What a merge queue's group is gated against: its base branch's tip as GitHub's API
    has it now, never the group's parent (`merge_group.base_sha`). A group queued behind
    others has theirs in its parent, not yet merged: their `evalward.yaml` would say where
    the keys go and their Evals what gates, and a queue that merges a group on its last
    commit's check alone merges them with it. Both commits must be in the clone."""
    context = site.context
    branch = context.group_branch
    tip = github.branch_tip(branch)
    for what, sha in (("the group's commit", context.head_sha or ""), ("its tip", tip)):
        if git.commit_of(sha) is None:
            raise ConfigError(
                f"merge_group: the base branch {printable(branch)} is at {tip[:12]} (GitHub's "
                f"API), and {what} {sha[:12]} is not in the clone at {context.workspace}: "
                "the group is gated against that tip, so check out full history "
                "(`actions/checkout` with `fetch-depth: 0`); where the branch moved on since "
                "the checkout, the queue makes the group anew"
            )
    return tip


async def gate_group(job: Job, request: RunRequest) -> int:
    """Gate a merge queue's group: its commit against its base branch's tip (`request`'s
    revisions, `group_base`), decided as a pull request's gate decides, the bypass label
    weighed on the pull request the group ends with, and the check written on the group's
    commit. No comment: the pull request's own gate keeps its comment (and the bypass
    record in it); the job summary says what the group's gate found."""
    github, route = job.clients.github, job.route
    assert github is not None, "main() makes the client for a group's gate"
    base_sha, head_sha = request.setup.revisions.base or "", request.setup.revisions.head or ""
    of = f"pull request #{route.pr}" if route.pr is not None else "an unnamed pull request"
    job.console.log(command("group", f"evalward: merge group of {of} ({base_sha}..{head_sha})"))
    outcome = await _outcome(job.console, job.site.settings, None, request)
    if isinstance(outcome, int):
        return outcome  # skipped: a key is missing, and the inputs allow that
    for note in outcome.evaluation.notes:
        job.console.log(command("notice", note))
    if route.pr is None:
        job.console.log(command("warning", route.why))
    needed = needs_bypass(outcome)
    verdict = await _decided(
        job.console,
        request,
        outcome,
        lambda: _weigh_group(job, github, (base_sha, head_sha), needed),
    )
    report = group_report(job.site, verdict, route.pr, base_sha)
    write_everything(job, verdict, report)
    audit(job.console, job.site, verdict, route.pr, head_sha, job.site.context.group_branch)
    annotate(job.console, report)
    report_check(job, verdict, report, head_sha, into=job.site.context.group_base_ref)
    return conclude(job.console, verdict)


def _weigh_group(
    job: Job, github: GitHubClient, group: tuple[str, str], needed: bool
) -> LabelWeighed:
    """The bypass label of the pull request a group ends with (`group`: its base branch's tip
    and its commit), weighed as that pull request's own gate weighs it on its head
    (`check_bypass`: who applied it, may they, and the head its comment's record says it
    covers), and honoured only where the group's commit is that head merged onto the tip
    (`_unmerged`). GitHub failing to say costs a warning and the bypass, never the
    decision."""
    number = job.route.pr
    if number is None or not needed:
        return LabelWeighed()
    try:
        pull = github.pull_request(number)
    except GitHubError as exc:
        job.console.log(
            command("warning", f"{exc} The bypass label could not be checked: no bypass.")
        )
        return LabelWeighed()
    existing = _earlier_comment(job.console, github, number, job.site.marker)
    previous = _record_of(job.console, github, existing)
    weighed = _weigh(job, github, pull, pull.head_sha, previous, needed)
    honoured = weighed.bypass
    parent = job.site.context.base_sha or ""
    if honoured is None or not (why := _unmerged(job.clients.git, pull, *group, parent)):
        return weighed
    refusal = BypassRefusal(
        honoured.label, honoured.applied_by, honoured.applied_at, honoured.permission, why
    )
    return LabelWeighed(refusal=refusal, record=weighed.record)


def _unmerged(git: Git, pull: PullInfo, base_sha: str, head_sha: str, parent: str) -> str:
    """Why a group's commit is not the pull request's head merged onto the base branch's
    tip `base_sha` ("" when it is): the label covers that head (with `bypass-scope: sha`,
    the one its record names), and a group that merges another (a push after it was
    queued) or more (the pull requests queued ahead, in its `parent`) is not what it
    covers. git's merge of the two is compared by tree: the same whether the queue merges,
    squashes or rebases a head that applies cleanly."""
    head = pull.head_sha
    if git.commit_of(head) is None:
        return (
            f"pull request #{pull.number}'s head {head[:12]} is not in the clone, so what "
            f"the group's commit {head_sha[:12]} merges cannot be compared with it: fetch it "
            f"in the workflow (`git fetch origin pull/{pull.number}/head`) for its label to "
            "count in the merge queue"
        )
    try:
        merged = git.merged_tree(base_sha, head)
    except GitError as exc:
        return (
            f"git could not merge pull request #{pull.number}'s head {head[:12]} onto the "
            f"base branch's tip {base_sha[:12]} to compare with the group's commit "
            f"{head_sha[:12]}, so the label cannot be shown to cover it: {exc}"
        )
    if merged is not None and merged == git.tree_of(head_sha):
        return ""
    if parent != base_sha:
        return (
            f"the group's commit {head_sha[:12]} merges the pull requests queued ahead of "
            f"pull request #{pull.number} too (its parent {parent[:12]} is not the base "
            f"branch's tip {base_sha[:12]}): the label covers #{pull.number}'s head "
            f"{head[:12]} alone; queue it again once they have merged"
        )
    if merged is None:
        return (
            f"pull request #{pull.number}'s head {head[:12]} conflicts with the base branch's "
            f"tip {base_sha[:12]}, so the group's commit {head_sha[:12]} is not that head "
            "merged onto it and the label does not cover it; update the pull request and "
            "queue it again"
        )
    return (
        f"the group's commit {head_sha[:12]} is not pull request #{pull.number}'s head "
        f"{head[:12]} merged onto the base branch's tip {base_sha[:12]}: the label covers "
        "that head, not what the group merges; queue the pull request again"
    )


def _weigh(
    job: Job,
    github: GitHubClient,
    pull: PullInfo,
    head_sha: str,
    previous: BypassRecord | None,
    needed: bool,
    *,
    shown: Comment | None = None,
) -> LabelWeighed:
    """The bypass label as it stands now (`check_bypass`); GitHub failing to say costs a
    warning and the bypass, never the decision."""
    try:
        return check_bypass(job.site, github, pull, head_sha, previous, needed, shown=shown)
    except GitHubError as exc:
        job.console.log(
            command("warning", f"{exc} The bypass label could not be checked: no bypass.")
        )
        return LabelWeighed()


async def _outcome(
    console: Console, settings: Settings, pull: PullInfo | None, request: RunRequest
) -> Outcome | int:
    """The pull request's runs, or what stopped them (`Outcome.failure`): an error before the
    plan is decided is written, commented and bypassable like one found mid-run. A merge of
    shards refuses a part as it always has (raised: nothing commented). An int: the exit code
    of a gate skipped for a missing key (`on-missing-secrets: skip`)."""
    outcome = await evaluate(request, console.log)
    console.log(command("endgroup"))
    failure = outcome.failure
    if isinstance(failure, MissingSecretError):
        try:
            return missing_secrets(console, settings, failure, pull)
        except MissingSecretError as refused:
            return Outcome.stopped(refused, request)
    if failure is not None and request.parts is not None and not outcome.began:
        raise failure
    return outcome


def _earlier_comment(
    console: Console, github: GitHubClient, number: int, marker: str
) -> Comment | None:
    """evalward's comment on the pull request from an earlier run, if GitHub can say."""
    try:
        return github.find_comment(number, marker)
    except GitHubError as exc:
        console.log(
            command(
                "warning",
                f"{exc} No earlier comment is taken as evalward's: no bypass record is "
                "read from one, and the comment is posted anew.",
            )
        )
        return None


def _record_of(
    console: Console, github: GitHubClient, existing: Comment | None
) -> BypassRecord | None:
    """The bypass record evalward's earlier comment keeps, where evalward edited it last:
    anyone with write access may edit any comment, and a record edited to name a later head
    would bypass that head in the name of whoever applied the label. GitHub failing to say
    who edited it last costs a warning and the record (a bypass then needs the label's own
    `labeled` run), never the decision."""
    record = BypassRecord.parse(existing.body) if existing is not None else None
    if existing is None or record is None:
        return None
    try:
        editor = github.last_editor(existing)
        if editor is None or github.is_own(editor):
            return record
        why = (
            f"evalward's comment was last edited by {printable(editor)}, not by evalward, so "
            "its bypass record is not read: a bypass of this head needs the label applied "
            "again"
        )
    except GitHubError as exc:
        why = (
            f"{exc} Whether evalward edited its comment last is not known: its bypass record "
            "is not read."
        )
    console.log(command("warning", why))
    return None


def _moved_on(job: Job, github: GitHubClient, number: int, head_sha: str) -> bool:
    """Whether a push has moved the pull request's head on from the commit this run gated:
    its comment and review would then speak of a head no longer the pull request's, over
    what a run of the newer one wrote, so they are left to that run (the check run, on this
    commit, is still written). GitHub failing to say costs a warning, and the comment is
    written as ever."""
    try:
        now = github.head_now(number)
    except GitHubError as exc:
        job.console.log(command("warning", f"{exc}; the comment is written as of {head_sha}"))
        return False
    if now == head_sha:
        return False
    job.console.log(
        command(
            "notice",
            f"pull request #{number}'s head moved on to {now[:12]} while this run gated "
            f"{head_sha[:12]}: the comment and the review are left to its run; this commit's "
            "check is written",
        )
    )
    return True


def _post_comment(job: Job, github: GitHubClient, pull: PullInfo, body: str) -> None:
    """Post or update the gate's comment, and say where (`comment-url`)."""
    url = say_in_comment(job.console, github, job.site.marker, pull, body)
    if url is not None:
        job.console.output({"comment-url": url})


def say_in_comment(
    console: Console, github: GitHubClient, marker: str, pull: PullInfo, body: str
) -> str | None:
    """Post or update the pull request's comment (the one `marker` finds) with `body`, as
    written; its URL. GitHub failing here costs a warning (None), never the decision."""
    try:
        url = github.upsert_comment(pull.number, marker, body)
    except GitHubError as exc:
        hint = " (a pull request from a fork gets a read-only token)" if pull.from_fork else ""
        console.log(command("warning", f"{exc}{hint}"))
        return None
    console.log(f"comment: {url}")
    return url


def comment_unloadable(job: Job, pull: PullInfo, head_sha: str, exc: ResourceError) -> None:
    """Say in the pull request why nothing ran: its resources do not load. The error
    itself still ends the run (exit 2)."""
    problems = [problem.render() for problem in exc.problems]
    said = (job.site.marker, problems, head_sha, job.site.context.run_url, exc.source, exc.after)
    body = render_unloadable(*said)
    add_summary(
        job.console, job.site.env, render_unloadable(*said, limit=SUMMARY_LIMIT, measure=utf8.size)
    )
    job.console.output({"result": GateResult.failed.value})
    if job.clients.github is None or job.site.settings.comment is CommentMode.never:
        return
    say_in_comment(job.console, job.clients.github, job.site.marker, pull, job.console.redact(body))


def should_comment(mode: CommentMode, decision: GateDecision, exists: bool) -> bool:
    """`comment: always` always; `on-failure` when the gate did not pass, or to update a
    comment already there; `never` never."""
    if mode is CommentMode.never:
        return False
    if mode is CommentMode.always or exists:
        return True
    return decision.result not in (GateResult.passed, GateResult.skipped)
