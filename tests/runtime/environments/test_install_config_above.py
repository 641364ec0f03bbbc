"""An environment is built from its side's own files and nothing a pull request's program
left on the machine: a `uv.toml` the head's agent plants where every user may write (the
machine's temporary folder, and any folder above its HOME that it may write) does not choose the
packages of the base branch's code scorer that grades the head, nor those a later job's base
restores from the cache.

uv reads its configuration from the nearest `uv.toml` in the folder it runs in or any folder
above it. evalward builds every environment in a folder whose every ancestor only root may
write (runtime/isolation/sandbox.py's `AGENTS_PLACE`), never under `TMPDIR` (`/tmp` in the
action, every user's), and the build holds an empty `uv.toml` of evalward's where uv's search
ends. Under `baseRuns: whereRead` the base side's code scorer first runs on the head's runs, so
its environment is built as the base side's user once the head's agent has run. A head whose
agent regresses plants a `uv.toml` naming a folder of its own wheels: the base's scorer still
imports the base's package and fails the head. An environment whose install a head program
could have reached is not kept in the cache (`cache-dir`, which actions/cache keeps), so
another pull request on the same base, whose agent regresses the same way and plants nothing,
is failed too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.actionrun import ActionRun
from support.agentenv import CLERK_AGENT, needs_root
from support.documents import documents, eval_for
from support.gitrepo import GitRepo
from support.planted import gate, planting_agent, shared
from support.scorerpackages import package_folder, wheel

pytestmark = pytest.mark.hostile

__all__ = ["package_folder", "shared"]  # fixtures

SUITE = documents(
    CLERK_AGENT,
    eval_for(
        "clerk",
        "fixtures: [refund]",
        "scoring: { passThreshold: 1, gate: { failOnRegression: none, baseRuns: whereRead } }",
    ),
    """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "Can I get my money back?" } }
  assertions:
    - { type: code, file: scorers/policy.py, environment: { python: scorers/requirements.txt } }
""",
)
SCORER = """\
import policykit

def get_assert(output, context):
    return {"pass": policykit.mentions_policy(output), "reason": "policykit " + policykit.VERSION}
"""
HONEST = (
    'VERSION = "1.0"\n\ndef mentions_policy(text):\n    return "refund policy" in text.lower()\n'
)
BASE_AGENT = """\
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "final", "content": "See our refund policy."}), flush=True)
"""
HEAD_AGENT = planting_agent(
    "policykit", 'VERSION = "9.0"\ndef mentions_policy(text):\n    return True\n', "clerk-wheels"
)


def base_branch(repo: GitRepo, wheels: Path) -> str:
    """The clerk and its policy scorer, whose package comes by name from the base's own
    wheelhouse."""
    return repo.commit(
        "a clerk graded by a policy scorer",
        {
            ".gitignore": ".evalward/\n",
            "agents.yaml": SUITE,
            "agent/clerk.py": BASE_AGENT,
            "scorers/policy.py": SCORER,
            "scorers/requirements.txt": f"--no-index\n--find-links {wheels}\npolicykit>=1.0\n",
        },
    )


def graded(run: ActionRun) -> tuple[str, str]:
    """The policy scorer's status and message on the head's run."""
    (head_run,) = [f for f in run.results()["fixtures"] if f["side"] == "head"]
    (scorer,) = head_run["assertions"]
    return scorer["status"], scorer["message"]


@needs_root
def test_a_uv_toml_the_head_plants_above_the_builds_does_not_pick_the_base_scorers_packages(
    repo: GitRepo, github: FakeGitHub, package_folder: Path, shared: Path
) -> None:
    honest = wheel(package_folder, "policykit", "1.0", HONEST)
    base = base_branch(repo, honest.parent)

    run = gate(repo, github, shared, 5, base, HEAD_AGENT)

    planted = shared / "uv.toml"
    assert not planted.exists(), "the head's file is swept at its turn's end"
    # The base's scorer grades the head with the base's package, and the head fails it.
    assert graded(run) == ("fail", "policykit 1.0"), run.stdout
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    assert "policykit 9.0" not in json.dumps(run.results())


@needs_root
def test_the_base_environment_a_later_job_restores_holds_nothing_an_earlier_head_planted(
    repo: GitRepo, github: FakeGitHub, package_folder: Path, shared: Path
) -> None:
    honest = wheel(package_folder, "policykit", "1.0", HONEST)
    base = base_branch(repo, honest.parent)
    gate(repo, github, shared, 5, base, HEAD_AGENT)  # plants, in a job of its own

    # Another pull request on the same base, the same cache: its clerk regresses and
    # plants nothing.
    later = gate(repo, github, shared, 6, base, BASE_AGENT.replace("See our refund policy.", "Ok!"))

    assert graded(later) == ("fail", "policykit 1.0"), later.stdout
    # What the first job built while the head's programs could reach its install is not kept.
    assert "(base): restored from the cache" not in later.stdout, later.stdout
    assert later.returncode == 1, later.stdout + later.stderr
    assert later.outputs["result"] == "fail"
