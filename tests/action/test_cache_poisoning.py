"""A pull request that fills the result cache under a key the gate's own runs read, or makes
its head's key one the base's results are kept under, then hopes for a cached pass: a result
is only ever reused for a run it would have been."""

from __future__ import annotations

import json

import pytest

from action.test_gate_evasion import HANGING_SUITE
from action.test_gate_evasion import HELPER as ANSWERING
from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

LAX_EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: zz-helper-eval }
spec:
  targetAgent: helper
  fixtures: [greets, thanks]
  scoring: { passThreshold: 1.0 }
  execution: { timeoutSeconds: 60 }
"""
"""The pull request's own Eval: the base Eval's fixtures and scoring, a longer timeout, and a
name that sorts after the base Eval's, so its runs are stored last."""

HELPER = """\
import json, sys, time
request = json.loads(sys.stdin.readline())
prompt = request["messages"][-1]["content"]
if prompt in {slow_on!r}:
    time.sleep(4)  # past the gating Eval's 3 s however fast the machine; well within 60
said = {{"greet": "hello there", "thank": "thank you"}}[prompt]
print(json.dumps({{"type": "final", "content": said}}), flush=True)
"""


def test_a_pass_within_the_pull_requests_longer_timeout_is_not_the_gates(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """The head's helper takes 4 s to thank, past the gating Eval's 3 s; the pull request's
    own Eval gives it 60 s and passes. Rerun with the cache the first run kept (a re-run of
    the job, or a later push): the gating Eval's head run of `thanks` still times out,
    because a result is keyed on the timeout it finished within."""
    suite = HANGING_SUITE.format(python=json.dumps("/usr/bin/python3"))
    base = repo.commit(
        "a helper", {"agents.yaml": suite, "agent/helper.py": HELPER.format(slow_on=[])}
    )
    repo.branch("feature")
    head = repo.commit(
        "a slower helper, and an Eval of its own",
        {"agent/helper.py": HELPER.format(slow_on=["thank"]), "evals/lax.yaml": LAX_EVAL},
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
        assert thanks and all(f["timed_out"] and not f.get("cached") for f in thanks), (
            attempt,
            thanks,
        )
    lax = [
        f
        for f in run.results()["fixtures"]
        if (f["side"], f["eval"], f["fixture"]) == ("head", "zz-helper-eval", "thanks")
    ]
    assert lax and all(f["status"] == "pass" and f.get("cached") for f in lax)


@pytest.mark.parametrize("unchecked", [False, True], ids=["changed", "marked-unchanged"])
def test_a_workspace_put_back_to_the_base_s_files_is_not_the_head_commit(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str], unchecked: bool
) -> None:
    """The pull request's helper no longer thanks; a step of the job before evalward (an
    install that runs the pull request's code) writes the base's helper back into the
    workspace, which is checked out at the head commit, and may mark it assume-unchanged so
    that git does not look at it. The head's runs read the commit's files, so its keys must
    too: hashed from the workspace, they were the base's, and the head's runs were answered
    by the base's passes, made moments before in the same job."""
    suite = HANGING_SUITE.format(python=json.dumps("/usr/bin/python3"))
    thanking = ANSWERING.format(hang_on=[], thanks="thank you")
    base = repo.commit("a helper", {"agents.yaml": suite, "agent/helper.py": thanking})
    repo.branch("feature")
    head = repo.commit(
        "a helper that no longer thanks",
        {"agent/helper.py": ANSWERING.format(hang_on=[], thanks="no")},
    )
    (repo.path / "agent" / "helper.py").write_text(thanking)  # not committed
    if unchecked:
        repo.git("update-index", "--assume-unchanged", "agent/helper.py")
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    event = pull_request_event(github.repository, 7, base, head)
    run = run_action(repo.path, github, event, env=env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    thanks = [
        f for f in run.results()["fixtures"] if (f["side"], f["fixture"]) == ("head", "thanks")
    ]
    assert thanks and all(f["status"] == "fail" and not f.get("cached") for f in thanks), thanks
