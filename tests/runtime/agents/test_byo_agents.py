"""Bring-your-own agents as real subprocesses: the command protocol and the http server."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.models import FixtureInput, ToolReplay
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.kinds.http import HttpKind
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.agents.runner import AgentRunner, FixtureRun
from evalward.runtime.tools.tools import FixtureTools

pytestmark = pytest.mark.integration

AGENTS = Path(__file__).resolve().parents[2] / "agents"


def running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def alive(pid: int) -> bool:
    """Still running after SIGKILL had a moment to land (a zombie orphan counts as dead)."""
    for _ in range(100):
        if not running(pid):
            return False
        time.sleep(0.05)
    return True


def runner_for(runtime: dict[str, Any], root: Path) -> AgentRunner:
    spec = AgentSpec.model_validate({"runtime": runtime})
    agent = ResolvedAgent("byo", spec, "", root)
    return AgentRunner(agent, Providers(by_name={}), {"PATH": "/usr/bin:/bin"}, kill_grace=0.2)


def fixture_run(prompt: str, timeout: float = 20, fixture: str = "fx") -> FixtureRun:
    return FixtureRun(
        labels=RunLabels(agent="byo", fixture=fixture, eval="ev", rep=1),
        fixture_input=FixtureInput(type="prompt", payload={"prompt": prompt}),
        tools=FixtureTools(
            [ToolReplay(tool="lookup", output="recorded")], frozenset({"send_email"})
        ),
        timeout_seconds=timeout,
    )


def run_all(runner: AgentRunner, *runs: FixtureRun) -> list[Trace]:
    async def go() -> list[Trace]:
        try:
            return list(await asyncio.gather(*(runner.run(r) for r in runs)))
        finally:
            await runner.aclose()

    return asyncio.run(go())


def command_runner(tmp_path: Path, **extra: Any) -> AgentRunner:
    shutil.copy(AGENTS / "command_agent.py", tmp_path / "agent.py")
    return runner_for({"command": {"run": [sys.executable, "agent.py"], **extra}}, tmp_path)


def test_command_agent_reads_the_request_and_writes_the_trace(tmp_path: Path) -> None:
    (trace,) = run_all(command_runner(tmp_path), fixture_run("echo"))
    assert [s.type for s in trace.steps] == [
        StepType.input,
        StepType.tool_call,
        StepType.tool_result,
        StepType.final,
    ]
    assert [s.index for s in trace.steps] == [1, 2, 3, 4]
    call, result = trace.steps[1], trace.steps[2]
    assert call.arguments == {"id": 7}
    assert result.output == '{"found": true}'
    assert result.usage is not None and result.usage.input_tokens == 12
    request = json.loads(trace.final_output)
    assert request["fixture"] == "fx" and request["eval"] == "ev"
    assert "rep" not in request  # every rep gets the same request
    assert request["messages"] == [{"role": "user", "content": "echo"}]
    assert request["shadowTools"] == ["send_email"]
    assert request["toolReplay"] == [
        {"tool": "lookup", "arguments": None, "output": "recorded", "isError": False}
    ]
    assert "started for fx" in trace.stderr
    assert trace.error is None


def test_a_crashing_agent_keeps_its_steps_and_stderr(tmp_path: Path) -> None:
    (trace,) = run_all(command_runner(tmp_path), fixture_run("crash"))
    assert trace.steps[1].content == "thinking"
    assert trace.steps[-1].type is StepType.error
    assert trace.error == "the agent exited with code 3: Traceback: something broke"
    assert "Traceback: something broke" in trace.stderr


def test_an_answer_under_another_key_than_content_is_an_error_not_an_empty_answer(
    tmp_path: Path,
) -> None:
    """Read as "", it would pass every check that the answer does not say something."""
    (trace,) = run_all(command_runner(tmp_path, stdout="events"), fixture_run("text-key"))
    assert trace.error is not None
    assert "a `final` event needs `content` (its text" in trace.error
    assert "it gives `text`" in trace.error
    assert not trace.final_output


def test_stdout_that_is_not_the_protocol_is_an_error_when_stdout_is_events(
    tmp_path: Path,
) -> None:
    (trace,) = run_all(command_runner(tmp_path, stdout="events"), fixture_run("garbage"))
    assert trace.error is not None
    assert "stdout line 1 is not a trace event" in trace.error
    assert "DEBUG: not json" in trace.error
    assert trace.timed_out is False  # a broken protocol is an error, not a Skip


def test_other_stdout_text_breaks_nothing_and_a_final_event_is_still_the_answer(
    tmp_path: Path,
) -> None:
    (trace,) = run_all(command_runner(tmp_path), fixture_run("garbage"))
    assert trace.error is None
    assert trace.final_output == "never counted"  # the agent's `final` event, not its log line


def test_a_process_group_that_ignores_sigterm_is_killed_at_the_timeout(tmp_path: Path) -> None:
    (trace,) = run_all(command_runner(tmp_path, timeoutSeconds=2.0), fixture_run("hang"))
    assert trace.steps[1].content == "working on it"
    assert trace.error == (
        "the agent did not finish within 2 s (the agent's spec.runtime.command.timeoutSeconds); "
        "its process group was killed"
    )
    assert trace.timed_out is True
    leader, child = (int(p) for p in (tmp_path / "pids").read_text().split())
    assert not alive(leader)
    assert not alive(child)


def test_a_missing_program_is_a_clear_error_step(tmp_path: Path) -> None:
    runner = runner_for({"command": ["./no-such-agent"]}, tmp_path)
    (trace,) = run_all(runner, fixture_run("echo"))
    assert trace.error is not None
    assert "cannot start './no-such-agent': no such program" in trace.error


def http_runner(tmp_path: Path, start: list[str] | None = None, **extra: Any) -> AgentRunner:
    shutil.copy(AGENTS / "http_agent.py", tmp_path / "server.py")
    return runner_for(
        {
            "http": {
                "start": start or [sys.executable, "server.py", "{port}"],
                "ready": "http://127.0.0.1:{port}/ready",
                "url": "http://127.0.0.1:{port}/run",
                **extra,
            }
        },
        tmp_path,
    )


def test_http_agent_is_started_once_answers_each_run_and_is_stopped(tmp_path: Path) -> None:
    runner = http_runner(tmp_path)
    assert isinstance(runner.kind, HttpKind)
    port = runner.kind.server.port
    full, short, failed = run_all(
        runner, fixture_run("search me"), fixture_run("short", fixture="f2"), fixture_run("fail")
    )
    assert [s.type for s in full.steps] == [
        StepType.input,
        StepType.tool_call,
        StepType.tool_result,
        StepType.final,
    ]
    assert full.steps[1].arguments == {"q": "search me"}
    assert full.final_output == f"port {port} shadow ['send_email']"
    assert short.final_output == "short answer for f2"
    assert failed.error is not None and "HTTP 500" in failed.error
    (pid_file,) = tmp_path.glob("server-*.pid")
    assert not alive(int(pid_file.read_text()))


def test_an_http_agent_s_wrong_path_or_page_says_where_and_what_it_answers(
    tmp_path: Path,
) -> None:
    wrong = http_runner(tmp_path, url="http://127.0.0.1:{port}/runn")
    port = wrong.kind.server.port if isinstance(wrong.kind, HttpKind) else 0
    (missed,) = run_all(wrong, fixture_run("short"))
    assert missed.error == (
        f"the agent answered HTTP 404 to POST http://127.0.0.1:{port}/runn "
        "(`runtime.http.url`), with no body"
    )
    (tmp_path / "page").mkdir()
    (page,) = run_all(http_runner(tmp_path / "page"), fixture_run("html"))
    assert page.error is not None
    assert page.error.startswith("the agent's reply (text/html) is neither JSON (")
    assert page.error.endswith(
        "nor `text/plain`: answer with a trace as JSON, or the answer alone as text/plain"
    )


def test_an_http_agent_that_never_gets_ready_fails_every_run_and_is_stopped(
    tmp_path: Path,
) -> None:
    runner = http_runner(
        tmp_path, start=[sys.executable, "server.py", "1"], readyTimeoutSeconds=0.5
    )
    (tmp_path / "server.py").write_text(
        "import os, time\nopen('server-1.pid', 'w').write(str(os.getpid()))\ntime.sleep(600)\n"
    )
    first, second = run_all(runner, fixture_run("a"), fixture_run("b"))
    for trace in (first, second):
        assert trace.error is not None
        assert "the agent server could not start" in trace.error
        assert "did not answer within 0.5 s" in trace.error
        assert trace.timed_out is False  # a server that never started is an error
    assert not alive(int((tmp_path / "server-1.pid").read_text()))


def test_an_http_agent_that_does_not_answer_in_time_is_a_timed_out_run(tmp_path: Path) -> None:
    runner = http_runner(tmp_path, timeoutSeconds=0.5)
    (trace,) = run_all(runner, fixture_run("slow"))
    assert trace.error == (
        "the agent did not answer within 0.5 s (the agent's spec.runtime.http.timeoutSeconds)"
    )
    assert trace.timed_out is True

    (tmp_path / "eval's").mkdir()
    eval_s = http_runner(tmp_path / "eval's")
    (trace,) = run_all(eval_s, fixture_run("slow", timeout=0.5))
    assert trace.error == "the agent did not answer within 0.5 s (spec.execution.timeoutSeconds)"
    # the run's own bound is the start's and the POST's together: both are named
    assert eval_s.kind.timeout_setting() == (
        "the agent's spec.runtime.http.readyTimeoutSeconds and spec.execution.timeoutSeconds"
    )


def test_an_http_agent_that_exits_early_reports_its_stderr(tmp_path: Path) -> None:
    runner = http_runner(
        tmp_path, start=[sys.executable, "-c", "import sys; sys.exit('port taken')"]
    )
    (trace,) = run_all(runner, fixture_run("a"))
    assert trace.error is not None
    assert "the server exited with code 1" in trace.error
    assert "port taken" in trace.error


LEAVES_A_WRITER_BEHIND = r"""
import json, os, sys, time
sys.stdin.readline()
if os.fork() == 0:
    os.setsid()  # out of the group evalward stops, still holding stdout
    time.sleep(2)
    print(json.dumps({"type": "final", "content": "written after the agent exited"}), flush=True)
    os._exit(0)
print(json.dumps({"type": "final", "content": "the agent's answer"}), flush=True)
"""


def test_what_a_process_left_behind_writes_after_the_agent_exited_does_not_count(
    tmp_path: Path,
) -> None:
    (tmp_path / "agent.py").write_text(LEAVES_A_WRITER_BEHIND)
    runner = runner_for({"command": {"run": [sys.executable, "agent.py"]}}, tmp_path)
    (trace,) = run_all(runner, fixture_run("hello", timeout=30))
    assert trace.error is None, trace.error
    assert trace.final_output == "the agent's answer"
    assert "after the agent exited" not in json.dumps(trace.model_dump())


HANDS_OFF_TO_A_WORKER = r"""
import subprocess, sys
sys.stdin.readline()
worker = (
    "import json, time; time.sleep(1); "
    "print(json.dumps({'type': 'final', 'content': 'the worker answers'}), flush=True)"
)
subprocess.Popen([sys.executable, "-c", worker])  # same process group, same stdout
"""


def test_a_worker_the_agent_leaves_in_its_own_group_still_answers(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(HANDS_OFF_TO_A_WORKER)
    runner = runner_for({"command": {"run": [sys.executable, "agent.py"]}}, tmp_path)
    (trace,) = run_all(runner, fixture_run("hello", timeout=30))
    assert trace.error is None, trace.error
    assert trace.final_output == "the worker answers"


UNFINISHED_LAST_LINE = r"""
import json, os, sys, time
sys.stdin.readline()
if os.fork() == 0:
    os.setsid()
    time.sleep(3)
    os._exit(0)
sys.stdout.write(json.dumps({"type": "final", "content": "no newline at the end"}))
sys.stdout.flush()
"""


def test_a_last_event_without_a_newline_counts_while_a_leftover_holds_stdout(
    tmp_path: Path,
) -> None:
    (tmp_path / "agent.py").write_text(UNFINISHED_LAST_LINE)
    runner = runner_for({"command": {"run": [sys.executable, "agent.py"]}}, tmp_path)
    (trace,) = run_all(runner, fixture_run("hello", timeout=30))
    assert trace.error is None, trace.error
    assert trace.final_output == "no newline at the end"


def test_json_nested_too_deeply_is_a_protocol_error_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text('import sys\nsys.stdin.readline()\nprint("[" * 200000)\n')
    strict = {"command": {"run": [sys.executable, "agent.py"], "stdout": "events"}}
    (trace,) = run_all(runner_for(strict, tmp_path), fixture_run("hello"))
    assert trace.error is not None and "nested too deeply" in trace.error
    # read as plain text, the same line is the agent's answer, and nothing crashes
    (trace,) = run_all(
        runner_for({"command": strict["command"] | {"stdout": "auto"}}, tmp_path),
        fixture_run("hello"),
    )
    assert trace.error is None
    assert trace.final_output == "[" * 200000
