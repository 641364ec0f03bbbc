"""The base branch's code scorer grades the head's runs of the base's fixtures with nothing the
head's programs left behind: what the head's agent writes where every user may write is gone
before the base's scorer runs, as it is before any base program runs.

The base's scorer keeps a table of the phrases a refund answer must hold in a file of `/tmp`
(a cache a careless scorer keeps, as a careless base tool keeps a rate table:
tests/runtime/isolation/test_sides_apart.py). Its runs in the base's turn read the table they
wrote themselves; a base program's files are removed at the end of its turn. The head's agent
regresses (its answer leaves out the refund policy) and writes its own table there, naming the
words of its answer. The head's runs of the base's fixtures are graded by the base's scorer,
as the base side's user (execute/execute.py's `gate_scorers`): if that scorer ran in the head's
turn, before the head's files are swept, it would read the head's table and pass the head.
"""

from __future__ import annotations

import secrets

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.agentenv import CLERK_AGENT, needs_root
from support.documents import documents, eval_for
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

SUITE = documents(
    CLERK_AGENT,
    eval_for(
        "clerk",
        "fixtures: [refund]",
        "scoring: { passThreshold: 0, gate: { failOnRegression: any } }",
    ),
    """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "Can I get my money back?" } }
  assertions:
    - { type: code, file: scorers/policy.py }
""",
)
SCORER = """\
import json, os

TABLE = "TABLE_PATH"  # the policy's phrases, kept between runs


def get_assert(output, context):
    phrases = ["refund policy"]
    try:
        with open(TABLE) as kept:
            phrases = json.load(kept)["phrases"]
    except OSError:
        with open(TABLE, "w") as kept:
            json.dump({"phrases": phrases}, kept)
    found = any(phrase in output.lower() for phrase in phrases)
    return {"pass": found, "reason": "phrases: " + ", ".join(phrases)}
"""
BASE_AGENT = """\
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "final", "content": "See our refund policy."}), flush=True)
"""
HEAD_AGENT = """\
import json, os, sys
sys.stdin.readline()
with open("TABLE_PATH", "w") as table:
    json.dump({"phrases": ["no problem"]}, table)
os.chmod("TABLE_PATH", 0o644)
print(json.dumps({"type": "final", "content": "Sure, no problem!"}), flush=True)
"""


@needs_root
def test_the_base_s_scorer_grading_the_head_reads_nothing_the_head_s_agent_left(
    repo: GitRepo, github: FakeGitHub
) -> None:
    table = f"/tmp/clerk-policy-{secrets.token_hex(8)}.json"
    base = repo.commit(
        "a clerk graded by a policy scorer",
        {
            "agents.yaml": SUITE,
            "agent/clerk.py": BASE_AGENT,
            "scorers/policy.py": SCORER.replace("TABLE_PATH", table),
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "a friendlier clerk", {"agent/clerk.py": HEAD_AGENT.replace("TABLE_PATH", table)}
    )
    github.add_pull(FakePull(number=6, head_sha=head, base_sha=base))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 6, base, head),
        env={"OPENAI_API_KEY": "sk-unused-0123456789"},
    )

    found = {
        f["side"]: [(a["status"], a["message"]) for a in f["assertions"]]
        for f in run.results()["fixtures"]
    }
    assert found["base"] == [("pass", "phrases: refund policy")], found
    # The head is graded by the base's scorer with the base's own table, and regresses.
    assert found["head"] == [("fail", "phrases: refund policy")], (found, run.stdout)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
