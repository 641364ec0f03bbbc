"""The first run tells the truth in the pull-request comment: a provider's own refusal (a model
that does not exist, a key it does not take, a quota used up) is the reason a fixture blocks."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import Reply, text
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.suite import provider_env

pytestmark = pytest.mark.e2e

AGENT = greeter_agent("openai/%s")
SUITE = documents(greeter_eval(), greeting_fixture("{ type: contains, value: Hello }"))


def refusal(status: int, message: str, code: str) -> Reply:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    return Reply(
        status=status,
        raw=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )


@pytest.mark.parametrize(
    ("status", "message", "code"),
    [
        (404, "The model `gpt-4.1-mni` does not exist or you do not have access to it.",
         "model_not_found"),
        (403, "Project proj_abc does not have access to model gpt-4.1-mni.", "model_not_found"),
        (429, "You exceeded your current quota, please check your plan and billing details.",
         "insufficient_quota"),
    ],
)  # fmt: skip
def test_the_providers_refusal_is_why_it_is_blocked(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    status: int,
    message: str,
    code: str,
) -> None:
    base = repo.commit(
        "a greeter", {"agents/greeter.yaml": AGENT % "gpt-4.1-mini", "evals/greeter.yaml": SUITE}
    )
    repo.branch("feature")
    head = repo.commit("a typo", {"agents/greeter.yaml": AGENT % "gpt-4.1-mni"})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda body: body.get("model") == "gpt-4.1-mini", text("Hello!"))
    model.script(
        lambda body: body.get("model") == "gpt-4.1-mni", *[refusal(status, message, code)] * 8
    )
    env = provider_env(model)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 1, run.stdout + run.stderr
    body = github.comments_on(7)[0]["body"]
    why = body[body.index("### Why it is blocked") :].splitlines()[1:6]
    line = next(x for x in why if "greeter-eval / greeting" in x)  # the fixture's own line
    said = {404: "does not exist", 403: "does not have access", 429: "exceeded your current quota"}
    assert said[status] in line, body
    assert str(status) in line
    assert "the run did not complete" not in line
