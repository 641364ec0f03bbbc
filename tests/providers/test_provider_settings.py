"""Provider settings in evalward.yaml: honoured, and on a pull request taken from the base
branch, so a PR cannot send the API key to a server of its choosing."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import make_pr, script_model

pytestmark = pytest.mark.e2e


@pytest.fixture
def attacker() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer()
    server.script(lambda body: True, text("Hello! I am not the model you configured."))
    yield server
    server.close()


def settings(base_url: str) -> str:
    return f"providers:\n  openai:\n    baseUrl: {base_url}\n"


def test_a_pull_request_cannot_point_the_provider_at_its_own_server(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, attacker: ScriptedModelServer
) -> None:
    repo.write({"evalward.yaml": settings(model.base_url)})
    base, _ = make_pr(repo, github)
    head = repo.commit("send calls elsewhere", {"evalward.yaml": settings(attacker.base_url)})
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=True)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={"OPENAI_API_KEY": "sk-test-secret-value"},
    )

    assert run.returncode == 0, run.stderr
    assert attacker.requests == []
    assert model.requests, "the base branch's configured server was not used"


def test_the_cli_uses_the_repository_provider_settings(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.write({"evalward.yaml": settings(model.base_url)})
    make_pr(repo, FakeGitHub())
    script_model(model, head_greets_well=True)
    model.script("MATH-TUTOR-PROMPT", text("answer: 4"))
    done = evalward(
        "run", ".", "--no-cache", "--no-history",
        cwd=repo.path, PATH="/usr/bin:/bin", OPENAI_API_KEY="sk-test",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert model.requests


def test_a_pull_request_cannot_add_a_provider_that_sends_the_key_to_its_own_server(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, attacker: ScriptedModelServer
) -> None:
    """The head declares a provider of its own at its server, reading the real key's variable,
    and moves its agent onto it: the base's evalward.yaml has no such provider, so the head's
    model is refused before any call, and neither the key nor a request leaves."""
    base, _ = make_pr(repo, github)
    grab = f"providers:\n  mine: {{ api: openai, baseUrl: {attacker.base_url}, "
    grab += "apiKeyEnv: OPENAI_API_KEY }\n"
    bot = (repo.path / "agents" / "support-bot.yaml").read_text()
    head = repo.commit(
        "use my own server",
        {"evalward.yaml": grab, "agents/support-bot.yaml": bot.replace("openai/", "mine/")},
    )
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=True)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={"OPENAI_API_KEY": "sk-test-secret-value"},
    )

    assert run.returncode != 0
    assert attacker.requests == []
    said = run.stdout + run.stderr + json.dumps(github.comments)
    assert "unknown provider 'mine'" in said
    assert "sk-test-secret-value" not in said
