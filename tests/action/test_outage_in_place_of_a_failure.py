"""A pull request whose agent turns its failing runs into provider outages, under adaptive
reps: the agent gets a tool whose answer is too large for the provider, and calls it only on
the fixture its change breaks, so each of that fixture's requests is refused (429, as a
request over a tokens-per-minute limit is) through every retry. An outage's run says nothing
and the fixture is left unsettled; undecided is never a pass, so the gate is unavailable
(rerun), never green — through `evalward run` and through the action."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_script import Rule
from fakes.model_server import ScriptedModelServer, error, text, tool_call
from support.actionrun import gate_pull_request
from support.answered import ADAPTIVE_EVAL, AGENT, commit_suite, scripted
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

FAST_RETRIES = (
    "providers: { openai: { retry: { attempts: 2, baseDelaySeconds: 0.001, "
    "maxDelaySeconds: 0.01 } } }\n"
)
HEAD_AGENT = AGENT.format(version="v2") + (
    "  tools:\n"
    "    - name: fetch_manual\n"
    "      description: Fetch the whole manual.\n"
    "      parameters: { type: object, properties: {} }\n"
    f'      mock: {{ output: "{"x" * 300_000}" }}\n'
)
"""The pull request's agent: a new prompt, and a tool whose mock answers 300 KB."""
LIMIT_BYTES = 200_000
"""The scripted provider refuses a request larger than this with 429."""
WHY = (
    "its model providers failed through their retries, or refused the API key, on fixture(s) "
    "f1 (2 of its head reps), which the other reps do not settle"
)


def too_large(body: dict[str, Any]) -> bool:
    return len(json.dumps(body)) > LIMIT_BYTES


def script_provider(model: ScriptedModelServer) -> None:
    model.rules.append(Rule(too_large, [error(429)] * 100, sequence=True))
    scripted(model, "v1", {"f0": [True] * 10, "f1": [True] * 10})  # the base passes both
    scripted(model, "v2", {"f0": [True] * 10})  # the head passes f0, and on f1 reads the manual
    model.script(
        lambda b: "question about f1" in json.dumps(b) and "(v2)" in json.dumps(b),
        tool_call("fetch_manual", {}),
        text("no idea"),
    )


def suite(repo: GitRepo) -> tuple[str, str]:
    repo.commit("fast retries", {"evalward.yaml": FAST_RETRIES})
    base = commit_suite(repo, ADAPTIVE_EVAL, ["f0", "f1"])
    repo.branch("change")
    head = repo.commit("a new prompt, and a manual", {"agent.yaml": HEAD_AGENT})
    return base, head


def unavailable(document: dict[str, Any]) -> None:
    (head,) = [e for e in document["evals"] if e["side"] == "head"]
    assert (head["passed"], head["provider_unavailable"]) == (False, True), head
    assert head["incomplete_reason"] == WHY
    f1 = [f for f in document["fixtures"] if f["side"] == "head" and f["fixture"] == "f1"]
    assert f1 and all(f["provider_unavailable"] for f in f1), f1
    assert document["result"] == "unavailable"


def test_evalward_run_is_unavailable_not_a_pass(repo: GitRepo, model: ScriptedModelServer) -> None:
    suite(repo)
    script_provider(model)
    out = repo.path / ".evalward" / "out"
    done = evalward(
        "run", "--base", "main", "--no-cache", "--no-history", "--output-dir", str(out),
        cwd=repo.path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-test",
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    unavailable(json.loads((out / "results.json").read_text()))
    assert f"- helper-eval: {WHY}" in done.stdout  # the comment says which fixture, and why


def test_the_action_s_check_is_not_green(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = suite(repo)
    script_provider(model)
    run = gate_pull_request(repo, github, base, head, {**env})
    assert (run.returncode, run.outputs["result"]) == (3, "unavailable"), run.stdout
    unavailable(json.loads((repo.path / ".evalward/out/results.json").read_text()))
    (comment,) = github.comments_on(7)
    assert "provider unavailable — not a verdict on the agent" in comment["body"]
