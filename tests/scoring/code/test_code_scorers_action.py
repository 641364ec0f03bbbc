"""Code scorers in the action: a pull request that rewrites the scorer grading it is graded by
the base branch's scorer, and a scorer that looks for the job's secrets finds none — through
the image's entry point, as the agent user, with the fake GitHub API and the model server."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import ActionRun, pull_request_event, run_action
from support.agentuser import AGENT_UID
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval
from support.suite import provider_env

pytestmark = pytest.mark.e2e

AGENT = greeter_agent("openai/gpt-test", '"%s"')
EVAL = greeter_eval(labelled=True)
FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund-policy, labels: { agent: greeter } }
spec:
  targetAgent: greeter
  input: { type: prompt, payload: { prompt: "Can I get my money back?" } }
  assertions:
    - { type: code, file: scorers/mentions_policy.py }
    - type: code
      language: javascript
      source: |
        const fs = require('fs');
        const seen = Object.keys(process.env).filter(
          (name) => /TOKEN|KEY|SECRET|INPUT_|GITHUB_/i.test(name));
        let parent = 'readable';
        try { fs.readFileSync(`/proc/${process.ppid}/environ`); } catch (e) { parent = e.code; }
        return { pass: true, reason: JSON.stringify({ seen, parent, uid: process.getuid() }) };
"""
BASE_SCORER = """\
def get_assert(output, context):
    if "refund policy" in output.lower():
        return {"pass": True, "reason": "the base scorer found the policy"}
    return {"pass": False, "reason": "the base scorer: no refund policy mentioned"}
"""
PR_SCORER = "def get_assert(output, context):\n    return True\n"
SECRET = "sk-test-secret-value"


@pytest.fixture
def env(model: ScriptedModelServer) -> dict[str, str]:
    return provider_env(model, SECRET)


def gate_new_prompt(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    suite: dict[str, str],
    rewrites: dict[str, str],
) -> ActionRun:
    """Gate pull request 7: the greeter with `suite` on the base; on the head a new prompt
    (which the model answers without the refund policy) and `rewrites`."""
    base = repo.commit(
        "a greeter and its suite",
        {"agents/greeter.yaml": AGENT % "Prompt BASE-V1.", "evals/greeter.yaml": EVAL, **suite},
    )
    repo.branch("feature")
    head = repo.commit(
        "a new prompt, and a scorer that passes anything",
        {"agents/greeter.yaml": AGENT % "Prompt HEAD-V2.", **rewrites},
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda body: "BASE-V1" in json.dumps(body), text("See our refund policy."))
    model.script(lambda body: "HEAD-V2" in json.dumps(body), text("Sure, no problem!"))

    event = pull_request_event(github.repository, 7, base, head)
    return run_action(repo.path, github, event, env=env)


def test_a_pr_that_rewrites_its_scorer_is_graded_by_the_base_one_that_sees_no_secret(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    scorer = "scorers/mentions_policy.py"
    suite = {"evals/fixtures/refund.yaml": FIXTURE, scorer: BASE_SCORER}
    run = gate_new_prompt(repo, github, model, env, suite, {scorer: PR_SCORER})

    assert run.returncode == 1, run.stdout + run.stderr
    results = run.results()
    by_side = {f["side"]: f["assertions"] for f in results["fixtures"]}
    policy, _ = by_side["head"]
    assert (policy["status"], policy["message"]) == (
        "fail",
        "the base scorer: no refund policy mentioned",
    )
    assert by_side["base"][0]["status"] == "pass"
    # the base's scorers grade both sides as the base side's agent user, which no program of
    # the pull request runs as
    for side in ("head", "base"):
        found = json.loads(by_side[side][1]["message"])
        assert found == {"seen": [], "parent": "EACCES", "uid": AGENT_UID + 1}, side
    written = (run.output_dir / "results.json").read_text() + github.comments_on(7)[0]["body"]
    assert SECRET not in written and github.token not in written
    assert "no refund policy mentioned" in github.comments_on(7)[0]["body"]


AGENTV_SUITE = """\
providers: [greeter]
prompts: ["{{ input }}"]
tests:
  - id: refund-policy
    assert:
      - { metric: policy, type: script, command: [python3, graders/policy.py] }
    vars:
      input: Can I get my money back?
"""
AGENTV_BASE_GRADER = """\
import json, sys
answer = json.load(sys.stdin)["output"]
print(json.dumps({"pass": "refund policy" in answer.lower(), "reason": "base grader"}))
"""
AGENTV_PR_GRADER = 'print(\'{"pass": true, "reason": "the pull request\\\'s grader"}\')\n'


def test_a_pr_that_rewrites_an_agentv_script_grader_is_graded_by_the_base_one(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    grader = "evals/agentv/graders/policy.py"
    suite = {"evals/agentv/suite.yaml": AGENTV_SUITE, grader: AGENTV_BASE_GRADER}
    run = gate_new_prompt(repo, github, model, env, suite, {grader: AGENTV_PR_GRADER})

    assert run.returncode == 1, run.stdout + run.stderr
    by_side = {f["side"]: f["assertions"][0] for f in run.results()["fixtures"]}
    assert (by_side["head"]["status"], by_side["head"]["message"]) == ("fail", "base grader")
    assert (by_side["base"]["status"], by_side["base"]["axis"]) == ("pass", "policy")


RULED_FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund-policy, labels: { agent: greeter } }
spec:
  targetAgent: greeter
  input: { type: prompt, payload: { prompt: "Can I get my money back?" } }
  assertions:
    - { type: contains, value: refund policy, axis: policy }
  scoringFunction: { file: "scoring/decide.py:decide" }
"""
BASE_DECIDER = """\
import os, re

def decide(named_scores, context):
    seen = sorted(n for n in os.environ if re.search("TOKEN|KEY|SECRET|INPUT_|GITHUB_", n, re.I))
    passed = named_scores.get("policy", 0) >= 1
    return {"pass": passed, "reason": f"policy {named_scores.get('policy')}; seen {seen}"}
"""
PR_DECIDER = "def decide(named_scores, context):\n    return True\n"


def test_a_pr_that_rewrites_its_scoring_function_is_decided_by_the_base_one(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    decider = "scoring/decide.py"
    suite = {"evals/fixtures/refund.yaml": RULED_FIXTURE, decider: BASE_DECIDER}
    run = gate_new_prompt(repo, github, model, env, suite, {decider: PR_DECIDER})

    assert run.returncode == 1, run.stdout + run.stderr
    by_side = {f["side"]: f for f in run.results()["fixtures"]}
    assert by_side["base"]["status"] == "pass"
    assert (by_side["head"]["status"], by_side["head"]["message"]) == (
        "fail",
        "scoringFunction: policy 0.0; seen []",
    )
