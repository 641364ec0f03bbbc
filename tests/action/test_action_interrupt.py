"""GitHub cancels a job with SIGINT (then SIGTERM, then SIGKILL). Whenever it comes — while
a model call of the k-th run is in flight, just as its reply arrives, or once every run is
done and evalward is talking to GitHub — the action ends with exit 130 and what finished is
written: results.json, the outputs, the comment. One that comes before any run (the pull
request still being looked up) ends it with exit 130 too, `result=incomplete` and a job
summary that says so."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.http import Request, Response
from fakes.model_server import Rule, ScriptedModelServer, text
from support.actionrun import ActionRun, Launch, prepare, pull_request_event, start_action
from support.gitrepo import GitRepo
from support.suite import make_pr, script_model

pytestmark = pytest.mark.e2e


def _launch(repo: GitRepo, github: FakeGitHub, env: dict[str, str]) -> Launch:
    base, head = make_pr(repo, github)
    event = pull_request_event(github.repository, 7, base, head)
    return prepare(repo.path, github, event, env=env, inputs={"cache": "off"})


def _run(
    repo: GitRepo,
    launch: Launch,
    started: list[subprocess.Popen[str]],
    wrapper: tuple[str, ...] = (),
) -> ActionRun:
    process = start_action(repo.path, launch, wrapper)
    started.append(process)
    stdout, stderr = process.communicate(timeout=120)
    return launch.finish(process.returncode, stdout, stderr)


def _assert_cancelled_and_written(run: ActionRun) -> dict[str, Any]:
    said = run.stdout + run.stderr
    assert run.returncode == 130, said
    assert "Traceback" not in said and "internal error" not in said, said
    results = run.results()
    assert results["run"]["cancelled"] is True
    assert results["result"] == "incomplete"
    assert run.outputs["result"] == "incomplete"
    assert (run.output_dir / "comment.md").is_file()
    return results


@pytest.mark.parametrize("nth", [1, 2, 3, 5, 7])
def test_a_signal_during_the_nth_model_call_ends_130_with_what_finished_written(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    nth: int,
) -> None:
    """The signal is sent as the server takes the call, and the reply follows at once: it
    races the reply, as a cancellation does that arrives while a run ends."""
    launch = _launch(repo, github, env)
    started: list[subprocess.Popen[str]] = []
    seen: list[int] = []

    def signal_on_the_nth(body: dict[str, Any]) -> bool:
        seen.append(1)
        if len(seen) == nth:
            started[0].send_signal(signal.SIGINT)
        return False  # never answers: the script below does

    model.rules.append(Rule(signal_on_the_nth, [text("unused")]))
    script_model(model, head_greets_well=False)

    run = _run(repo, launch, started)

    results = _assert_cancelled_and_written(run)
    done = len(results["fixtures"])
    assert results["run"]["runs_done"] == done < results["run"]["runs_planned"] == 4
    assert f"cancelled after {done} of 4 runs" in github.comments_on(7)[0]["body"]


def test_a_signal_once_every_run_is_done_still_writes_everything_and_ends_130(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    launch = _launch(repo, github, env)
    script_model(model, head_greets_well=False)
    started: list[subprocess.Popen[str]] = []
    sent: list[str] = []
    answer = github.server.handler

    def signal_on_the_comment_lookup(request: Request) -> Response:
        lookup = request.method == "GET" and request.path.endswith("/issues/7/comments")
        if lookup and not sent:
            sent.append(request.path)
            started[0].send_signal(signal.SIGINT)
        return answer(request)

    github.server.handler = signal_on_the_comment_lookup

    run = _run(repo, launch, started)

    results = _assert_cancelled_and_written(run)
    assert len(results["fixtures"]) == 4
    assert "cancelled after 4 of 4 runs" in json.dumps(github.comments_on(7)[0]["body"])


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/issues/7/comments"), ("POST", "/check-runs")],
    ids=["posting the comment", "creating the check run"],
)
def test_a_signal_once_the_decision_is_written_keeps_it_and_says_why_the_job_ends_130(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    method: str,
    path: str,
) -> None:
    """Once results.json holds the decision, a signal ends the job with 130 as any does, the
    publishing finished: the records keep the decision they hold, and the log says why the
    job's exit is not the decision's."""
    base, head = make_pr(repo, github)
    event = pull_request_event(github.repository, 7, base, head)
    inputs = {"cache": "off", "check-run": "true", "comment": "always"}
    launch = prepare(repo.path, github, event, env=env, inputs=inputs)
    script_model(model, head_greets_well=True)
    started: list[subprocess.Popen[str]] = []
    sent: list[str] = []
    answer = github.server.handler

    def signal_on_publishing(request: Request) -> Response:
        if request.method == method and request.path.endswith(path) and not sent:
            sent.append(request.path)
            started[0].send_signal(signal.SIGTERM)
        return answer(request)

    github.server.handler = signal_on_publishing

    run = _run(repo, launch, started)

    said = run.stdout + run.stderr
    assert sent and run.returncode == 130, said
    assert "Traceback" not in said and "internal error" not in said, said
    assert run.results()["result"] == "pass"
    assert run.outputs["result"] == "pass"
    assert (
        "::error::interrupted (SIGINT or SIGTERM: Ctrl-C, or a cancelled job) once the decision "
        "was written: it stands as written (pass), and the job exits 130"
    ) in said


IGNORING_SIGINT = (
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execvp(sys.argv[1], sys.argv[1:])",
)
"""Starts the rest with SIGINT ignored, as a shell starts a job in the background."""


@pytest.mark.parametrize(
    ("signum", "wrapper"),
    [(signal.SIGINT, ()), (signal.SIGTERM, ()), (signal.SIGINT, IGNORING_SIGINT)],
    ids=["SIGINT", "SIGTERM", "SIGINT, started ignoring it"],
)
def test_a_signal_while_the_pull_request_is_looked_up_ends_130_and_says_so(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    signum: signal.Signals,
    wrapper: tuple[str, ...],
) -> None:
    """Before the runs there is nothing to keep, but the job still says why it ended, as the
    cancellation of a run does, and leaves no `result` unset; a SIGINT the job was started
    ignoring too, as its runs would honour it."""
    launch = _launch(repo, github, env)
    script_model(model, head_greets_well=False)
    started: list[subprocess.Popen[str]] = []
    answer = github.server.handler

    def signal_on_the_lookup(request: Request) -> Response:
        if request.method == "GET" and request.path.endswith("/pulls/7"):
            started[0].send_signal(signum)
        return answer(request)

    github.server.handler = signal_on_the_lookup

    run = _run(repo, launch, started, wrapper)

    said = run.stdout + run.stderr
    assert run.returncode == 130, said
    assert "Traceback" not in said and "internal error" not in said, said
    assert "::error::interrupted (SIGINT or SIGTERM: Ctrl-C, or a cancelled job)" in run.stderr
    assert run.outputs["result"] == "incomplete"
    assert "cancelled (SIGINT or SIGTERM) before the gate wrote its decision" in run.summary
    assert "the job exits 130" in run.summary
    assert model.requests == []
