"""A command agent whose own process exited while a process it started still holds its output
open (`runtime.agents.command`): the timed-out run says so, and how to fix it, rather than
that the agent needed longer. The timeouts here are short, but the agents exit at once:
the words asserted are the same on a slow machine."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.models import FixtureInput
from evalward.rundata.trace import Trace
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.agents.runner import AgentRunner, FixtureRun
from evalward.runtime.tools.tools import FixtureTools
from support.clirun import run_for_results
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

TIMEOUT = 3
EXITED = r"^the agent's process exited (in under a second|\d+ s in), but a process it started "
SLOW = "did not finish"

LEAVES_SLEEP_HOLDING_ALL = "cat >/dev/null; (sleep 300 &); echo done"
LEAVES_SLEEP_HOLDING_EVENTS = "cat >/dev/null; (sleep 300 >/dev/null 2>&1 &); echo done"
LEAVES_SLEEP_HOLDING_STDOUT = (  # Popen closes every other descriptor: the events pipe too
    "import subprocess, sys; sys.stdin.read(); subprocess.Popen(['sleep', '300']); print('done')"
)
HANDS_OFF_TO_A_SLOW_WORKER = (  # a worker of its group that writes on until the timeout
    "import subprocess, sys; sys.stdin.read(); subprocess.Popen(['sh', '-c', "
    "'while :; do echo working; sleep 0.2; done'])"
)


def run_one(argv: list[str], root: Path, timeout: float = TIMEOUT) -> Trace:
    spec = AgentSpec.model_validate({"runtime": {"command": {"run": argv}}})
    runner = AgentRunner(
        ResolvedAgent("byo", spec, "", root),
        Providers(by_name={}),
        {"PATH": "/usr/bin:/bin"},
        kill_grace=0.2,
    )
    fixture = FixtureRun(
        labels=RunLabels(agent="byo", fixture="fx", eval="ev", rep=1),
        fixture_input=FixtureInput(type="prompt", payload={"prompt": "hello"}),
        tools=FixtureTools([], frozenset()),
        timeout_seconds=timeout,
    )

    async def go() -> Trace:
        try:
            return await runner.run(fixture)
        finally:
            await runner.aclose()

    return asyncio.run(go())


def held_error(trace: Trace) -> str:
    assert trace.timed_out is True  # still a timed-out run (skipped), never a pass
    assert trace.error is not None
    assert re.match(EXITED, trace.error), trace.error
    assert SLOW not in trace.error
    return trace.error


def test_a_process_left_holding_stdout_and_the_events_pipe_is_named(tmp_path: Path) -> None:
    error = held_error(run_one(["sh", "-c", LEAVES_SLEEP_HOLDING_ALL], tmp_path))
    assert (
        f"kept its stdout and $EVALWARD_EVENTS open until the timeout ({TIMEOUT} s); its "
        "process group was killed. A process left running must not hold them: redirect its "
        "stdout and stderr and close $EVALWARD_EVENTS_FD (bash: "
        "`cmd >/dev/null 2>&1 {EVALWARD_EVENTS_FD}>&- &`), or end it before the agent exits"
    ) in error


def test_a_process_left_holding_only_the_events_pipe_is_told_to_close_it(tmp_path: Path) -> None:
    error = held_error(run_one(["sh", "-c", LEAVES_SLEEP_HOLDING_EVENTS], tmp_path))
    assert "kept its $EVALWARD_EVENTS open" in error
    assert (
        "hold it: close $EVALWARD_EVENTS_FD in it (bash: `cmd {EVALWARD_EVENTS_FD}>&- &`)" in error
    )
    assert "redirect" not in error


def test_a_process_left_holding_only_stdout_is_told_to_redirect_it(tmp_path: Path) -> None:
    error = held_error(run_one([sys.executable, "-c", LEAVES_SLEEP_HOLDING_STDOUT], tmp_path))
    assert "kept its stdout open" in error
    assert "must not hold it: redirect its stdout and stderr (`cmd >/dev/null 2>&1 &`)" in error
    assert "EVALWARD_EVENTS_FD" not in error


def test_the_advice_followed_the_run_ends_when_the_agent_exits(tmp_path: Path) -> None:
    script = "cat >/dev/null; (sleep 300 >/dev/null 2>&1 {EVALWARD_EVENTS_FD}>&- &); echo done"
    trace = run_one(["bash", "-c", script], tmp_path, timeout=30)
    assert trace.error is None, trace.error
    assert trace.final_output == "done"


def test_a_worker_still_writing_at_the_timeout_is_an_agent_that_needed_longer(
    tmp_path: Path,
) -> None:
    trace = run_one([sys.executable, "-c", HANDS_OFF_TO_A_SLOW_WORKER], tmp_path)
    assert trace.timed_out is True
    assert trace.error is not None
    assert re.match(
        rf"^the agent did not finish within {TIMEOUT} s \(.*timeoutSeconds\): its process exited "
        r"(in under a second|\d+ s in), and a process it started went on writing to its "
        r"stdout; its process group was killed$",
        trace.error,
    ), trace.error


AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: byo }
spec:
  runtime:
    command:
      run: [sh, agent/a.sh]
      timeoutSeconds: %d
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: byo-eval }
spec:
  targetAgent: byo
  fixtures: [hello]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: hello }
spec:
  targetAgent: byo
  input: { type: prompt, payload: { prompt: "Hello" } }
  assertions:
    - { type: toolNotCalled, tool: lookup_order }
"""


def test_evalward_run_reports_what_held_the_output_not_a_slow_agent(repo: GitRepo) -> None:
    repo.commit(
        "agent",
        {
            "evalward.yaml": "roots: [agent]\n",
            "agent/agent.yaml": AGENT % TIMEOUT,
            "agent/a.sh": LEAVES_SLEEP_HOLDING_ALL.replace("; ", "\n") + "\n",
        },
    )
    code, document, said = run_for_results(repo.path)
    assert code == 1, said
    (fixture,) = document["fixtures"]
    assert fixture["status"] == "skipped" and fixture["timed_out"] is True, fixture
    message = fixture["message"]
    assert isinstance(message, str)
    assert re.match("^skipped: " + EXITED[1:], message), message
    assert "kept its stdout and $EVALWARD_EVENTS open" in message
    assert "the agent did not finish" not in message
    assert "`cmd >/dev/null 2>&1 {EVALWARD_EVENTS_FD}>&- &`" in message
    assert "skipped: the agent's process exited" in said  # the comment's words too
    assert "or end it before the agent exits" in said  # the advice whole, not cut short
