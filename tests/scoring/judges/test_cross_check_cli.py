"""A primary judge with a cross-vendor cross-check, and seed 003's reserved `{type: latency}`,
through `python -m evalward run` on a real repository: an Anthropic primary judge and Gemini
through its OpenAI-compatible endpoint (the scripted model server at the same path)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, text
from scoring.judges.test_judge import verdict
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: support-bot }
spec:
  models: [anthropic/agent-model]
  system: You are the support agent.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: support-bot-eval }
spec:
  targetAgent: support-bot
  fixtures: [refund]
  judge:
    model: anthropic/judge-primary
    crossCheck: { models: [openai/gemini-2.5-flash], margin: 0.25 }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund }
spec:
  targetAgent: support-bot
  input: { type: prompt, payload: { prompt: "I want a refund" } }
  assertions:
    - type: judge
      rubric: Did the agent ask for the reason before refunding?
      minScore: 0.8
    - { type: latency }
"""


def keys(model: ScriptedModelServer) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": model.anthropic_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-value",
        # Gemini's OpenAI-compatible endpoint has this shape, trailing slash included
        "OPENAI_BASE_URL": f"{model.server.url}/v1beta/openai/",
    }


def script(model: ScriptedModelServer) -> None:
    def by_model(name: str) -> Any:
        return lambda body: body["model"] == name

    model.script(by_model("agent-model"), text("Could you tell me why you want a refund?"))
    model.script(by_model("judge-primary"), text(verdict(0.9)))
    model.script(by_model("gemini-2.5-flash"), text(verdict(0.2)))


def report_rows(page: str) -> tuple[dict[str, int], list[dict[str, Any]]]:
    data = re.search(r'<script type="application/json" id="ew-data">(.*?)</script>', page, re.S)
    assert data is not None
    document = json.loads(data.group(1))
    return document["meta"]["flags"], document["rows"]


def test_the_primary_gates_and_the_cross_check_disagreement_is_shown(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit("a support bot", {"bot.yaml": SUITE})
    script(model)

    assert evalward("validate", ".", cwd=repo.path).returncode == 0
    done = evalward(
        "run",
        ".",
        "--no-cache",
        "--output-dir",
        "out",
        cwd=repo.path,
        OPENAI_API_KEY="sk-gemini-test-value",
        **keys(model),
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "every affected Eval passes" in done.stdout
    assert "### ↔️ Judges disagree" in done.stdout
    assert (
        "primary anthropic/judge-primary 0.90 (gates) · cross-check openai/gemini-2.5-flash "
        "0.20 (Δ -0.70, beyond the margin 0.25)"
    ) in done.stdout
    assert "1 where judges disagree" in done.stdout  # in the counts line
    # both judges through the same provider path: Gemini at its OpenAI-compatible route
    paths = {call.body["model"]: call.path for call in model.calls}
    assert paths == {
        "agent-model": "/v1/messages",
        "judge-primary": "/v1/messages",
        "gemini-2.5-flash": "/v1beta/openai/chat/completions",
    }

    results = json.loads((repo.path / "out" / "results.json").read_text())
    [run] = results["fixtures"]
    assert (run["status"], run["judges_disagree"]) == ("pass", True)
    judge, latency = run["assertions"]
    assert (judge["status"], judge["score"], judge["judge"]["model"]) == (
        "pass",
        0.9,
        "anthropic/judge-primary",
    )
    [check] = judge["cross_checks"]
    assert {k: check[k] for k in ("model", "status", "score", "margin", "disagrees")} == {
        "model": "openai/gemini-2.5-flash",
        "status": "fail",
        "score": 0.2,
        "margin": 0.25,
        "disagrees": True,
    }
    assert abs(check["delta"] + 0.7) < 1e-9
    # seed 003's reserved latency: reported, advisory, out of the score
    assert latency["advisory"] is True and latency["observed_ms"] > 0
    assert "does not gate" in latency["message"]
    assert run["score"] == 0.9
    [evaluation] = results["evals"]
    assert evaluation["fixture_results"][0]["judge_disagreements"] == 1

    flags, rows = report_rows((repo.path / "out" / "report.html").read_text())
    assert rows[0]["g"] & flags["judges-disagree"]


def test_a_cross_check_model_without_its_key_stops_the_run_before_anything_runs(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit("a support bot", {"bot.yaml": SUITE})
    script(model)
    # the cross-check judge on OpenAI's own endpoint (a custom base URL may need no key)
    env = {k: v for k, v in keys(model).items() if k != "OPENAI_BASE_URL"}

    done = evalward("run", ".", "--no-cache", cwd=repo.path, **env)

    assert done.returncode == 2, done.stdout + done.stderr
    assert "needs OPENAI_API_KEY, which is not set" in done.stderr
    assert "Traceback" not in done.stderr
    assert model.requests == []


def test_the_plan_counts_the_cross_check_calls(repo: GitRepo) -> None:
    single = SUITE.replace(
        "    crossCheck: { models: [openai/gemini-2.5-flash], margin: 0.25 }\n", ""
    )
    assert single != SUITE
    repo.commit("one judge", {"bot.yaml": single})
    one = json.loads(evalward("plan", ".", "--json", cwd=repo.path).stdout)
    repo.commit("two judges", {"bot.yaml": SUITE})
    two = json.loads(evalward("plan", ".", "--json", cwd=repo.path).stdout)
    # one judge assertion, graded by one more judge
    assert two["modelCalls"] == one["modelCalls"] + 1
