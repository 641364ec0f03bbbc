"""Hostile bring-your-own agents: floods, hangs, ignored SIGTERM, children, exits mid-stream.
Each ends as an `error` step, with its whole process group gone and memory bounded; those
stopped at their timeout are marked timed out (scored as seed 003's Skip row)."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evalward.resources.agents.agent_runtime import CommandRuntime
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.command import MAX_TRACE_BYTES, run_command_agent
from evalward.runtime.agents.process import Launch

pytestmark = pytest.mark.hostile

PREAMBLE = """\
import json, os, signal, subprocess, sys, time
sys.stdin.readline()
def emit(event):
    sys.stdout.write(json.dumps(event) + "\\n"); sys.stdout.flush()
"""

AGENTS = {
    "floods stdout with one endless line": (
        "while True:\n    sys.stdout.write('x' * 65536)",
        "not a trace event",
    ),
    "floods stdout with endless events": (
        "while True:\n    emit({'type': 'assistant', 'content': 'y' * 60000})",
        "bytes of trace events; the run was stopped there",
    ),
    "never ends": (
        "emit({'type': 'assistant', 'content': 'thinking'})\ntime.sleep(600)",
        "did not finish",
    ),
    "ignores SIGTERM": (
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)",
        "did not finish",
    ),
    "spawns children that outlive it": (
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "emit({'type': 'assistant', 'content': 'bye'})\ntime.sleep(600)",
        "did not finish",
    ),
    "exits mid-stream": (
        'sys.stdout.write(\'{"type": "assistant", "cont\'); sys.stdout.flush(); os._exit(3)',
        "",
    ),
}


def group_alive(pgid: int) -> bool:
    """Whether a live (not zombie: nobody may reap an orphan here) process is in the group."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def group_alive_after(pgid: int, seconds: float) -> bool:
    """Whether the group still has a live process after `seconds`: SIGKILL is delivered by
    the kernel when it schedules the process, which on a loaded machine takes a moment."""
    deadline = time.monotonic() + seconds
    while group_alive(pgid):
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("name", list(AGENTS), ids=list(AGENTS))
def test_a_hostile_agent_is_an_error_and_its_group_is_gone(name: str, tmp_path: Path) -> None:
    body, expected = AGENTS[name]
    script = tmp_path / "agent.py"
    script.write_text(PREAMBLE + textwrap.dedent(body) + "\n")
    pid_file = tmp_path / "pgid"
    wrapper = tmp_path / "run.py"
    wrapper.write_text(
        f"import os, sys\nopen({str(pid_file)!r}, 'w').write(str(os.getpgid(0)))\n"
        f"os.execv(sys.executable, [sys.executable, {str(script)!r}])\n"
    )
    trace = Trace()
    runtime = CommandRuntime(run=[sys.executable, str(wrapper)])
    # Only an agent that never ends waits for the timeout; a flood or an exit ends the run
    # by itself, and on a busy machine must not lose a race with a short timeout.
    timeout = 1.5 if expected == "did not finish" else 120

    asyncio.run(
        run_command_agent(
            runtime,
            {"input": "hi"},
            trace,
            Launch(root=tmp_path, env=dict(os.environ), kill_grace=0.3),
            timeout_seconds=timeout,
        )
    )

    errors = [s for s in trace.steps if s.type is StepType.error]
    assert len(errors) == 1, trace.steps[-3:]
    assert expected in (errors[0].content or ""), errors[0].content
    # only an agent stopped at its timeout is a Skip; a flood or a broken stream is an error
    assert trace.timed_out is (expected == "did not finish")
    assert not group_alive_after(int(pid_file.read_text()), seconds=3), (
        "the process group outlived the run"
    )
    kept = sum(len(s.content or "") for s in trace.steps) + len(trace.stderr)
    assert kept < MAX_TRACE_BYTES + 64 * 1024, "memory grows with what the agent writes"
