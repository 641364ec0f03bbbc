"""Every answer GitHub's API can give on every request the action makes, through the action's
entry point: never exit 4, always the `result` output and the job summary.

Reading the pull request to gate comes before anything runs: its failure ends the job, exit 3,
or exit 2 when GitHub does not know the pull request the event names (404, 410), with
`result=incomplete` and a job summary saying why. Every later request (who the token is, the
earlier comment, the bypass label's facts, the comment, the check run and the commit status)
costs a warning naming it and the status, never the decision: the gate decides as the runs say,
and a bypass whose facts GitHub would not give is refused (fail closed). A success whose body is
not what GitHub documents (a proxy's HTML page) is such a failure too.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalward.report.markdown import marker_for
from fakes.github_api import WORKFLOW_BOT, FakeGitHub, FakePull
from fakes.http import Response
from fakes.model_script import text
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.greeter import model_change
from support.suite import provider_env

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"
MAINTAINER = "maintainer"
PERSON = "release-bot-person"
"""A person's token: `GET /user` names its account (an installation token's is refused)."""
DOCS = "https://docs.github.com/rest"


def error(status: int, message: str, **more: Any) -> Response:
    """GitHub's `basic-error` answer."""
    return Response(
        status, {"message": message, "documentation_url": DOCS, "status": str(status), **more}
    )


ANSWERS: dict[str, Response] = {
    "401": error(401, "Bad credentials"),
    "403": error(403, "Resource not accessible by integration"),
    "404": error(404, "Not Found"),
    "410": error(410, "Issues are disabled for this repo"),
    "422": error(
        422,
        "Validation Failed",
        errors=[{"resource": "IssueComment", "code": "custom", "message": "body is too long"}],
    ),
    "429": Response(
        429,
        {"message": "API rate limit exceeded for installation ID 1.", "documentation_url": DOCS},
        {
            "retry-after": "0",
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-used": "5000",
            "x-ratelimit-reset": str(int(time.time()) + 3600),
        },
    ),
    # GitHub's front end answers an overloaded backend with an HTML page, not JSON
    "502": Response(
        502,
        raw=b"<!DOCTYPE html><html><head><title>Unicorn! &middot; GitHub</title></head>"
        b"<body>No server is currently available to service your request.</body></html>",
        headers={"content-type": "text/html; charset=utf-8"},
    ),
}


@dataclass(frozen=True)
class Call:
    """One request the gate makes after its runs, and what the gate needs for it to be made."""

    method: str
    path: str
    what: str
    """The words of the warning its failure costs."""
    bypass: bool = False
    """On the bypass label's path: its failure refuses the bypass."""
    comment: bool = False
    """On the comment's path: its failure leaves the comment unposted."""
    seeded: bool = False
    """An earlier comment of evalward's is there (to be edited)."""
    inputs: dict[str, str] = field(default_factory=dict)
    login: str = PERSON
    """The token's account. A person's, but where the workflow's own is the point: an
    installation token's account is learnt by a GraphQL query, which the client paces as a
    write (a second before the comment is posted)."""


CHECKS = {"check-run": "true", "comment": "never"}
"""A check run and a commit status, and no comment: three writes a run would be two seconds
of the client's pacing."""

AFTER_THE_RUNS = {
    "learn the token's account (REST)": Call(
        "GET", r"^/user$", "learn which account the token writes as"
    ),
    "learn the token's account (GraphQL)": Call(
        "POST", r"^/graphql$", "learn which account the token writes as", login=WORKFLOW_BOT
    ),
    "list the comments": Call(
        "GET", r"/issues/7/comments$", "read the comments of pull request #7", comment=True
    ),
    "create the comment": Call(
        "POST", r"/issues/7/comments$", "post the comment on pull request #7", comment=True
    ),
    "edit the comment": Call(
        "PATCH",
        r"/issues/comments/\d+$",
        "post the comment on pull request #7",
        comment=True,
        seeded=True,
    ),
    "read the label's events": Call(
        "GET", r"/issues/7/events$", "read the events of pull request #7", bypass=True
    ),
    "read the labeller's permission": Call(
        "GET",
        rf"/collaborators/{MAINTAINER}/permission$",
        f"read the repository permission of {MAINTAINER}",
        bypass=True,
    ),
    "create the check run": Call("POST", r"/check-runs$", "create the check run on", inputs=CHECKS),
    "set the commit status": Call(
        "POST", r"/statuses/[0-9a-f]{40}$", "set the commit status on", inputs=CHECKS
    ),
}


@dataclass(frozen=True)
class Change:
    repo: GitRepo
    base: str
    head: str


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    """One model server for the module: the result cache keys runs by their endpoint, so every
    run after the first reuses the runs it did (a faster job, never another decision)."""
    server = ScriptedModelServer()
    server.script(lambda body: body.get("model") == "gpt-4.1", text("Bye."))
    server.script(lambda body: True, text("Hello!"))
    yield server
    server.close()
    assert server.contract_violations == []


@pytest.fixture(scope="module")
def change(tmp_path_factory: pytest.TempPathFactory) -> Change:
    """A pull request whose head greets badly: its gate fails, unless the bypass is honoured."""
    repo = GitRepo(tmp_path_factory.mktemp("answers") / "repo")
    base, head = model_change(repo)
    return Change(repo, base, head)


def labelled_pull(github: FakeGitHub, change: Change) -> None:
    """Pull request #7, just labelled for the bypass by someone who may apply it."""
    github.add_pull(FakePull(number=7, head_sha=change.head, base_sha=change.base))
    github.permissions[MAINTAINER] = "admin"
    github.add_label(7, LABEL, MAINTAINER)


def gate(
    github: FakeGitHub,
    change: Change,
    model: ScriptedModelServer,
    run_dir: Path,
    inputs: dict[str, str] | None = None,
) -> ActionRun:
    event = pull_request_event(
        github.repository, 7, change.base, change.head, [LABEL], action="labeled", label=LABEL,
        sender=MAINTAINER,
    )  # fmt: skip
    return run_action(
        change.repo.path,
        github,
        event,
        env=provider_env(model),
        inputs=inputs,
        run_dir=run_dir,
    )


def assert_no_bug(run: ActionRun) -> None:
    assert run.returncode != 4, run.stderr
    assert "Traceback" not in run.stderr
    assert "internal error" not in run.stderr + run.stdout


# --- reading the pull request: before anything runs ----------------------------------------


@pytest.mark.parametrize("status", list(ANSWERS))
def test_the_pull_request_github_will_not_give_ends_the_job_located(
    status: str, github: FakeGitHub, change: Change, model: ScriptedModelServer, tmp_path: Path
) -> None:
    labelled_pull(github, change)
    github.answer("GET", r"/pulls/7$", ANSWERS[status])
    asked = len(model.requests)

    run = gate(github, change, model, tmp_path / "runner")

    assert_no_bug(run)
    unknown = status in ("404", "410")
    assert run.returncode == (2 if unknown else 3), run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("::error::")]
    assert len(errors) == 1, run.stderr
    if unknown:  # located: where the number came from, and what else a 404 can mean
        assert errors[0].startswith(
            "::error::the pull_request event's `pull_request.number` (GITHUB_EVENT_PATH): "
            f"pull request #7 is not known to GitHub's API at {github.url} in acme/agents "
            f"(HTTP {status} "
        )
        assert "`permissions: pull-requests: read`" in errors[0]
    else:
        assert f"::error::GitHub API: could not read pull request #7: HTTP {status}" in errors[0]
    if status == "429":
        assert "rate limit is exhausted" in errors[0]
    assert run.outputs["result"] == "incomplete"
    assert "stopped before a decision" in run.summary
    assert f"HTTP {status}" in run.summary
    assert f"job exits {run.returncode}" in run.summary
    assert len(model.requests) == asked, "nothing ran"
    assert not (run.output_dir / "results.json").exists()
    assert github.comments_on(7) == [] and github.check_runs == []


@pytest.mark.parametrize("status", list(ANSWERS))
def test_a_dispatched_gate_names_its_pr_input_when_github_does_not_know_the_pull_request(
    status: str, github: FakeGitHub, change: Change, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """workflow_dispatch reads the pull request before it reads the base branch's files."""
    labelled_pull(github, change)
    github.answer("GET", r"/pulls/7$", ANSWERS[status])
    dispatch = {"inputs": {"pr": "7"}, "ref": "refs/heads/main"}
    dispatch["repository"] = {"full_name": github.repository, "default_branch": "main"}

    run = run_action(
        change.repo.path,
        github,
        dispatch,
        env=provider_env(model),
        event_name="workflow_dispatch",
        run_dir=tmp_path / "runner",
    )

    assert_no_bug(run)
    unknown = status in ("404", "410")
    assert run.returncode == (2 if unknown else 3), run.stderr
    assert f"HTTP {status}" in run.stderr
    if unknown:
        assert "::error::the workflow_dispatch input `pr`: pull request #7 is not known" in (
            run.stderr
        )
    else:
        assert f"::error::GitHub API: could not read pull request #7: HTTP {status}" in run.stderr
    assert run.outputs["result"] == "incomplete"
    assert "stopped before a decision" in run.summary


# --- every later request: a warning, never the decision ------------------------------------


@pytest.mark.parametrize("status", list(ANSWERS))
@pytest.mark.parametrize("name", list(AFTER_THE_RUNS))
def test_a_failing_request_after_the_runs_costs_a_warning_not_the_decision(
    name: str,
    status: str,
    github: FakeGitHub,
    change: Change,
    model: ScriptedModelServer,
    tmp_path: Path,
) -> None:
    call = AFTER_THE_RUNS[name]
    labelled_pull(github, change)
    github.login = call.login
    marker = marker_for("evals/gate")
    if call.seeded:
        github.add_comment(7, f"{marker}\nan earlier gate's comment", author=github.login)
    github.answer(call.method, call.path, ANSWERS[status])

    run = gate(github, change, model, tmp_path / "runner", call.inputs)

    assert_no_bug(run)
    # the runs decide: the head fails, and the bypass holds only if GitHub gave its facts
    expected = "fail" if call.bypass else "bypassed"
    assert run.returncode == (1 if call.bypass else 0), run.stdout + run.stderr
    assert run.outputs["result"] == expected
    assert run.results()["result"] == expected
    assert "greeter-eval" in run.summary
    assert f"evalward: {expected}" in run.stdout
    asked = [r for r in github.requests if r.method == call.method and re.search(call.path, r.path)]
    assert asked, f"the action never made the request {call.method} {call.path}"
    warnings = [line for line in run.stdout.splitlines() if line.startswith("::warning::")]
    if name == "learn the token's account (REST)" and status == "403":
        # a person's token refused `GET /user` is asked again as GraphQL's `viewer`
        assert not any(call.what in w for w in warnings), warnings
    else:
        assert any(call.what in w and f"HTTP {status}" in w for w in warnings), run.stdout
    if status == "429":
        assert any("rate limit is exhausted" in w for w in warnings), warnings
    posted = [c for c in github.comments_on(7) if "an earlier gate's comment" not in c["body"]]
    commented = call.inputs.get("comment") != "never"
    assert bool(posted) is (commented and not call.comment), github.comments_on(7)
    if call.bypass:
        assert any("The bypass label could not be checked: no bypass." in w for w in warnings)


def test_finding_the_earlier_comment_reads_the_listing_once_not_each_comment(
    github: FakeGitHub, change: Change, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A pull request's comments are read as pages of the listing: a comment each request
    would spend a request per comment of a long discussion, twice a run."""
    labelled_pull(github, change)
    for index in range(5):
        github.add_comment(7, f"review remark {index}", author="reviewer")
    github.add_comment(7, f"{marker_for('evals/gate')}\nan earlier gate's comment", github.login)

    run = gate(github, change, model, tmp_path / "runner")

    assert run.returncode == 0, run.stdout + run.stderr
    reads = [r.path for r in github.requests if r.method == "GET" and "/comments" in r.path]
    assert all(path.endswith("/issues/7/comments") for path in reads), reads
    edited = [c for c in github.comments_on(7) if "earlier gate" not in c["body"]]
    assert len(edited) == 6 and "bypassed" in edited[-1]["body"], github.comments_on(7)


PROXY_PAGE = Response(
    200,
    raw=b"<html><body>Sign in to the corporate proxy</body></html>",
    headers={"content-type": "text/html"},
)
"""A success that is not GitHub's answer: what a proxy between a runner and the API can send."""
UNDOCUMENTED = {
    "an HTML page": PROXY_PAGE,
    "a list for an object": Response(200, ["not", "a", "pull", "request"]),
    "a pull request without its base": Response(200, {"number": 7, "head": {"sha": "0" * 40}}),
}


@pytest.mark.parametrize("answer", list(UNDOCUMENTED))
def test_a_pull_request_answer_github_does_not_document_is_an_external_failure(
    answer: str, github: FakeGitHub, change: Change, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Never read as a pull request without a base (which would gate the head alone)."""
    labelled_pull(github, change)
    github.answer("GET", r"/pulls/7$", UNDOCUMENTED[answer])

    run = gate(github, change, model, tmp_path / "runner")

    assert_no_bug(run)
    assert run.returncode == 3, run.stderr
    assert "::error::GitHub API: could not read pull request #7: its answer is not what" in (
        run.stderr
    )
    assert run.outputs["result"] == "incomplete"
    assert "stopped before a decision" in run.summary


@pytest.mark.parametrize(
    "path", [r"/issues/7/comments$", r"/issues/7/events$"], ids=["comments", "events"]
)
def test_an_undocumented_answer_after_the_runs_costs_a_warning_not_the_decision(
    path: str, github: FakeGitHub, change: Change, model: ScriptedModelServer, tmp_path: Path
) -> None:
    labelled_pull(github, change)
    github.login = PERSON
    github.answer("GET", path, PROXY_PAGE)

    run = gate(github, change, model, tmp_path / "runner")

    assert_no_bug(run)
    bypass_path = "events" in path
    assert run.returncode == (1 if bypass_path else 0), run.stdout + run.stderr
    assert run.results()["result"] == run.outputs["result"]
    warnings = [line for line in run.stdout.splitlines() if line.startswith("::warning::")]
    assert any("its answer is not what GitHub's API documents" in w for w in warnings), warnings
