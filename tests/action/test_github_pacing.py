"""The action's requests to GitHub keep the pace GitHub's REST API best practices ask for:
one at a time, each sent once the one before it is answered. A job writes a few times at most
(the comment, the check run, the commit status), far from the large number of writes for
which GitHub asks a second between each, so no write is held back."""

from __future__ import annotations

import itertools

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import text
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.suite import provider_env

pytestmark = pytest.mark.e2e

AGENT = greeter_agent("openai/%s")
SUITE = documents(greeter_eval(), greeting_fixture("{ type: contains, value: Hello }"))
WRITES = {"POST", "PATCH", "PUT", "DELETE"}


def test_the_actions_requests_to_github_are_one_at_a_time_and_its_writes_few(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base = repo.commit(
        "a greeter", {"agents/greeter.yaml": AGENT % "gpt-4.1-mini", "evals/greeter.yaml": SUITE}
    )
    repo.branch("feature")
    head = repo.commit("a new prompt", {"agents/greeter.yaml": AGENT % "gpt-4.1"})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda body: True, text("Hello!"))
    # every answer takes a while: a request sent before the last was answered arrives early
    github.answer_delay = 0.2

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"check-run": "true"},
    )

    assert run.returncode == 0, run.stdout + run.stderr
    asked = [(r.method, r.path) for r in github.requests]
    for before, after in itertools.pairwise(github.requests):
        assert after.received >= before.answering, (before.path, after.path, asked)
    writes = [r for r in github.requests if r.method in WRITES and not r.path.endswith("/graphql")]
    # the comment, the check run and the commit status: nothing else, and once each
    assert sorted(w.method + " " + w.path.rsplit("/", 1)[-1] for w in writes) == sorted(
        ["POST comments", "POST check-runs", "POST " + head]
    ), asked
