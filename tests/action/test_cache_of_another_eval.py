"""A pull request whose own Eval runs the base Eval's fixtures, with the same scoring, judge
and timeout, and whose agent behaves only under that Eval's name: a result is reused only
for the Eval it was earned under."""

from __future__ import annotations

import json

import pytest

from action.test_cache_poisoning import LAX_EVAL
from action.test_gate_evasion import HANGING_SUITE
from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

OWN_EVAL = LAX_EVAL.replace("timeoutSeconds: 60", "timeoutSeconds: 3")
"""The pull request's own Eval: the base Eval's fixtures, scoring and timeout under a name
that sorts after it, so its runs are stored last."""

HELPER = """\
import json, sys
request = json.loads(sys.stdin.readline())
prompt = request["messages"][-1]["content"]
thanks = "thank you" if request["eval"] in {behaves_under!r} else "whatever"
said = {{"greet": "hello there", "thank": thanks}}[prompt]
print(json.dumps({{"type": "final", "content": said}}), flush=True)
"""


def test_a_pass_under_the_pull_requests_own_eval_is_not_the_gates(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """The head's helper thanks only when the request names the pull request's own Eval;
    under the gating Eval it fails `thanks`. Rerun with the cache the first run kept: the
    gating Eval's head run of `thanks` still fails (its own result, kept), never the pass
    the other Eval's run kept under a key alike in all but the Eval."""
    suite = HANGING_SUITE.format(python=json.dumps("/usr/bin/python3"))
    base = repo.commit(
        "a helper",
        {
            "agents.yaml": suite,
            "agent/helper.py": HELPER.format(behaves_under=["helper-eval", "zz-helper-eval"]),
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "a helper polite under one Eval, and that Eval",
        {
            "agent/helper.py": HELPER.format(behaves_under=["zz-helper-eval"]),
            "evals/own.yaml": OWN_EVAL,
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 7, base, head)

    for attempt in ("first", "again"):
        run = run_action(repo.path, github, event, env=env)
        assert run.returncode == 1, (attempt, run.stdout + run.stderr)
        assert run.outputs["result"] == "fail", attempt
        thanks = [
            f
            for f in run.results()["fixtures"]
            if (f["side"], f["eval"], f["fixture"]) == ("head", "helper-eval", "thanks")
        ]
        assert thanks and all(f["status"] == "fail" for f in thanks), (attempt, thanks)
