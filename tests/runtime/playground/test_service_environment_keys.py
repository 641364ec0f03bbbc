"""A playground service the base branch defines runs, for a pull request's head, with
packages that pull request's head user built or the base's: never with an environment another
pull request's head user built.

Under `gate-config: base` the head's runs of a base fixture get the base's playground: its
service is the base's program, built from the base's tree, though as the head side's user
(runtime/playground/service_environment.py). The install runs as that user, who is the pull
request's: its programs can reach the build as their own user, or plant what an install reads
where every user may write (here a `uv.toml` in the machine's temporary folder). So the
environment is only as trustworthy as that pull request (runtime/environments/environment.py),
and its key names the head's commit, not only the base's its files come from: a second pull
request on the same base never restores the first one's, and its service answers as the base's
packages say.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.agentenv import CLERK_AGENT, needs_root
from support.documents import documents, eval_for
from support.gitrepo import GitRepo
from support.jsonserver import json_server
from support.planted import gate, planting_agent, shared
from support.scorerpackages import package_folder, wheel

pytestmark = pytest.mark.hostile

__all__ = ["package_folder", "shared"]  # fixtures

SUITE = documents(
    CLERK_AGENT,
    eval_for("clerk", "fixtures: [greeting, refund]"),
    """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: greeting }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "Hello" } }
  assertions:
    - { type: contains, value: "o" }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "Can I get my money back?" } }
  playground:
    name: shop
    service:
      start: [python3, shop/service.py, "{port}"]
      ready: /health
      environment: { python: shop/requirements.txt }
  assertions:
    - { type: stateValue, at: service.policy, equals: lenient }
""",
)
SERVICE = json_server(
    """\
    def do_GET(self):
        self.reply({"policy": shopkit.POLICY})
""",
    preamble="import json, sys\nimport shopkit\n",
)
AGENT = """\
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "final", "content": "Sure, no problem!"}), flush=True)
"""
PARALLEL = {"parallel": "1"}
"""One run at a time: the greeting's head run before the refund's."""
PLANTING = planting_agent("shopkit", 'POLICY = "lenient"\n', "shop-wheels")


@needs_root
def test_another_pull_requests_head_never_chooses_the_packages_of_the_bases_service(
    repo: GitRepo, github: FakeGitHub, package_folder: Path, shared: Path
) -> None:
    honest = wheel(package_folder, "shopkit", "1.0", 'POLICY = "strict"\n')
    base = repo.commit(
        "a clerk and its shop",
        {
            ".gitignore": ".evalward/\n",
            "agents.yaml": SUITE,
            "agent/clerk.py": AGENT.replace("Sure, no problem!", "Hello, no."),
            "shop/service.py": SERVICE,
            "shop/requirements.txt": f"--no-index\n--find-links {honest.parent}\nshopkit>=1.0\n",
        },
    )
    gate(repo, github, shared, 5, base, PLANTING, inputs=PARALLEL)  # a pull request that plants

    later = gate(repo, github, shared, 6, base, AGENT, inputs=PARALLEL)  # another, on the same base

    refund = {f["side"]: f for f in later.results()["fixtures"] if f["fixture"] == "refund"}
    (policy,) = refund["head"]["assertions"]
    # The base's shop, built from the base's packages, holds to its strict policy.
    assert policy["status"] == "fail", later.stdout
    # The head-side build is the first pull request's: never restored for the second.
    assert "service (head): restored from the cache" not in later.stdout, later.stdout
    assert later.returncode == 1, later.stdout + later.stderr
    assert later.outputs["result"] == "fail"
