"""The one place that talks to the GitHub REST API (through PyGithub).

PyGithub, with requests, PyJWT and cryptography, is about a quarter of the action's start-up
(130 ms); it is imported when a client is made, so a job that never talks to GitHub (a push,
a schedule, a dispatch without `check-run`, an input refused) does not pay for it."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from evalward.action.context import dig
from evalward.errors import GitHubError
from evalward.text import utf8
from evalward.text.cuts import cap_chars
from evalward.text.escaping import printable

if TYPE_CHECKING:
    from github import GithubException
    from github.PullRequest import PullRequest
    from github.PullRequest import ReviewComment as DraftComment

T = TypeVar("T")

COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
"""A commit's id as GitHub writes it (SHA-1, or SHA-256)."""
MAX_ANNOTATIONS = 50
"""GitHub accepts at most 50 annotations per check-run request."""
SUMMARY_BYTES = 65_535
"""GitHub's limit for a check run's summary. Its description says characters; GitHub counts
bytes of UTF-8, and refuses the whole check run past it (a summary of emoji, four bytes
each, is refused at a quarter of the characters)."""
ANNOTATION_BYTES = 64_000
"""GitHub's limit for an annotation's message, "64 KB", counted in bytes as the summary's
is, and read the stricter way (64,000, not 65,536)."""
TITLE_BYTES = 255
"""GitHub's limit for an annotation's title, counted the same way; the check run's title is
held to it too (a verdict's headline)."""
VIEWER_QUERY = "query { viewer { login } }"
EDITOR_QUERY = (
    "query($id: ID!) { node(id: $id) { ... on IssueComment { editor { __typename login } } } }"
)


def same_login(one: str, other: str) -> bool:
    """Whether two logins name one account: GitHub's logins ignore case."""
    return one.casefold() == other.casefold()


@dataclass(frozen=True)
class PullInfo:
    number: int
    labels: list[str]
    """The labels as the pull request was read, when the job started (`GitHubClient.labels`
    reads them as they stand)."""
    head_sha: str
    base_sha: str
    head_repo: str = ""
    base_repo: str = ""
    author: str = ""
    """The login of the account that opened the pull request."""
    base_ref: str = ""
    """The branch the pull request merges into (`base.ref`), as GitHub's API has it."""

    @property
    def from_fork(self) -> bool:
        return bool(self.head_repo) and self.head_repo != self.base_repo

    @property
    def head_in_repository(self) -> bool:
        """The head branch is known to live in the base repository (a deleted fork's head
        repository is unknown: not this one)."""
        return bool(self.head_repo) and self.head_repo == self.base_repo


@dataclass(frozen=True)
class LabelEvent:
    """The `labeled` event of a label that stands: who applied it and when."""

    actor: str | None
    created_at: str | None


@dataclass(frozen=True)
class Comment:
    id: int
    body: str
    node_id: str = ""
    """Its GraphQL id: who edited it last is asked there alone (`last_editor`)."""
    updated_at: str = ""
    """When it was last written (ISO 8601, GitHub's `updated_at`): what a label applied
    before then was applied beside (`bypass.unseen_head`)."""


@dataclass(frozen=True)
class ReviewComment:
    """A comment of a pull-request review, on lines of the diff."""

    id: int
    path: str
    line: int | None
    """The last line it sits on; None once GitHub takes it for outdated (a later push took
    its lines out of the diff)."""
    start_line: int | None
    """The first line of a comment on a range; None for one line."""
    side: str  # RIGHT (the head's lines) | LEFT (the base's)
    body: str


@dataclass(frozen=True)
class LineComment:
    """A comment to post in a review, on the head's side of the diff: `line` of `path`, or
    the range `start_line`..`line`."""

    path: str
    line: int
    body: str
    start_line: int | None = None


@dataclass(frozen=True)
class Annotation:
    path: str
    line: int
    level: str  # notice | warning | failure
    title: str
    message: str


@dataclass
class CheckReport:
    name: str
    head_sha: str
    conclusion: str  # success | failure | neutral | cancelled | skipped
    title: str
    summary: str
    details_url: str = ""
    annotations: list[Annotation] = field(default_factory=list)


class GitHubClient:
    """What the action needs from GitHub, over PyGithub, bound to one repository (tests bind
    it to a local server)."""

    def __init__(self, api_url: str, token: str, repository: str) -> None:
        # lazy: PyGithub is paid for by a job that talks to GitHub, not by every start
        from github import Auth, Github

        self._gh = Github(
            auth=Auth.Token(token),
            base_url=api_url.rstrip("/"),
            timeout=30,  # seconds per request
            retry=2,
            # GitHub asks for requests made one at a time (its REST API best practices), as
            # they are here, and a second between writes only for a large number of them: a
            # job writes three times at most (the comment, the check run, the commit status),
            # so PyGithub's pauses (a second before each write, 0.25 s before each read) only
            # made every job seconds slower
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,  # the repository is not fetched before its first real request
        )
        self._repo = self._gh.get_repo(repository)
        self._pulls: dict[int, PullRequest] = {}
        self._identity: str | None = None

    def _pull(self, number: int) -> PullRequest:
        """The pull request, read whole: PyGithub's `get_pull` only names it, and reads it
        at the first attribute asked for, where GitHub's answer would escape `_call`."""
        if number not in self._pulls:

            def read() -> PullRequest:
                pull = self._repo.get_pull(number)
                _ = pull.raw_data  # the request, here
                return pull

            self._pulls[number] = _call(f"read pull request #{number}", read)
        return self._pulls[number]

    def pull_request(self, number: int) -> PullInfo:
        raw = self._pull(number).raw_data
        if not isinstance(raw, dict):
            raise _unreadable(f"read pull request #{number}", "not a JSON object")
        shas = [dig(raw, side, "sha") for side in ("head", "base")]
        if not all(isinstance(sha, str) and COMMIT.fullmatch(sha) for sha in shas):
            raise _unreadable(f"read pull request #{number}", "no head and base commits")
        labels = raw.get("labels")
        return PullInfo(
            number=number,
            labels=[str(dig(label, "name")) for label in labels or [] if dig(label, "name")]
            if isinstance(labels, list)
            else [],
            head_sha=str(shas[0]),
            base_sha=str(shas[1]),
            head_repo=str(dig(raw, "head", "repo", "full_name") or ""),
            base_repo=str(dig(raw, "base", "repo", "full_name") or ""),
            author=str(dig(raw, "user", "login") or ""),
            base_ref=str(dig(raw, "base", "ref") or ""),
        )

    def head_now(self, number: int) -> str:
        """The pull request's head commit as GitHub has it now, read afresh (a push may have
        moved it since `pull_request` read it)."""
        self._pulls.pop(number, None)
        return self.pull_request(number).head_sha

    def branch_tip(self, branch: str) -> str:
        """The commit `branch` is at as GitHub has it now: what a merge queue's group is
        gated against (`pull_request.group_base`), which no file of the checkout names."""

        def read() -> object:
            # the name as one path segment (a `/` too, as Octokit writes `{branch}`):
            # PyGithub's `get_branch` leaves `release/2.x` as two
            named = urllib.parse.quote(branch, safe="")
            url = f"{self._repo.url}/branches/{named}"
            return self._repo.requester.requestJsonAndCheck("GET", url)[1]

        raw = _call(f"read the branch {printable(branch)}", read)
        sha = dig(raw, "commit", "sha")
        if not isinstance(sha, str) or not COMMIT.fullmatch(sha):
            raise _unreadable(f"read the branch {printable(branch)}", "no commit")
        return sha

    def labels(self, number: int) -> list[str]:
        """The names of the labels on the pull request as they stand now (the issue labels
        API), not as they were when the job read the pull request."""
        return _call(
            f"read the labels of pull request #{number}",
            lambda: [str(label.name) for label in self._pull(number).get_labels()],
        )

    def latest_labeled(self, number: int, label: str) -> LabelEvent | None:
        """The latest `labeled` event for `label`, from the issue events API; None when there
        is none, or when a later `unlabeled` event took the label off again."""

        def latest() -> LabelEvent | None:
            found = None
            for event in self._pull(number).get_issue_events():
                if not (event.label and event.label.name == label):
                    continue
                if event.event == "labeled":
                    found = LabelEvent(
                        actor=event.actor.login if event.actor else None,
                        created_at=event.created_at.isoformat() if event.created_at else None,
                    )
                elif event.event == "unlabeled":
                    found = None
            return found

        return _call(f"read the events of pull request #{number}", latest)

    def permission(self, username: str) -> str:
        """admin, maintain, write, triage, read or none (the collaborator permission API)."""
        return _call(
            f"read the repository permission of {username}",
            lambda: str(self._repo.get_collaborator_permission(username)),
        )

    def identity(self) -> str:
        """The login of the account this token writes as: every comment evalward posts has it.

        `GET /user` answers for a person's token (a personal access token, or a GitHub App's
        token acting for a user). An installation token — the workflow's own `GITHUB_TOKEN`,
        which is the `github-actions` app's, or another App's — is refused there (403
        "Resource not accessible by integration"), and no REST endpoint names its App without
        the App's private key; GraphQL's `viewer` does, as the bot account `<app-slug>[bot]`
        (`github-actions[bot]` for the workflow token) that comments are written by.
        """

        # lazy: loaded with the client (`__init__`)
        from github import GithubException

        def learn() -> str:
            try:
                return str(self._gh.get_user().login)
            except GithubException as exc:
                if exc.status != 403:
                    raise
            _, answer = self._gh.requester.graphql_query(VIEWER_QUERY, {})
            login = dig(answer, "data", "viewer", "login")
            if not isinstance(login, str) or not login:
                named = printable(repr(answer))[:500]
                raise GitHubError(f"GitHub API: GraphQL `viewer` named no login: {named}")
            return login

        if self._identity is None:
            self._identity = _call("learn which account the token writes as", learn)
        return self._identity

    def find_comment(self, number: int, marker: str) -> Comment | None:
        """evalward's own comment: starts with `marker` and was written by this token's account.

        Anyone who can comment can start a comment with the marker: a person, another App's
        bot, another workflow. Only the account evalward itself writes as (`identity`) counts,
        so nobody else can plant a bypass record or get evalward to try to edit their comment.
        """
        return self._find(number, marker, self.identity())

    def _find(self, number: int, marker: str, login: str) -> Comment | None:
        def find() -> Comment | None:
            for comment in self._pull(number).get_issue_comments():
                # the listing's own fields: `raw_data` would read each comment again, one
                # request per comment on the pull request
                author = str(comment.user.login or "") if comment.user else ""
                if same_login(author, login) and comment.body and comment.body.startswith(marker):
                    updated = comment.updated_at.isoformat() if comment.updated_at else ""
                    return Comment(comment.id, comment.body, str(comment.node_id or ""), updated)
            return None

        return _call(f"read the comments of pull request #{number}", find)

    def last_editor(self, comment: Comment) -> str | None:
        """Who edited evalward's comment last (None: no one since it was written). Anyone
        with write access may edit any comment, and its author stays evalward's account:
        only GraphQL's `editor` tells an edit of evalward's own from another's. GraphQL names
        a bot there by its app's slug alone (`github-actions`), where `viewer` and REST name
        it `github-actions[bot]`: a bot's login is given the suffix, which no person's login
        can hold, so that the workflow token's own edit is read as its own."""
        if not comment.node_id:
            raise GitHubError("GitHub API: the comment's listing gave no node id to ask after")

        def ask() -> str | None:
            _, answer = self._gh.requester.graphql_query(EDITOR_QUERY, {"id": comment.node_id})
            node = dig(answer, "data", "node")
            if not isinstance(node, dict):
                named = printable(repr(answer))[:500]
                raise GitHubError(f"GitHub API: GraphQL `node` gave no comment: {named}")
            login = dig(node, "editor", "login")
            if not isinstance(login, str) or not login:
                return None
            if dig(node, "editor", "__typename") == "Bot" and not login.endswith("[bot]"):
                return f"{login}[bot]"
            return login

        return _call(f"ask who last edited comment {comment.id}", ask)

    def is_own(self, login: str) -> bool:
        """Whether `login` is the account the token writes as (logins ignore case)."""
        return same_login(login, self.identity())

    def upsert_comment(self, number: int, marker: str, body: str) -> str:
        """Edit evalward's comment in place, or create it; return its URL.

        When the token's account cannot be learned, no comment is evalward's for certain, so
        a new one is posted; its author then is the account, for the rest of this run."""
        try:
            login: str | None = self.identity()
        except GitHubError:
            login = None
        existing = self._find(number, marker, login) if login else None

        def upsert() -> str:
            if existing is not None:
                comment = self._pull(number).get_issue_comment(existing.id)
                comment.edit(body)
                return str(comment.html_url)
            created = self._pull(number).create_issue_comment(body)
            self._identity = self._identity or created.user.login
            return str(created.html_url)

        return _call(f"post the comment on pull request #{number}", upsert)

    def review_comments(self, number: int, marker: str) -> list[ReviewComment]:
        """evalward's own comments in the pull request's reviews: those that start with
        `marker` and were written by this token's account (`identity`), as `find_comment`
        takes the sticky comment.

        One listing of the pull request's review comments, each naming its review, rather
        than the reviews and then one listing per review."""
        login = self.identity()

        def read() -> list[ReviewComment]:
            found = []
            for comment in self._pull(number).get_review_comments():
                author = str(comment.user.login or "") if comment.user else ""
                body = comment.body or ""
                if same_login(author, login) and body.startswith(marker):
                    found.append(
                        ReviewComment(
                            id=comment.id,
                            path=str(comment.path),
                            line=comment.line,
                            start_line=comment.start_line,
                            side=str(comment.side or "RIGHT"),
                            body=body,
                        )
                    )
            return found

        return _call(f"read the review comments of pull request #{number}", read)

    def create_review(
        self, number: int, commit: str, body: str, comments: Sequence[LineComment]
    ) -> str:
        """One review of `commit` that comments (`event: COMMENT`: it neither approves nor
        requests changes) with `comments` on the head's side of the diff; its URL. GitHub
        refuses the whole review (422) when one comment's lines are outside the diff."""

        def draft(comment: LineComment) -> DraftComment:
            drafted: DraftComment = {
                "path": comment.path,
                "line": comment.line,
                "side": "RIGHT",
                "body": comment.body,
            }
            if comment.start_line is not None and comment.start_line < comment.line:
                drafted["start_line"] = comment.start_line
                drafted["start_side"] = "RIGHT"
            return drafted

        def create() -> str:
            review = self._pull(number).create_review(
                commit=self._repo.get_commit(commit),  # lazy: names the commit, reads nothing
                body=body,
                event="COMMENT",
                comments=[draft(comment) for comment in comments],
            )
            return str(review.html_url)

        return _call(f"post the review on pull request #{number}", create)

    def edit_review_comment(self, number: int, comment_id: int, body: str) -> None:
        """Replace the body of a review comment (`PATCH /pulls/comments/{comment_id}`)."""
        _call(
            f"edit review comment {comment_id} on pull request #{number}",
            lambda: self._pull(number).get_review_comment(comment_id).edit(body),
        )

    def report_check(self, check: CheckReport) -> str:
        """A completed check run with annotations, and a commit status linking to the run;
        its URL. A GitHubError names each that failed."""

        def create() -> str:
            annotations = [
                {
                    "path": a.path,
                    "start_line": a.line,
                    "end_line": a.line,
                    "annotation_level": a.level,
                    "title": _within(a.title, TITLE_BYTES),
                    "message": _within(a.message, ANNOTATION_BYTES),
                }
                for a in check.annotations[:MAX_ANNOTATIONS]
            ]
            output: dict[str, Any] = {
                "title": _within(check.title, TITLE_BYTES),
                "summary": _within(check.summary, SUMMARY_BYTES),
                "annotations": annotations,
            }
            extra: dict[str, Any] = {"details_url": check.details_url} if check.details_url else {}
            run = self._repo.create_check_run(
                name=check.name,
                head_sha=check.head_sha,
                status="completed",
                conclusion=check.conclusion,
                output=output,
                **extra,
            )
            return str(run.html_url)

        def set_status() -> None:
            passing = check.conclusion in ("success", "neutral", "skipped")
            state = "success" if passing else "failure"
            status_extra: dict[str, Any] = (
                {"target_url": check.details_url} if check.details_url else {}
            )
            self._repo.get_commit(check.head_sha).create_status(
                state=state,
                description=check.title[:140],
                context=check.name,
                **status_extra,
            )

        # each is tried whatever became of the other: a token may hold `statuses: write`
        # without `checks: write`, and branch protection may require either
        failures: list[GitHubError] = []
        url = ""
        try:
            url = _call(f"create the check run on {check.head_sha[:12]}", create)
        except GitHubError as exc:
            failures.append(exc)
        try:
            _call(f"set the commit status on {check.head_sha[:12]}", set_status)
        except GitHubError as exc:
            failures.append(exc)
        if failures:
            raise GitHubError(" ".join(map(str, failures)), status=failures[0].status)
        return url


def _within(text: str, limit: int) -> str:
    """`text` as GitHub takes it in a field of at most `limit` bytes: UTF-8 it can hold (a lone
    surrogate U+FFFD), cut after the last whole character that fits."""
    return utf8.cut(utf8.writable(text), limit)


def _unreadable(what: str, why: str) -> GitHubError:
    return GitHubError(
        f"GitHub API: could not {what}: its answer is not what GitHub's API documents ({why}); "
        "a proxy between the runner and GITHUB_API_URL can answer so."
    )


def _hint(exc: GithubException, message: str) -> str:
    """What to do about a refusal, as GitHub's REST API documents its answers: wait out the
    primary rate limit (exhausted: `x-ratelimit-remaining: 0`, or a message that says so) or
    the secondary one (a 403 or 429 that says so or carries `retry-after`), or give the
    token the permissions it lacks."""
    headers = exc.headers or {}
    retry_after = str(headers.get("retry-after") or "")
    primary = str(headers.get("x-ratelimit-remaining")) == "0"
    if primary or message.casefold().startswith("api rate limit exceeded"):
        return " GitHub's API rate limit is exhausted for this token; retry later."
    secondary = "secondary rate limit" in message.casefold()
    if exc.status == 429 or (exc.status == 403 and (secondary or retry_after)):
        seconds = int(retry_after) if re.fullmatch(r"[0-9]{1,6}", retry_after) else 0
        after = f", in {seconds} seconds or more" if seconds else ""
        return (
            " GitHub's secondary rate limit refused it (too many requests too fast, from "
            f"this token or this runner); retry later{after}."
        )
    if exc.status in (401, 403):
        return (
            " Check the token's permissions: the workflow needs "
            "`permissions: pull-requests: write` and `issues: read` (plus `checks: write` "
            "and `statuses: write` with `check-run: true`)."
        )
    return ""


def _call(what: str, operation: Callable[[], T]) -> T:
    # lazy: loaded with the client (`GitHubClient.__init__`), before any operation
    from github import BadAttributeException, GithubException

    try:
        return operation()
    except GithubException as exc:
        message = ""
        if isinstance(exc.data, dict):
            message = str(exc.data.get("message", ""))
            # a refused review says why only here: "Unprocessable Entity" and, in `errors`,
            # "Line could not be resolved"
            errors = exc.data.get("errors")
            if isinstance(errors, list) and errors:
                named = [
                    str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errors
                ]
                message = f"{message}: {'; '.join(named)}"
        answer = f"HTTP {exc.status} {cap_chars(printable(message), 500)}".rstrip()
        said = answer if answer.endswith(".") else f"{answer}."
        raise GitHubError(
            f"GitHub API: could not {what}: {said}" + _hint(exc, message),
            status=exc.status,
            answer=answer,
        ) from None
    except OSError as exc:
        raise GitHubError(f"GitHub API: could not {what}: {exc}") from None
    except BadAttributeException as exc:
        # a field GitHub documents as an object or a date (a label, `created_at`), answered
        # with another shape: PyGithub's own exception for it, not a GithubException
        got = printable(repr(exc.actual_value))[:200]
        raise _unreadable(what, f"a field of another type: {got}") from None
    except (AssertionError, AttributeError, KeyError, TypeError, ValueError) as exc:
        # PyGithub reading an answer of another shape than GitHub documents (an HTML page
        # with status 200, a list for an object): GitHub's failure, not evalward's
        raise _unreadable(what, f"{type(exc).__name__}: {printable(str(exc))[:200]}") from None
