"""A judge that cannot score never passes an Eval, run as GitHub runs the action: a judge
that is down while its calibration is replayed leaves the gate `unavailable` (not `skipped`),
and a pull request whose agent floods the provider through the model proxy can neither
starve the calibration (it is replayed before any agent runs) nor the judge (each run has a
share of calls)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, error, text
from scoring.judges.test_advisory_judge import AGENT, CANDIDATES, EVAL, LABELS, calibration, script
from support.actionrun import pull_request_event, run_action
from support.byoagent import agent_python
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.e2e

FAST_RETRY = "providers:\n  openai:\n    retry: { attempts: 2, baseDelaySeconds: 0.01 }\n"
KEY = "sk-test-secret-value"
UNAVAILABLE = "provider unavailable — not a verdict on the agent"

FLOOD_AGENT = """\
import json, os, sys, urllib.error, urllib.request

json.loads(sys.stdin.readline())  # whatever it is asked, it spends the provider's limits
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
made, said = 0, "nothing refused"
for number in range(1000):
    message = {"role": "user", "content": f"FLOOD {number}"}
    body = json.dumps({"model": "gpt-test", "messages": [message]})
    request = urllib.request.Request(url, data=body.encode(), method="POST")
    request.add_header("content-type", "application/json")
    request.add_header("authorization", "Bearer " + os.environ["OPENAI_API_KEY"])
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            reply.read()
    except urllib.error.HTTPError as refused:
        said = f"HTTP {refused.code}: {refused.read().decode()}"
        break
    made += 1
print(json.dumps({"type": "final", "content": f"made {made} calls, then {said}"}), flush=True)
"""

FLOOD = """\
apiVersion: pai.io/v1
kind: Agent
metadata: {{ name: support-bot }}
spec:
  runtime:
    command: [{python}, agent/flood.py]
"""


def env_of(model: ScriptedModelServer) -> dict[str, str]:
    return provider_env(model, KEY)


def base_commit(repo: GitRepo, config: str = "") -> str:
    return repo.commit(
        "support bot, its Eval and the judge's calibration",
        {
            "evalward.yaml": FAST_RETRY + config,
            "agents/support-bot.yaml": AGENT.format(version="BASE-V1"),
            "evals/refund.yaml": EVAL.replace("{judge}", "openai/judge-m"),
            "evals/calibration.yaml": calibration(LABELS),
        },
    )


def test_a_judge_that_is_down_for_its_calibration_leaves_the_gate_unavailable(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base = base_commit(repo)
    repo.branch("feature")
    head = repo.commit("a new prompt", {"agents/support-bot.yaml": AGENT.format(version="HEAD-V2")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script("CAL-RUBRIC", error(503))
    model.script("REFUND-RUBRIC", error(503))
    model.script("BASE-V1", text("May I ask why you want a refund?"))
    model.script("HEAD-V2", text("Refund issued for order 777."))

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env_of(model)
    )

    assert run.returncode == 3, run.stderr
    results = run.results()
    assert results["result"] == "unavailable"
    assert results["reason"].startswith(f"{UNAVAILABLE}: refund-eval is incomplete: ")
    assert "the judge's calibration 'refund-judge' could not be computed" in results["reason"]
    assert "HTTP 503" in results["reason"]
    head_eval = next(e for e in results["evals"] if e["side"] == "head")
    assert head_eval["advisory"] is False and head_eval["passed"] is False
    assert head_eval["last_result"] == "Unavailable"
    # the judge was asked for its calibration, never for a verdict it could not be trusted with
    assert not model.requests_mentioning("REFUND-RUBRIC")
    body = github.comments_on(7)[0]["body"]
    assert body.splitlines()[1] == f"## ⚠️ evalward: {UNAVAILABLE}"
    assert "| ⚠️ Unavailable |" in body
    assert "❌" not in body and "Failing fixtures" not in body and "💥 Errors" not in body
    assert "### ⚠️ Unavailable — not a verdict on the agent" in body


def quota(limit: int) -> Any:
    """The provider's rate limit: the first `limit` requests are answered, then every one is
    refused with HTTP 429, whoever sends it."""
    seen = [0]
    lock = threading.Lock()

    def spent(body: dict[str, Any]) -> bool:
        del body
        with lock:
            seen[0] += 1
            return seen[0] > limit

    return spent


def test_an_agent_flooding_the_provider_starves_neither_the_calibration_nor_the_judge(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    # In the action the agent runs as another user, who needs a Python it may execute.
    python, isolation = agent_python()
    # every call of the gate's own run is counted against the provider's quota: no
    # attribution's variants after the decision
    base = base_commit(repo, "attribution: { mode: off }\n")
    repo.branch("feature")
    head = repo.commit(
        "an agent of our own",
        {
            "agents/support-bot.yaml": FLOOD.format(python=python),
            "agent/flood.py": FLOOD_AGENT,
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script_sequence(quota(240), error(429))
    script(model, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0])  # κ = 1: the judge gates
    model.script("FLOOD", text("ok"))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env_of(model),
        inputs={"cache": "off", "agent-isolation": isolation},
    )

    assert run.returncode == 1, run.stdout + run.stderr
    results = run.results()
    assert results["result"] == "fail"
    bodies = [json.dumps(r) for r in model.requests]
    first_flood = next(i for i, b in enumerate(bodies) if "FLOOD" in b)
    calibrations = [i for i, b in enumerate(bodies) if "CAL-RUBRIC" in b]
    assert len(calibrations) == 2 * len(CANDIDATES)  # replayed for the base side and the head
    assert max(calibrations) < first_flood, "the calibration is replayed before any agent runs"
    floods = [b for b in bodies if "FLOOD" in b]
    assert len(floods) == 200, "the agent's calls stop at its run's share"
    assert len(model.requests) <= 240, "nothing was refused by the provider's rate limit"
    head_run = next(f for f in results["fixtures"] if f["side"] == "head")
    assert head_run["status"] == "error"
    assert "this run's share of model calls is spent" in head_run["message"]
    base_eval = next(e for e in results["evals"] if e["side"] == "base")
    assert base_eval["judge_agreement"] == 1.0 and base_eval["passed"] is True
    base_run = next(f for f in results["fixtures"] if f["side"] == "base")
    assert base_run["assertions"][0]["judge"]["score"] == 1.0  # the judge was not starved


GREETING = """\
apiVersion: pai.io/v1
kind: Eval
metadata: { name: greeting-eval }
spec:
  targetAgent: support-bot
  fixtures: [greeting]
---
apiVersion: pai.io/v1
kind: EvalFixture
metadata: { name: greeting, labels: { topic: greeting } }
spec:
  targetAgent: support-bot
  input: { type: prompt, payload: { prompt: "GREETING-PROMPT: hello" } }
  assertions:
    - { type: contains, value: Hello }
"""


def test_a_judge_below_its_floor_beside_a_passing_eval_leaves_the_gate_inconclusive(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """Another Eval passing is no verdict on the one whose judge cannot decide: the gate does
    not pass, and its first line names the Eval, the judge and why."""
    base = repo.commit(
        "support bot, two Evals, the judge's calibration",
        {
            "agents/support-bot.yaml": AGENT.format(version="BASE-V1"),
            "evals/refund.yaml": EVAL.replace("{judge}", "openai/judge-m"),
            "evals/greeting.yaml": GREETING,
            "evals/calibration.yaml": calibration(LABELS),
        },
    )
    repo.branch("feature")
    head = repo.commit("a new prompt", {"agents/support-bot.yaml": AGENT.format(version="HEAD-V2")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script("GREETING-PROMPT", text("Hello! How can I help?"))
    script(model, [0.6, 0.5, 0.9, 0.4, 0.1, 0.0])  # κ = 1/3, below the floor of 0.6

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env_of(model)
    )

    assert run.returncode == 1, run.stdout + run.stderr
    results = run.results()
    assert results["result"] == "inconclusive"
    assert results["reason"] == (
        "refund-eval is inconclusive: its judge openai/judge-m cannot decide: judge calibration "
        "'refund-judge': κ of openai/judge-m is 0.33, below the floor 0.60; fix the judge's "
        "settings, recalibrate it, or bypass the gate with its label (audited)"
    )
    evals = {e["eval"]: e for e in results["evals"] if e["side"] == "head"}
    assert evals["greeting-eval"]["passed"] is True
    assert evals["refund-eval"]["phase"] == "Inconclusive"
    lines = github.comments_on(7)[0]["body"].splitlines()
    assert lines[1].startswith("## ❔ evalward: refund-eval is inconclusive: its judge")
    body = "\n".join(lines)
    assert "⚪" not in body and "advisory" not in body.split("|")[0]
