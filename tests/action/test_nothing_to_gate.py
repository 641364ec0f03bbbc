"""When the base branch defines no Eval at all, the action says so and where it looked, and
never reports `pass`: the Evals a pull request brings cannot vouch for it."""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from scoring.judges.test_advisory_judge import AGENT
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.e2e

OWN_EVAL = """\
apiVersion: pai.io/v1
kind: Eval
metadata: { name: greeting-eval }
spec:
  targetAgent: support-bot
  fixtures: [greeting]
---
apiVersion: pai.io/v1
kind: EvalFixture
metadata: { name: greeting }
spec:
  targetAgent: support-bot
  input: { type: prompt, payload: { prompt: "GREETING-PROMPT: hello" } }
  assertions:
    - { type: contains, value: Hello }
"""


def env_of(model: ScriptedModelServer) -> dict[str, str]:
    return provider_env(model)


def test_evals_a_pull_request_adds_to_a_base_with_none_do_not_pass_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base = repo.commit(
        "an agent, no Eval yet",
        {
            "evalward.yaml": "roots: [agents, evals]\n",
            "agents/support-bot.yaml": AGENT.format(version="BASE-V1"),
            "evals/README.yaml": AGENT.format(version="SPARE").replace("support-bot", "spare"),
        },
    )
    repo.branch("feature")
    head = repo.commit("an Eval of its own", {"evals/greeting.yaml": OWN_EVAL})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script("GREETING-PROMPT", text("Hello! How can I help?"))

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env_of(model)
    )

    assert run.returncode == 0, run.stderr
    results = run.results()
    assert results["result"] == "skipped"
    said = (
        f"the base branch ({base[:12]}) defines no Eval: evalward looked in agents/, evals/ "
        "(`roots` in evalward.yaml)"
    )
    assert results["reason"].startswith(f"{said}; every affected Eval meets its threshold")
    assert run.outputs["result"] == "skipped"
    body = github.comments_on(7)[0]["body"]
    headline = said.replace("`", "\\`")  # as markdown escapes it
    assert body.splitlines()[1].startswith(f"## ⏭️ evalward: {headline}; every affected")
    assert "| greeting-eval |" in body  # what the pull request brings still ran, and is shown


def test_a_base_with_no_eval_at_all_says_where_it_looked(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base = repo.commit("an agent", {"agents/support-bot.yaml": AGENT.format(version="BASE-V1")})
    repo.branch("feature")
    head = repo.commit("a new prompt", {"agents/support-bot.yaml": AGENT.format(version="V2")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env_of(model)
    )

    assert run.returncode == 0, run.stderr
    results = run.results()
    assert results["result"] == "skipped"
    assert results["reason"] == (
        f"the base branch ({base[:12]}) defines no Eval: evalward looked in the whole repository"
    )
    assert not model.requests
