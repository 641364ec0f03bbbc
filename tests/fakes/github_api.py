"""A fake of the GitHub REST API endpoints evalward uses, holding its state in memory."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field, replace
from typing import Any

import graphql

from fakes.github_contract import GRAPHQL_PATH, check, graphql_schema
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
    author: str = "octocat"
    head_repo: str = ""
    """The repository the head branch lives in; empty means the base repository."""


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
        self.check_runs: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
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

    def add_comment(self, number: int, body: str, author: str) -> dict[str, Any]:
        """A comment written by someone else (a person, or another bot)."""
        comment = self._create_comment(number, body)
        self.comments[comment["id"]]["user"] = self._user(author)
        return comment

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
            return self._route(request)

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
        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(m[1])
            if number not in self.pulls:
                return _not_found()
            if method == "GET":
                return self._page(request, [self._public(c) for c in self.comments_on(number)])
            if method == "POST":
                return Response(201, self._create_comment(number, request.json()["body"]))
        if m := re.fullmatch(r"/issues/comments/(\d+)", rest):
            comment = self.comments.get(int(m[1]))
            if comment is None:
                return _not_found()
            if method == "PATCH":
                comment["body"] = request.json()["body"]
                comment["updated_at"] = TIMESTAMP
                return Response(200, self._public(comment))
            if method == "GET":
                return Response(200, self._public(comment))
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
        if m := re.fullmatch(r"/collaborators/([^/]+)/permission", rest):
            permission = self.permissions.get(m[1], "read")
            return Response(
                200,
                {"permission": permission, "role_name": permission, "user": self._user(m[1])},
            )
        return _not_found()

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
            root_value={"viewer": viewer},
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
        kind = "Bot" if login.endswith("[bot]") else "User"
        return {"login": login, "id": sum(map(ord, login)), "type": kind}

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
            "labels": [{"name": name, "color": "ededed"} for name in pull.labels],
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

    def _create_comment(self, number: int, body: str) -> dict[str, Any]:
        comment_id = self._new_id()
        comment = {
            "_issue": number,
            "id": comment_id,
            "body": body,
            "url": f"{self._repo_url()}/issues/comments/{comment_id}",
            "html_url": f"https://github.example/{self.repository}/pull/{number}"
            f"#issuecomment-{comment_id}",
            "user": self._user(self.login),
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
        }
        self.comments[comment_id] = comment
        return self._public(comment)

    @staticmethod
    def _public(comment: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in comment.items() if not k.startswith("_")}


def _not_found() -> Response:
    return Response(404, {"message": "Not Found"})
