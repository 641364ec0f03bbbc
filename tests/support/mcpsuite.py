"""Declarative agents whose tools come from MCP servers: the servers (tests/agents/mcp_*.py),
an agent naming them, its Eval and fixture, and the model's script calling a tool.

A server written with the MCP SDK needs the SDK's packages. On the command line it runs with
this interpreter; in the action, as the agent user, with the system's Python and this
virtualenv's site-packages on its PYTHONPATH (`mcp_python`), when that user may read them."""

from __future__ import annotations

import contextlib
import site
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.http import quiet_port
from support.byoagent import SYSTEM_PYTHON, runnable_by_all
from support.documents import documents, eval_for

AGENTS = Path(__file__).resolve().parents[1] / "agents"
SDK_SERVER = (AGENTS / "mcp_server.py").read_text()
HOSTILE_SERVER = (AGENTS / "mcp_hostile.py").read_text()


def readable_by_all(folder: str) -> bool:
    path = Path(folder).resolve()
    return path.is_dir() and all(p.stat().st_mode & 0o005 == 0o005 for p in [path, *path.parents])


def mcp_python() -> tuple[str, str, str]:
    """(python, agent-isolation, PYTHONPATH) for an SDK server in the action: the system's
    Python as the agent user with these site-packages, else this one's with isolation off."""
    packages = next(p for p in site.getsitepackages() if Path(p, "mcp").is_dir())
    if runnable_by_all(SYSTEM_PYTHON) and readable_by_all(packages):
        return SYSTEM_PYTHON, "user", packages
    return sys.executable, "off", packages


def mcp_agent(name: str, servers: str, *, tools: str = "", watch: str = "[mcp/*.py]") -> str:
    """A declarative Agent with `servers` (the indented body of `mcpServers`)."""
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: {name} }}
spec:
  models: [openai/gpt-test]
  watch: {watch}
{tools}  mcpServers:
{servers}"""


def fixture(name: str, agent: str, *assertions: str, extra: str = "") -> str:
    lines = "".join(f"    - {a}\n" for a in assertions) or "    - { type: contains, value: done }\n"
    return f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name} }}
spec:
  targetAgent: {agent}
  input: {{ type: prompt, payload: {{ prompt: "Do it." }} }}
{extra}  assertions:
{lines}"""


def suite(
    agent: str,
    servers: str,
    *assertions: str,
    extra: str = "",
    tools: str = "",
    eval_settings: tuple[str, ...] = (),
) -> str:
    """`agent` with `servers`, its Eval (with `eval_settings`, `spec` lines) and its one
    fixture `<agent>-run`."""
    return documents(
        mcp_agent(agent, servers, tools=tools),
        eval_for(agent, f"fixtures: [{agent}-run]", *eval_settings),
        fixture(f"{agent}-run", agent, *assertions, extra=extra),
    )


def calls(agent: str, *tool_calls: str, answer: str = "done") -> str:
    """The model's script for `agent`'s fixture: each tool call (`name: x, arguments: {...}`)
    in its own turn, then `answer`."""
    turns = "".join(f"      - toolCalls: [{{ {call} }}]\n" for call in tool_calls)
    return f"""\
  - match: {{ agent: {agent} }}
    turns:
{turns}      - content: {answer}
"""


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """The SDK's server on streamable HTTP at a loopback port, answering in server-sent
    events, run by the test (as its own user); its URL once it listens."""
    port = quiet_port()  # where evalward never gives a server of its own a port
    program = tmp_path / "server.py"
    program.write_text(SDK_SERVER)
    process = subprocess.Popen(
        [sys.executable, str(program), "http", str(port), "--sse"], stderr=subprocess.PIPE
    )
    try:
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None:
                raise AssertionError(process.stderr.read() if process.stderr else "exited")
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.05)  # waits on the process, not on a clock
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)
