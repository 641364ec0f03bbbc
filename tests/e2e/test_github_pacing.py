"""The action's requests to GitHub keep the pace GitHub's REST API best practices ask for:
one at a time, and a second between writes (reads are not held back)."""

from __future__ import annotations

import itertools

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import text
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.suite import provider_env

AGENT = greeter_agent("openai/%s")
SUITE = documents(greeter_eval(), greeting_fixture("{ type: contains, value: Hello }"))
WRITES = {"POST", "PATCH", "PUT", "DELETE"}


def test_the_actions_writes_to_github_are_a_second_apart(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base = repo.commit(
        "a greeter", {"agents/greeter.yaml": AGENT % "gpt-4.1-mini", "evals/greeter.yaml": SUITE}
    )
    repo.branch("feature")
    head = repo.commit("a new prompt", {"agents/greeter.yaml": AGENT % "gpt-4.1"})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda body: True, text("Hello!"))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"check-run": "true"},
    )

    assert run.returncode == 0, run.stdout + run.stderr
    writes = [r for r in github.requests if r.method in WRITES and not r.path.endswith("/graphql")]
    # the comment, the check run and the commit status
    assert len(writes) >= 3, [(r.method, r.path) for r in github.requests]
    gaps = [b.received - a.received for a, b in itertools.pairwise(writes)]
    # the client waits a whole second before each write after the first; a request's own
    # travel can bring its arrival a little nearer the last one's, never 10 % nearer
    assert min(gaps) >= 0.9, gaps
