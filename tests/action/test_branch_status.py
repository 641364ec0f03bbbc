"""`action.branch_status` on its own: a push marks the Evals it runs Running in the result
cache's status store and an error closes them with why; a pull request's run, or one without
a cache it may use, writes nothing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from evalward.action.branch_status import begin_status
from evalward.action.context import WorkflowContext
from evalward.action.job import Clients, Console, Job, Site, Trusted
from evalward.action.route import Route, RouteKind
from evalward.action.settings import Settings
from evalward.action.trusted.setup import CacheUse
from evalward.git import Git
from evalward.past.status import STATUS_DIR, Phase, StatusStore
from evalward.rundata.cache_mode import CacheMode
from evalward.security import Redactor
from support.gitrepo import GitRepo
from support.planning import greeter_files

pytestmark = pytest.mark.integration

EVAL = "greeter-eval"


def job(repo: GitRepo, event: str, cache: CacheUse) -> tuple[Job, io.StringIO]:
    sha = repo.commit("greeter", greeter_files())
    context = WorkflowContext(
        event_name=event,
        repository="acme/agents",
        workspace=repo.path,
        api_url="http://127.0.0.1:9",
        server_url="https://github.example",
        run_id="42",
        ref="refs/heads/main",
        sha=sha,
    )
    out = io.StringIO()
    whole = Job(
        console=Console(out, Redactor([])),
        site=Site({}, context, Settings()),
        clients=Clients(Git(repo.path), None),
        route=Route(RouteKind.run, why="push to main"),
        trusted=Trusted(cache=cache),
    )
    return whole, out


def test_a_push_marks_its_evals_running_and_an_error_closes_them(
    repo: GitRepo, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    push, out = job(repo, "push", CacheUse(cache, CacheMode.read_write))
    store = StatusStore(cache / STATUS_DIR)

    status = begin_status(push, push.route)

    running = store.read(EVAL)
    assert running is not None and running.phase is Phase.running
    assert running.running is not None and running.running.commit == repo.head()
    assert running.target_agent == "greeter"

    status.close(push.console, "the run stopped with an error")

    closed = StatusStore(cache / STATUS_DIR).read(EVAL)
    assert closed is not None and closed.phase is Phase.pending and closed.running is None
    assert closed.interrupted is not None
    assert closed.interrupted.reason == "the run stopped with an error"
    assert "::warning::" not in out.getvalue()


def test_a_read_only_cache_is_not_written(repo: GitRepo, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    push, _ = job(repo, "push", CacheUse(cache, CacheMode.read_only))

    begin_status(push, push.route)

    assert StatusStore(cache / STATUS_DIR).read(EVAL) is None


@pytest.mark.parametrize("event", ["pull_request", "workflow_dispatch"])
def test_only_a_push_or_a_schedule_keeps_the_status(
    repo: GitRepo, tmp_path: Path, event: str
) -> None:
    cache = tmp_path / "cache"
    run, _ = job(repo, event, CacheUse(cache, CacheMode.read_write))

    status = begin_status(run, run.route)

    assert status.run.store is None and status.agents == {}
    assert not (cache / STATUS_DIR).exists()


def test_without_a_cache_it_may_use_nothing_is_kept(repo: GitRepo) -> None:
    push, _ = job(repo, "push", CacheUse(None, CacheMode.off))

    status = begin_status(push, push.route)

    assert status.run.store is None
    assert status.run.source.commit == repo.head() and status.run.source.branch == "main"
