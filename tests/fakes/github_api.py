"""A fake of the GitHub REST API endpoints evalward uses, holding its state in memory."""

from __future__ import annotations

import re
import threading
import urllib.parse
from dataclasses import dataclass, field, replace
from typing import Any

import graphql

from fakes.github_contract import GRAPHQL_PATH, check, check_answer, graphql_schema
from fakes.http import LoopbackServer, Request, Response

TIMESTAMP = "2026-11-20T10:00:00Z"


@dataclass
class FakePull:
    number: int
    head_sha: str
    base_sha: str
    head_ref: str = "feature"
    base_ref: str = "main"
    labels: list[str] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    """GitHub's diff entries (`filename`, `patch`, …): when given, a review comment on a
    line outside them is refused, as GitHub refuses it."""
    author: str = "octocat"
    head_repo: str = ""
    """The repository the head branch lives in; empty means the base repository."""


@dataclass
class FakeArtifact:
    """An artifact a workflow run uploaded: the zip `archive`, and what GitHub says of the
    run (its event, its branch or tag, its commit, the repository its head is in)."""

    name: str
    archive: bytes
    event: str = "push"
    head_branch: str = "main"
    """The branch the run ran on; a run a tag's push started has the tag's name here, as
    GitHub says of it, with `event: push`."""
    head_sha: str = "a" * 40
    """The commit the run ran on (a push's `after`)."""
    head_repo: str = ""
    """The repository the run's head is in; empty means this repository."""
    expired: bool = False
    created_at: str = TIMESTAMP
    id: int = 0
    run_id: int = 0
    """The uploading run's id (`GITHUB_RUN_ID` in it); 0: a new one."""


WORKFLOW_BOT = "github-actions[bot]"


class FakeGitHub:
    """Serves one repository. Records every request; `fail` injects error responses.

    `login` is the account the token writes as: a `…[bot]` login is an installation token (the
    workflow's `GITHUB_TOKEN` is the `github-actions` app's), which `GET /user` refuses and
    GraphQL's `viewer` names; any other is a person's token, which `GET /user` answers. Every
    comment the token posts is written by that account, as on GitHub.
    """

    def __init__(
        self,
        repository: str = "acme/agents",
        token: str = "ghs_test_token_123",
        login: str = WORKFLOW_BOT,
    ) -> None:
        self.repository = repository
        self.token = token
        self.login = login
        self.pulls: dict[int, FakePull] = {}
        self.comments: dict[int, dict[str, Any]] = {}
        self.events: dict[int, list[dict[str, Any]]] = {}
        self.permissions: dict[str, str] = {}
        self.reviews: dict[int, dict[str, Any]] = {}
        self.review_comments: dict[int, dict[str, Any]] = {}
        self.branches: dict[str, str] = {}
        """Each branch's commit, as `GET /repos/{owner}/{repo}/branches/{branch}` answers it."""
        self.check_runs: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        self.artifacts: list[FakeArtifact] = []
        self.storage_requests: list[Request] = []
        """Requests to the artifacts' storage, a second server GitHub's API redirects to."""
        self._storage: LoopbackServer | None = None
        self.requests: list[Request] = []
        self.contract_violations: list[str] = []
        """Requests GitHub's OpenAPI description says GitHub would reject (answered 422)."""
        self.failures: list[tuple[str, re.Pattern[str], Response]] = []
        self.answer_delay = 0.0
        """Seconds every answer waits before it goes out (a slow API: requests a client
        made at once would arrive while an earlier one is unanswered)."""
        self._next_id = 1000
        self._lock = threading.Lock()
        self.server = LoopbackServer(self._handle)

    @property
    def url(self) -> str:
        return self.server.url

    def close(self) -> None:
        self.server.close()
        if self._storage is not None:
            self._storage.close()

    # --- state set-up ---------------------------------------------------------------------

    def add_pull(self, pull: FakePull) -> FakePull:
        self.pulls[pull.number] = pull
        self.events.setdefault(pull.number, [])
        return pull

    def add_label(self, number: int, label: str, actor: str, at: str = TIMESTAMP) -> None:
        if label not in self.pulls[number].labels:
            self.pulls[number].labels.append(label)
        self.events[number].append(
            {
                "id": self._new_id(),
                "event": "labeled",
                "actor": self._user(actor),
                "label": {"name": label, "color": "ff0000"},
                "created_at": at,
                "url": f"{self._repo_url()}/issues/events/{self._next_id}",
            }
        )

    def remove_label(self, number: int, label: str, actor: str, at: str = TIMESTAMP) -> None:
        """`actor` takes `label` off the pull request: GitHub records an `unlabeled` event."""
        if label in self.pulls[number].labels:
            self.pulls[number].labels.remove(label)
        self.events[number].append(
            {
                "id": self._new_id(),
                "event": "unlabeled",
                "actor": self._user(actor),
                "label": {"name": label, "color": "ff0000"},
                "created_at": at,
                "url": f"{self._repo_url()}/issues/events/{self._next_id}",
            }
        )

    def edit_comment(self, comment_id: int, body: str, editor: str) -> None:
        """Someone with write access edits a comment, whoever wrote it (its author stays)."""
        self.comments[comment_id]["body"] = body
        self.comments[comment_id]["_editor"] = editor

    def add_comment(self, number: int, body: str, author: str) -> dict[str, Any]:
        """A comment written by someone else (a person, or another bot)."""
        comment = self._create_comment(number, body)
        self.comments[comment["id"]]["user"] = self._user(author)
        return comment

    def add_review_comment(
        self, number: int, path: str, line: int, body: str, author: str
    ) -> dict[str, Any]:
        """A review comment written by someone else, in a review of its own."""
        review = self._create_review(number, {"event": "COMMENT", "body": ""}, author)
        return self._create_review_comment(
            number, review, {"path": path, "line": line, "body": body}, author
        )

    def add_artifact(self, artifact: FakeArtifact) -> FakeArtifact:
        """Upload `artifact` (by a run of its own); its archive is served by the storage
        server, at `localhost` where the API is at 127.0.0.1: another host."""
        if self._storage is None:
            self._storage = LoopbackServer(self._stored)
        artifact.id = self._new_id()
        artifact.run_id = artifact.run_id or self._new_id()  # a run's own id, where given
        self.artifacts.append(artifact)
        return artifact

    def reviews_on(self, number: int) -> list[dict[str, Any]]:
        return [r for r in self.reviews.values() if r["_pull"] == number]

    def review_comments_on(self, number: int) -> list[dict[str, Any]]:
        return [c for c in self.review_comments.values() if c["_pull"] == number]

    def fail(
        self,
        method: str,
        path_pattern: str,
        status: int,
        message: str = "boom",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.answer(method, path_pattern, Response(status, {"message": message}, headers or {}))

    def answer(self, method: str, path_pattern: str, response: Response) -> None:
        """Answer every `method` request whose path matches with `response` (a failure)."""
        self.failures.append((method, re.compile(path_pattern), response))

    def comments_on(self, number: int) -> list[dict[str, Any]]:
        return [c for c in self.comments.values() if c["_issue"] == number]

    # --- routing --------------------------------------------------------------------------

    def _handle(self, request: Request) -> Response:
        response = self._answer(request)
        if self.answer_delay and not response.delay:
            response = replace(response, delay=self.answer_delay)
        return response

    def _answer(self, request: Request) -> Response:
        with self._lock:
            self.requests.append(request)
            problems = check(request.method, request.path, request.query, request.body)
            if problems:
                self.contract_violations.extend(problems)
                return Response(422, {"message": "; ".join(problems)})
            auth = request.headers.get("authorization", "")
            if auth not in (f"token {self.token}", f"Bearer {self.token}"):
                return Response(401, {"message": "Bad credentials"})
            for method, pattern, response in self.failures:
                if method == request.method and pattern.search(request.path):
                    return response
            answer = self._route(request)
            # the fake's own answers are held to the schemas GitHub documents for them
            problems = check_answer(request.method, request.path, answer.status, answer.body)
            self.contract_violations.extend(problems)
            return answer

    def _route(self, request: Request) -> Response:
        prefix = f"/repos/{self.repository}"
        path = request.path
        if path == "/user" and request.method == "GET":
            return self._authenticated_user()
        if path == GRAPHQL_PATH:
            return self._graphql(request)
        if not path.startswith(prefix):
            return Response(404, {"message": "Not Found"})
        rest = path[len(prefix) :]
        method = request.method
        if rest == "" and method == "GET":
            return Response(200, self._repo_json())
        if m := re.fullmatch(r"/pulls/(\d+)", rest):
            pull = self.pulls.get(int(m[1]))
            return Response(200, self._pull_json(pull)) if pull else _not_found()
        if m := re.fullmatch(r"/pulls/(\d+)/files", rest):
            pull = self.pulls.get(int(m[1]))
            return self._page(request, pull.files) if pull else _not_found()
        if m := re.fullmatch(r"/issues/(\d+)/events", rest):
            return self._page(request, self.events.get(int(m[1]), []))
        if (m := re.fullmatch(r"/issues/(\d+)/labels", rest)) and method == "GET":
            pull = self.pulls.get(int(m[1]))
            return self._page(request, self._labels_json(pull)) if pull else _not_found()
        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(m[1])
            if number not in self.pulls:
                return _not_found()
            if method == "GET":
                return self._page(request, [self._public(c) for c in self.comments_on(number)])
            if method == "POST":
                return Response(201, self._create_comment(number, request.json()["body"]))
        if m := re.fullmatch(r"/(issues|pulls)/comments/(\d+)", rest):
            # an issue comment (the sticky comment) or a review comment on lines
            store = self.comments if m[1] == "issues" else self.review_comments
            comment = store.get(int(m[2]))
            if comment is None:
                return _not_found()
            if method == "PATCH":
                comment["body"] = request.json()["body"]
                comment["updated_at"] = TIMESTAMP
                comment["_editor"] = self.login  # the token's account, as GraphQL's `editor`
                return Response(200, self._public(comment))
            if method == "GET":
                return Response(200, self._public(comment))
        if m := re.fullmatch(r"/pulls/(\d+)/comments", rest):
            number = int(m[1])
            if number not in self.pulls:
                return _not_found()
            if method == "GET":
                listed = self.review_comments_on(number)
                return self._page(request, [self._public(c) for c in listed])
        if (m := re.fullmatch(r"/pulls/(\d+)/reviews", rest)) and method == "POST":
            pull = self.pulls.get(int(m[1]))
            return self._review(pull, request.json()) if pull else _not_found()
        if (m := re.fullmatch(r"/branches/([^/]+)", rest)) and method == "GET":
            name = urllib.parse.unquote(m[1])
            tip = self.branches.get(name)
            return Response(200, self._branch_json(name, tip)) if tip else _not_found()
        if rest == "/check-runs" and method == "POST":
            run = {"id": self._new_id(), **request.json()}
            run["html_url"] = f"https://github.example/{self.repository}/runs/{run['id']}"
            self.check_runs.append(run)
            return Response(201, run)
        if m := re.fullmatch(r"/commits/([0-9a-f]{40})", rest):
            return Response(200, {"sha": m[1], "url": f"{self._repo_url()}/commits/{m[1]}"})
        if (m := re.fullmatch(r"/statuses/([0-9a-f]{40})", rest)) and method == "POST":
            status = {"id": self._new_id(), "sha": m[1], **request.json()}
            self.statuses.append(status)
            return Response(201, status)
        if rest == "/actions/artifacts" and method == "GET":
            return self._artifacts(request)
        if (m := re.fullmatch(r"/actions/runs/(\d+)", rest)) and method == "GET":
            run = next((a for a in self.artifacts if a.run_id == int(m[1])), None)
            return Response(200, self._run_json(run)) if run else _not_found()
        if (m := re.fullmatch(r"/actions/artifacts/(\d+)/zip", rest)) and method == "GET":
            found = next((a for a in self.artifacts if a.id == int(m[1])), None)
            if found is None:
                return _not_found()
            if found.expired:
                return Response(410, {"message": "Artifact has expired"})
            assert self._storage is not None
            port = self._storage.url.rsplit(":", 1)[1]
            signed = f"http://localhost:{port}/blobs/{found.id}.zip?sig=signed"
            return Response(302, None, {"location": signed})
        if m := re.fullmatch(r"/collaborators/([^/]+)/permission", rest):
            permission = self.permissions.get(m[1], "read")
            return Response(
                200,
                {"permission": permission, "role_name": permission, "user": self._user(m[1])},
            )
        return _not_found()

    def _stored(self, request: Request) -> Response:
        """The storage host: the archive to whoever has the signed URL, with no token."""
        with self._lock:
            self.storage_requests.append(request)
        m = re.fullmatch(r"/blobs/(\d+)\.zip", request.path)
        found = next((a for a in self.artifacts if m and a.id == int(m[1])), None)
        if found is None or request.query.get("sig") != ["signed"]:
            return Response(403, raw=b"<Error>AuthenticationFailed</Error>")
        return Response(200, raw=found.archive, headers={"content-type": "application/zip"})

    def _artifacts(self, request: Request) -> Response:
        """`GET /repos/{owner}/{repo}/actions/artifacts`, newest first, `name` exact, a page
        of `per_page` (30 unless asked, at most 100) at a time."""
        name = request.query.get("name", [None])[0]
        listed = [a for a in reversed(self.artifacts) if name is None or a.name == name]
        per_page = min(int(request.query.get("per_page", ["30"])[0]), 100)
        page = int(request.query.get("page", ["1"])[0])
        shown = listed[(page - 1) * per_page : page * per_page]
        return Response(
            200,
            {"total_count": len(listed), "artifacts": [self._artifact_json(a) for a in shown]},
        )

    def _artifact_json(self, artifact: FakeArtifact) -> dict[str, Any]:
        url = f"{self._repo_url()}/actions/artifacts/{artifact.id}"
        expires = "2026-11-19T10:00:00Z" if artifact.expired else "2027-02-18T10:00:00Z"
        return {
            "id": artifact.id,
            "node_id": f"MDg6QXJ0aWZhY3Q{artifact.id}",
            "name": artifact.name,
            "size_in_bytes": len(artifact.archive),
            "url": url,
            "archive_download_url": f"{url}/zip",
            "expired": artifact.expired,
            "created_at": artifact.created_at,
            "expires_at": expires,
            "updated_at": artifact.created_at,
            "digest": "sha256:" + "0" * 64,
            "workflow_run": {
                "id": artifact.run_id,
                "repository_id": 1,
                "head_repository_id": 1 if not artifact.head_repo else 2,
                "head_branch": artifact.head_branch,
                "head_sha": artifact.head_sha,
            },
        }

    def _run_json(self, artifact: FakeArtifact) -> dict[str, Any]:
        """GitHub's `workflow-run` for the run that uploaded `artifact`."""
        url = f"{self._repo_url()}/actions/runs/{artifact.run_id}"
        head = artifact.head_repo or self.repository
        return {
            "id": artifact.run_id,
            "name": "evals",
            "node_id": f"WFR_{artifact.run_id}",
            "head_branch": artifact.head_branch,
            "head_sha": artifact.head_sha,
            "path": ".github/workflows/evals.yml",
            "display_title": "evals",
            "run_number": 1,
            "run_attempt": 1,
            "event": artifact.event,
            "status": "completed",
            "conclusion": "success",
            "workflow_id": 1,
            "url": url,
            "html_url": f"https://github.example/{self.repository}/actions/runs/{artifact.run_id}",
            "pull_requests": [],
            "created_at": artifact.created_at,
            "updated_at": artifact.created_at,
            "actor": self._user("octocat"),
            "triggering_actor": self._user("octocat"),
            "run_started_at": artifact.created_at,
            "jobs_url": f"{url}/jobs",
            "logs_url": f"{url}/logs",
            "check_suite_url": f"{self._repo_url()}/check-suites/1",
            "artifacts_url": f"{url}/artifacts",
            "cancel_url": f"{url}/cancel",
            "rerun_url": f"{url}/rerun",
            "previous_attempt_url": None,
            "workflow_url": f"{self._repo_url()}/actions/workflows/1",
            "head_commit": {
                "id": artifact.head_sha,
                "tree_id": "b" * 40,
                "message": "agents and evals",
                "timestamp": artifact.created_at,
                "author": {"name": "octocat", "email": "octocat@example.com"},
                "committer": {"name": "octocat", "email": "octocat@example.com"},
            },
            "repository": self._minimal_repo(self.repository, 1),
            "head_repository": self._minimal_repo(head, 1 if head == self.repository else 2),
        }

    def _minimal_repo(self, full_name: str, number: int) -> dict[str, Any]:
        """GitHub's `minimal-repository`, with every field its schema requires."""
        owner, name = full_name.split("/")
        api = f"{self.url}/repos/{full_name}"
        urls = {
            f"{key}_url": f"{api}/{key}"
            for key in (
                "archive",
                "assignees",
                "blobs",
                "branches",
                "collaborators",
                "comments",
                "commits",
                "compare",
                "contents",
                "contributors",
                "deployments",
                "downloads",
                "events",
                "forks",
                "git_commits",
                "git_refs",
                "git_tags",
                "issue_comment",
                "issue_events",
                "issues",
                "keys",
                "labels",
                "languages",
                "merges",
                "milestones",
                "notifications",
                "pulls",
                "releases",
                "stargazers",
                "statuses",
                "subscribers",
                "subscription",
                "tags",
                "teams",
                "trees",
                "hooks",
            )
        }
        return {
            "id": number,
            "node_id": f"R_{number}",
            "name": name,
            "full_name": full_name,
            "owner": self._user(owner),
            "private": False,
            "html_url": f"https://github.example/{full_name}",
            "description": None,
            "fork": number != 1,
            "url": api,
            **urls,
        }

    def _branch_json(self, name: str, tip: str) -> dict[str, Any]:
        url = f"{self._repo_url()}/branches/{urllib.parse.quote(name, safe='')}"
        return {
            "name": name,
            "commit": {"sha": tip, "url": f"{self._repo_url()}/commits/{tip}"},
            "_links": {"self": url, "html": f"https://github.example/{self.repository}"},
            "protected": True,
            "protection_url": f"{url}/protection",
        }

    def _review(self, pull: FakePull, body: dict[str, Any]) -> Response:
        """A review with its comments, or 422 for the first comment GitHub would refuse (the
        whole review is refused then: nothing is created)."""
        commit = body.get("commit_id", pull.head_sha)
        if commit != pull.head_sha:
            # GitHub takes any commit of the pull request; the fake knows only its head
            return _unprocessable(f"No commit found for SHA: {commit}")
        comments = body.get("comments", [])
        if not comments and not body.get("body") and body.get("event") != "APPROVE":
            return _unprocessable("Review needs a body or comments")
        for comment in comments:
            refused = _refused_line(pull, comment)
            if refused:
                return _unprocessable(refused)
        review = self._create_review(pull.number, body, self.login)
        for comment in comments:
            self._create_review_comment(pull.number, review, comment, self.login)
        return Response(200, self._public(review))

    def _create_review(self, number: int, body: dict[str, Any], author: str) -> dict[str, Any]:
        review_id = self._new_id()
        html = f"https://github.example/{self.repository}/pull/{number}"
        event = body.get("event")
        review = {
            "_pull": number,
            "id": review_id,
            "node_id": f"PRR_{review_id}",
            "user": self._user(author),
            "body": body.get("body", ""),
            "state": REVIEW_STATES.get(event, "PENDING") if isinstance(event, str) else "PENDING",
            "html_url": f"{html}#pullrequestreview-{review_id}",
            "pull_request_url": f"{self._repo_url()}/pulls/{number}",
            "_links": {
                "html": {"href": f"{html}#pullrequestreview-{review_id}"},
                "pull_request": {"href": f"{self._repo_url()}/pulls/{number}"},
            },
            "submitted_at": TIMESTAMP,
            "commit_id": body.get("commit_id", self.pulls[number].head_sha),
            "author_association": "NONE",
        }
        self.reviews[review_id] = review
        return review

    def _create_review_comment(
        self, number: int, review: dict[str, Any], comment: dict[str, Any], author: str
    ) -> dict[str, Any]:
        comment_id = self._new_id()
        url = f"{self._repo_url()}/pulls/comments/{comment_id}"
        html = f"https://github.example/{self.repository}/pull/{number}#discussion_r{comment_id}"
        pull_url = f"{self._repo_url()}/pulls/{number}"
        start = comment.get("start_line")
        created = {
            "_pull": number,
            "url": url,
            "id": comment_id,
            "node_id": f"PRRC_{comment_id}",
            "pull_request_review_id": review["id"],
            "diff_hunk": _hunk_text(self.pulls[number], comment["path"], comment["line"]),
            "path": comment["path"],
            "commit_id": review["commit_id"],
            "original_commit_id": review["commit_id"],
            "user": self._user(author),
            "body": comment["body"],
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
            "html_url": html,
            "pull_request_url": pull_url,
            "author_association": "NONE",
            "_links": {
                "self": {"href": url},
                "html": {"href": html},
                "pull_request": {"href": pull_url},
            },
            "start_line": start,
            "original_start_line": start,
            "start_side": comment.get("start_side", "RIGHT") if start is not None else None,
            "line": comment["line"],
            "original_line": comment["line"],
            "side": comment.get("side", "RIGHT"),
            "subject_type": "line",
        }
        self.review_comments[comment_id] = created
        return self._public(created)

    def _authenticated_user(self) -> Response:
        if self.login.endswith("[bot]"):
            return Response(
                403,
                {
                    "message": "Resource not accessible by integration",
                    "documentation_url": "https://docs.github.com/rest/users/users"
                    "#get-the-authenticated-user",
                    "status": "403",
                },
            )
        return Response(200, {**self._user(self.login), "name": None, "site_admin": False})

    def _graphql(self, request: Request) -> Response:
        """Runs the query (already checked against GitHub's schema) over the token's account."""
        user = self._user(self.login)
        viewer = {"login": self.login, "databaseId": user["id"], "id": f"U_{user['id']}"}
        body = request.json()
        result = graphql.graphql_sync(
            graphql_schema(),
            body["query"],
            root_value={"viewer": viewer, "node": lambda _info, id: self._node(id)},
            variable_values=body.get("variables"),
        )
        answer: dict[str, Any] = {"data": result.data}
        if result.errors:
            answer["errors"] = [{"message": e.message} for e in result.errors]
        return Response(200, answer)

    def _page(self, request: Request, items: list[dict[str, Any]]) -> Response:
        per_page = int(request.query.get("per_page", ["30"])[0])
        page = int(request.query.get("page", ["1"])[0])
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            url = f"{self.url}{request.path}?per_page={per_page}&page={page + 1}"
            headers["link"] = f'<{url}>; rel="next"'
        return Response(200, chunk, headers)

    # --- JSON shapes ----------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _repo_url(self) -> str:
        return f"{self.url}/repos/{self.repository}"

    def _user(self, login: str) -> dict[str, Any]:
        """GitHub's `simple-user`, with every field its schema requires."""
        kind = "Bot" if login.endswith("[bot]") else "User"
        api = f"{self.url}/users/{login}"
        return {
            "login": login,
            "id": sum(map(ord, login)),
            "node_id": f"U_{sum(map(ord, login))}",
            "type": kind,
            "site_admin": False,
            "avatar_url": f"https://avatars.github.example/{login}",
            "gravatar_id": "",
            "url": api,
            "html_url": f"https://github.example/{login}",
            "events_url": f"{api}/events{{/privacy}}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "organizations_url": f"{api}/orgs",
            "received_events_url": f"{api}/received_events",
            "repos_url": f"{api}/repos",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
        }

    def _repo_json(self) -> dict[str, Any]:
        owner, name = self.repository.split("/")
        return {
            "id": 1,
            "name": name,
            "full_name": self.repository,
            "owner": self._user(owner),
            "url": self._repo_url(),
            "default_branch": "main",
        }

    def _pull_json(self, pull: FakePull) -> dict[str, Any]:
        return {
            "id": pull.number * 10,
            "number": pull.number,
            "state": "open",
            "title": "Change the agent",
            "url": f"{self._repo_url()}/pulls/{pull.number}",
            "issue_url": f"{self._repo_url()}/issues/{pull.number}",
            "html_url": f"https://github.example/{self.repository}/pull/{pull.number}",
            "user": self._user(pull.author),
            "labels": self._labels_json(pull),
            "head": {
                "sha": pull.head_sha,
                "ref": pull.head_ref,
                "repo": {"full_name": pull.head_repo or self.repository},
            },
            "base": {
                "sha": pull.base_sha,
                "ref": pull.base_ref,
                "repo": {"full_name": self.repository},
            },
        }

    def _labels_json(self, pull: FakePull) -> list[dict[str, Any]]:
        """GitHub's `label` for each of the pull request's labels, as it stands."""
        return [
            {
                "id": sum(map(ord, name)),
                "node_id": f"LA_{sum(map(ord, name))}",
                "url": f"{self._repo_url()}/labels/{name}",
                "name": name,
                "description": None,
                "color": "ededed",
                "default": False,
            }
            for name in pull.labels
        ]

    def _create_comment(self, number: int, body: str) -> dict[str, Any]:
        comment_id = self._new_id()
        comment = {
            "_issue": number,
            "id": comment_id,
            "body": body,
            "url": f"{self._repo_url()}/issues/comments/{comment_id}",
            "html_url": f"https://github.example/{self.repository}/pull/{number}"
            f"#issuecomment-{comment_id}",
            "node_id": f"IC_{comment_id}",
            "user": self._user(self.login),
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
        }
        self.comments[comment_id] = comment
        return self._public(comment)

    @staticmethod
    def _public(comment: dict[str, Any]) -> dict[str, Any]:
        """As GitHub shows it: without the fake's own keys (`_issue`, `_pull`, `_editor`)."""
        return {k: v for k, v in comment.items() if k not in ("_issue", "_pull", "_editor")}

    def _node(self, node_id: str) -> dict[str, Any] | None:
        """GraphQL's `node`: an issue comment by its node id, with its last editor. GraphQL
        names a bot by its app's slug, without the `[bot]` REST and `viewer` give it
        (`github-actions` for the workflow token's edits)."""
        comment = next((c for c in self.comments.values() if c.get("node_id") == node_id), None)
        if comment is None:
            return None
        editor = comment.get("_editor")
        actor = None
        if editor and editor.endswith("[bot]"):
            actor = {"__typename": "Bot", "login": editor.removesuffix("[bot]")}
        elif editor:
            actor = {"__typename": "User", "login": editor}
        return {"__typename": "IssueComment", "id": node_id, "editor": actor}


REVIEW_STATES = {
    "COMMENT": "COMMENTED",
    "APPROVE": "APPROVED",
    "REQUEST_CHANGES": "CHANGES_REQUESTED",
}
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def _not_found() -> Response:
    return Response(404, {"message": "Not Found"})


def _unprocessable(error: str) -> Response:
    """GitHub's refusal of a review: a generic message, the reason in `errors`."""
    return Response(
        422,
        {
            "message": "Unprocessable Entity",
            "errors": [error],
            "documentation_url": "https://docs.github.com/rest/pulls/reviews"
            "#create-a-review-for-a-pull-request",
            "status": "422",
        },
    )


def _hunks(patch: str) -> list[tuple[str, dict[str, set[int]]]]:
    """Each hunk of a diff entry's patch: its text, and the lines a comment may sit on per
    side (RIGHT: the head's added and context lines; LEFT: the base's removed and context)."""
    hunks: list[tuple[list[str], dict[str, set[int]]]] = []
    old = new = 0
    for text in patch.splitlines():
        if m := _HUNK.match(text):
            old, new = int(m[1]), int(m[2])
            hunks.append(([text], {"LEFT": set(), "RIGHT": set()}))
            continue
        if not hunks or text.startswith("\\"):
            continue
        hunks[-1][0].append(text)
        lines = hunks[-1][1]
        if not text.startswith("+"):
            lines["LEFT"].add(old)
            old += 1
        if not text.startswith("-"):
            lines["RIGHT"].add(new)
            new += 1
    return [("\n".join(text), lines) for text, lines in hunks]


def _refused_line(pull: FakePull, comment: dict[str, Any]) -> str:
    """Why GitHub would refuse a review comment on these lines; empty when it would not."""
    line, start = comment.get("line"), comment.get("start_line")
    side = comment.get("side", "RIGHT")
    if line is None:
        return "line is required (the fake takes no `position`)"
    if side not in ("LEFT", "RIGHT") or comment.get("start_side", side) not in ("LEFT", "RIGHT"):
        return "pull_request_review_thread.diff_side is not included in the list"
    if line < 1 or (start is not None and start < 1):
        return "Line could not be resolved"
    if start is not None and start > line:
        return "pull_request_review_thread.start_line must precede the end line"
    if not pull.files:
        return ""  # the fake does not know the diff: any line is taken
    entry = next((f for f in pull.files if f.get("filename") == comment["path"]), None)
    if entry is None or not entry.get("patch"):
        return "Path could not be resolved"
    hunk = next((lines for _, lines in _hunks(entry["patch"]) if line in lines[side]), None)
    if hunk is None:
        return "Line could not be resolved"
    start_side = comment.get("start_side", side)
    if start is not None and start not in hunk[start_side]:
        return "pull_request_review_thread.start_line must be part of the same hunk as the line"
    return ""


def _hunk_text(pull: FakePull, path: str, line: int) -> str:
    """The hunk a comment sits in, as GitHub gives it (`diff_hunk`); empty when the fake
    does not know the diff."""
    entry = next((f for f in pull.files if f.get("filename") == path), {})
    for text, lines in _hunks(entry.get("patch") or ""):
        if line in lines["RIGHT"] or line in lines["LEFT"]:
            return text
    return ""
