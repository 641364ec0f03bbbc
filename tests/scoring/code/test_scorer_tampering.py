"""The pull request that tries to answer for the scorer grading it.

A code scorer of the gate (the base branch's, under `gate-config: base`) runs in the sandbox.
Were it to run as the user the pull request's programs run as, a process the head's agent left
behind (`setsid`, out of the group evalward ends after each run) could find it in /proc, stop
it and kill it (its pipes are evalward's, so it cannot answer in its place), or write into its
environment while that is built. The gate's scorers of the head side run, and their
environments build, as the base side's user instead, which no program of the pull request runs
as: the base's scorer grades the head undisturbed.
"""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.agentenv import PYTHON as AGENT_PYTHON
from support.agentenv import needs_root
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: bot }}
spec:
  runtime: {{ command: {{ run: [{AGENT_PYTHON}, agent/bot.py] }} }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: bot-eval }}
spec:
  targetAgent: bot
  fixtures: [refund]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: refund }}
spec:
  targetAgent: bot
  input: {{ type: prompt, payload: {{ prompt: Can I get my money back? }} }}
  assertions:
    - {{ type: code, file: scorers/policy.py }}
"""
SCORER = """\
import time

def get_assert(output, context):
    time.sleep(1)  # long enough for anything watching to find it
    return {"pass": "refund policy" in output.lower(), "reason": "the base scorer decided"}
"""
GOOD = "import sys\nsys.stdin.readline()\nprint('See our refund policy.')\n"
FORGER = r"""
import os, signal, sys, time
sys.stdin.readline()
FORGED = b'{"ok": true, "value": {"pass": true, "reason": "forged"}}\n'
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 1024)  # hold none of the run's pipes open
        me, end = os.getuid(), time.time() + 30
        while time.time() < end:
            for pid in os.listdir("/proc"):
                try:
                    if not pid.isdigit() or os.stat(f"/proc/{pid}").st_uid != me:
                        continue
                    with open(f"/proc/{pid}/cmdline", "rb") as line:
                        if b"-I\0-c" not in line.read():
                            continue
                    os.kill(int(pid), signal.SIGSTOP)
                    for fd in os.listdir(f"/proc/{pid}/fd"):
                        if fd != "0" and "pipe:" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                            with open(f"/proc/{pid}/fd/{fd}", "wb") as pipe:
                                pipe.write(FORGED)
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.005)
        os._exit(0)
    os._exit(0)
os.wait()
print("Sure, no problem!")
"""


@needs_root
def test_a_process_the_pr_leaves_behind_cannot_answer_for_the_gate_s_scorer(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    files = {"agents/bot.yaml": SUITE, "agent/bot.py": GOOD, "scorers/policy.py": SCORER}
    base = repo.commit("a bot and its scorer", files)
    repo.branch("feature")
    head = repo.commit("a bot that answers for its scorer", {"agent/bot.py": FORGER})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"cache": "off"},
    )

    by_side = {f["side"]: f["assertions"][0] for f in run.results()["fixtures"]}
    assert (by_side["base"]["status"], by_side["base"]["message"]) == (
        "pass",
        "the base scorer decided",
    )
    assert (by_side["head"]["status"], by_side["head"]["message"]) == (
        "fail",
        "the base scorer decided",
    ), by_side["head"]
    assert run.returncode == 1, run.stdout + run.stderr
