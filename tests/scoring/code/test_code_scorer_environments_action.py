"""Code scorers with an `environment`, in the action as GitHub runs it: each side builds the
environment the fixture's own commit names (the base branch's, under `gate-config: base`,
whatever the pull request did to its requirements), once however many assertions name it, as
that side's agent user; the scorer imports its packages; an install that fails, a bound it
goes over and an import that fails are the assertion's error. The packages are a wheel and an
npm tarball the test makes, so nothing downloads. Switching to the agent users needs root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import ActionRun, pull_request_event, run_action
from support.agentenv import needs_root
from support.agentuser import AGENT_UID
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval
from support.scorerpackages import npm_tarball, package_folder, wheel
from support.suite import provider_env

pytestmark = pytest.mark.e2e

__all__ = ["package_folder"]  # a fixture

AGENT = greeter_agent("openai/gpt-test", '"%s"')
FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: greeter }} }}
spec:
  targetAgent: greeter
  input: {{ type: prompt, payload: {{ prompt: "Can I get my money back?" }} }}
  assertions:
{assertions}"""
PYTHON_ENV = "environment: { python: scorers/requirements.txt }"
POLICY = f"""\
    - {{ type: code, file: scorers/policy.py, {PYTHON_ENV} }}
    - type: code
      language: python
      {PYTHON_ENV}
      source: |
        import json, os, sys, policykit
        return {{"pass": True, "reason": json.dumps([policykit.VERSION, sys.prefix, os.getuid()])}}
"""
BROKEN = f"""\
    - type: code
      file: scorers/policy.py
      environment: {{ python: scorers/gone/requirements.txt }}
    - {{ type: code, language: python, source: "__import__('notthere')", {PYTHON_ENV} }}
    - type: code
      file: scorers/policy.py
      environment: {{ python: scorers/small/requirements.txt, maxFiles: 5 }}
"""
SCORER = """\
import policykit

def get_assert(output, context):
    return {"pass": policykit.mentions_policy(output), "reason": "policykit " + policykit.VERSION}
"""
HONEST = (
    'VERSION = "1.0"\n\ndef mentions_policy(text):\n    return "refund policy" in text.lower()\n'
)
LENIENT = 'VERSION = "2.0"\n\ndef mentions_policy(text):\n    return True\n'


@pytest.fixture
def env(model: ScriptedModelServer) -> dict[str, str]:
    return provider_env(model, "sk-scorer-environment-secret")


def gate(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    base: dict[str, str],
    head: dict[str, str],
) -> ActionRun:
    """Pull request 7: the greeter and `base` on the base branch; on the head a new prompt
    (answered without the refund policy) and `head`."""
    base_sha = repo.commit(
        "a greeter and its suite",
        {
            "agents/greeter.yaml": AGENT % "Prompt BASE-V1.",
            "evals/greeter.yaml": greeter_eval(labelled=True),
            **base,
        },
    )
    repo.branch("feature")
    head_sha = repo.commit(
        "a new prompt", {"agents/greeter.yaml": AGENT % "Prompt HEAD-V2.", **head}
    )
    github.add_pull(FakePull(number=7, head_sha=head_sha, base_sha=base_sha))
    model.script(lambda body: "BASE-V1" in json.dumps(body), text("See our refund policy."))
    model.script(lambda body: "HEAD-V2" in json.dumps(body), text("Sure, no problem!"))
    return run_action(
        repo.path, github, pull_request_event(github.repository, 7, base_sha, head_sha), env=env
    )


@needs_root
def test_a_pr_that_swaps_its_scorers_package_is_graded_with_the_base_ones(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    package_folder: Path,
) -> None:
    honest = wheel(package_folder, "policykit", "1.0", HONEST)
    lenient = wheel(package_folder, "policykit", "2.0", LENIENT)
    fixtures = FIXTURE.format(name="policy", assertions=POLICY) + FIXTURE.format(
        name="broken", assertions=BROKEN
    )
    base = {
        "evals/fixtures/policy.yaml": fixtures,
        "scorers/policy.py": SCORER,
        "scorers/requirements.txt": f"{honest}\n",
        "scorers/gone/requirements.txt": f"{package_folder / 'nothing-1.0-py3-none-any.whl'}\n",
        "scorers/small/requirements.txt": f"{honest}\n",
    }
    # The pull request's own package passes anything; the fixtures it leaves as they are.
    run = gate(repo, github, model, env, base, {"scorers/requirements.txt": f"{lenient}\n"})

    assert run.returncode == 1, run.stdout + run.stderr
    found = {
        (f["fixture"], f["side"]): [(a["status"], a["message"]) for a in f["assertions"]]
        for f in run.results()["fixtures"]
    }
    for side, status in (("head", "fail"), ("base", "pass")):
        (scorer, scorer_says), (inline, reported) = found[("policy", side)]
        assert (scorer, scorer_says) == (status, "policykit 1.0"), (side, found)
        assert inline == "pass", (side, reported)
        version, prefix, uid = json.loads(reported)
        assert version == "1.0" and uid == AGENT_UID + 1, reported  # the base's user
        assert "/environments/" in prefix, prefix  # the environment's own Python
        gone, missing, small = found[("broken", side)]
        assert gone[0] == "error" and gone[1].startswith(
            "the scorer's environment could not be built: `uv pip install"
        ), gone
        assert "nothing-1.0-py3-none-any.whl" in gone[1], gone
        assert missing[0] == "error" and "No module named 'notthere'" in missing[1], missing
        assert small[0] == "error", small
        assert "environment.maxFiles of code scorers (scorers/small/requirements.txt)" in small[1]
    # Built once, as the base side's user, though two assertions of each side's fixture name it.
    built = "environment of code scorers (scorers/requirements.txt) (base): built in"
    assert run.stdout.count(built) == 1, run.stdout
    assert "policykit 2.0" not in run.stdout + json.dumps(list(found.values()))
    assert "sk-scorer-environment-secret" not in run.stdout + run.stderr


NODE_SCORERS = {
    "scorers/package.json": "",  # set by the test: it names the tarball
    "scorers/policy.js": (
        "const { mentionsPolicy } = require('policykit');\n"
        "module.exports = (output) => ({ pass: mentionsPolicy(output), reason: 'cjs' });\n"
    ),
    "scorers/policy.mjs": (
        "import policykit from 'policykit';\n"
        "export default (output) => ({ pass: policykit.mentionsPolicy(output), reason: 'esm' });\n"
    ),
    "scorers/grade.js": (
        "const { mentionsPolicy } = require('policykit');\n"
        "const run = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
        "console.log(JSON.stringify({ pass: mentionsPolicy(run.output), reason: 'script' }));\n"
    ),
}
NODE_POLICY = """\
    - { type: code, file: scorers/policy.js, environment: { node: scorers/package.json } }
    - { type: code, file: scorers/policy.mjs, environment: { node: scorers/package.json } }
    - type: code
      file: scorers/grade.js
      protocol: script
      environment: { node: scorers/package.json }
"""


@needs_root
def test_javascript_scorers_require_and_import_their_environments_packages(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    package_folder: Path,
) -> None:
    index = "exports.mentionsPolicy = (text) => text.toLowerCase().includes('refund policy');\n"
    tarball = npm_tarball(package_folder, "policykit", "1.0.0", index)
    manifest = {"name": "scorers", "version": "1.0.0", "private": True}
    base = {
        **NODE_SCORERS,
        "scorers/package.json": json.dumps(
            {**manifest, "dependencies": {"policykit": f"file:{tarball}"}}
        ),
        "evals/fixtures/policy.yaml": FIXTURE.format(name="policy", assertions=NODE_POLICY),
    }
    run = gate(repo, github, model, env, base, {})

    assert run.returncode == 1, run.stdout + run.stderr
    found = {
        f["side"]: [(a["status"], a["message"]) for a in f["assertions"]]
        for f in run.results()["fixtures"]
    }
    assert found == {
        "base": [("pass", "cjs"), ("pass", "esm"), ("pass", "script")],
        "head": [("fail", "cjs"), ("fail", "esm"), ("fail", "script")],
    }, found
