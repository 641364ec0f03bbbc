"""The one place that talks to the GitHub REST API (through PyGithub)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from github import Auth, Github, GithubException
from github.PullRequest import PullRequest

from evalward.errors import GitHubError
from evalward.gate import Bypass

T = TypeVar("T")


@dataclass(frozen=True)
class PullInfo:
    number: int
    labels: list[str]
    head_sha: str
    base_sha: str


class GitHubPort(Protocol):
    """What the pipeline needs from GitHub; tests hand in a client bound to a local server."""

    def pull_request(self, number: int) -> PullInfo: ...

    def label_applier(self, number: int, label: str) -> Bypass: ...

    def upsert_comment(self, number: int, marker: str, body: str) -> str: ...


class GitHubClient:
    """GitHubPort over PyGithub, bound to one repository."""

    def __init__(self, api_url: str, token: str, repository: str, timeout: float = 30) -> None:
        self._gh = Github(
            auth=Auth.Token(token), base_url=api_url.rstrip("/"), timeout=int(timeout), retry=2
        )
        self._repo = self._gh.get_repo(repository, lazy=True)
        self._pulls: dict[int, PullRequest] = {}

    def _pull(self, number: int) -> PullRequest:
        if number not in self._pulls:
            self._pulls[number] = _call(
                f"read pull request #{number}", lambda: self._repo.get_pull(number)
            )
        return self._pulls[number]

    def pull_request(self, number: int) -> PullInfo:
        pull = self._pull(number)
        return PullInfo(
            number=number,
            labels=[label.name for label in pull.labels],
            head_sha=pull.head.sha,
            base_sha=pull.base.sha,
        )

    def label_applier(self, number: int, label: str) -> Bypass:
        """Who applied `label` last, from the issue events API."""

        def latest() -> Bypass:
            found = Bypass(label=label, applied_by=None)
            for event in self._pull(number).get_issue_events():
                if event.event == "labeled" and event.label and event.label.name == label:
                    found = Bypass(
                        label=label,
                        applied_by=event.actor.login if event.actor else None,
                        applied_at=event.created_at.isoformat() if event.created_at else None,
                    )
            return found

        return _call(f"read the events of pull request #{number}", latest)

    def upsert_comment(self, number: int, marker: str, body: str) -> str:
        """Edit the comment that starts with `marker`, or create it; return its URL."""

        def upsert() -> str:
            pull = self._pull(number)
            for comment in pull.get_issue_comments():
                if comment.body and comment.body.startswith(marker):
                    comment.edit(body)
                    return str(comment.html_url)
            return str(pull.create_issue_comment(body).html_url)

        return _call(f"post the comment on pull request #{number}", upsert)


def _call(what: str, operation: Callable[[], T]) -> T:
    try:
        return operation()
    except GithubException as exc:
        message = ""
        if isinstance(exc.data, dict):
            message = str(exc.data.get("message", ""))
        hint = ""
        if exc.status in (401, 403):
            hint = (
                " Check the token's permissions: the workflow needs "
                "`permissions: pull-requests: write` (and `issues: read`)."
            )
        raise GitHubError(
            f"GitHub API: could not {what}: HTTP {exc.status} {message}".rstrip() + "." + hint
        ) from None
    except OSError as exc:
        raise GitHubError(f"GitHub API: could not {what}: {exc}") from None
