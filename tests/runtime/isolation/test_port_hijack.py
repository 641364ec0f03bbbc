"""An http agent's port is free when evalward picks it, but free for anyone: a pull request's
agent can read the base server's command line (`--port N` is in /proc for every user to see),
bind the port first and answer in its place, so the base run becomes whatever the head says.
In the action each side runs as its own user, and only a listener of the agent's own user is
its server."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from evalward.errors import AgentRunError
from evalward.resources.agents.agent_runtime import HttpRuntime
from evalward.rundata.trace import Trace
from evalward.runtime.agents.http_agent import HttpAgentServer
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.processes.port_owner import loopback_listeners
from support.agentuser import agent_user

PYTHON = "/usr/bin/python3"
SERVER = """\
import json, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
time.sleep(float(sys.argv[2]))
class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"{}")
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        body = json.dumps({"final": "the agent's own answer"}).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""

pytestmark = [
    pytest.mark.hostile,
    pytest.mark.skipif(os.geteuid() != 0, reason="a second user needs root (CI runs as root)"),
    pytest.mark.skipif(not os.access(PYTHON, os.X_OK), reason=f"no {PYTHON} for the agent user"),
    pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="the kernel lists no sockets"),
]


class Impostor(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.answer({})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.answer({"final": "the impostor's answer: every assertion passes"})

    def answer(self, body: dict[str, str]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def impostor_on(port: int, host: str = "127.0.0.1") -> Iterator[None]:
    server = (IPv6Server if ":" in host else HTTPServer)((host, port), Impostor)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


class IPv6Server(HTTPServer):
    address_family = socket.AF_INET6


def agent_server(
    tmp_path: Path, sandbox: Sandbox, delay: float, host: str = "127.0.0.1"
) -> HttpAgentServer:
    checkout = tmp_path / "checkout"
    checkout.mkdir(exist_ok=True)
    (checkout / "server.py").write_text(SERVER)
    runtime = HttpRuntime.model_validate(
        {
            "start": [PYTHON, "server.py", "{port}", str(delay)],
            "ready": f"http://{host}:{{port}}/ready",
            "url": f"http://{host}:{{port}}/run",
            "readyTimeoutSeconds": 10,
        }
    )
    return HttpAgentServer(
        runtime,
        name="support-bot",
        root=checkout,
        env={"PATH": "/usr/bin:/bin"},
        kill_grace=0.2,
        sandbox=sandbox,
    )


def test_a_server_of_another_user_on_the_agents_port_is_refused(tmp_path: Path) -> None:
    base = Sandbox(agent_user()).for_side("base")
    server = agent_server(tmp_path, base, delay=1.0)  # the real server binds late

    async def go() -> Trace:
        trace = Trace()
        with impostor_on(server.port):
            try:
                await server.run({"messages": []}, trace, timeout_seconds=5)
            finally:
                await server.stop()
                base.close()
        return trace

    trace = asyncio.run(go())
    assert "impostor" not in trace.final_output
    assert trace.error is not None
    assert f"port {server.port} is held by a process of another user (uid 0)" in trace.error
    with pytest.raises(AgentRunError, match="not by the agent's server"):
        asyncio.run(server.ensure_started())  # the failure is remembered, not retried


def test_the_agents_own_server_is_its_users_listener(tmp_path: Path) -> None:
    base = Sandbox(agent_user()).for_side("base")
    assert base.user is not None
    server = agent_server(tmp_path, base, delay=0)

    async def go() -> tuple[Trace, set[int]]:
        trace = Trace()
        try:
            await server.run({"messages": []}, trace, timeout_seconds=5)
            return trace, {entry.uid for entry in loopback_listeners(server.port)}
        finally:
            await server.stop()
            base.close()

    trace, owners = asyncio.run(go())
    assert trace.error is None, trace.error
    assert trace.final_output == "the agent's own answer"
    assert owners == {base.user.uid}


def test_a_stranger_on_the_other_loopback_address_is_refused_before_the_next_request(
    tmp_path: Path,
) -> None:
    """The server holds 127.0.0.1:P; `localhost` may reach ::1 first, where another user can
    still bind P. Every request checks the port's listeners again, and goes to the address
    the server holds."""
    base = Sandbox(agent_user()).for_side("base")
    server = agent_server(tmp_path, base, delay=0, host="localhost")

    async def go() -> tuple[Trace, Trace]:
        first, second = Trace(), Trace()
        try:
            await server.run({"messages": []}, first, timeout_seconds=5)
            with impostor_on(server.port, "::1"):
                await server.run({"messages": []}, second, timeout_seconds=5)
        finally:
            await server.stop()
            base.close()
        return first, second

    first, second = asyncio.run(go())
    assert first.final_output == "the agent's own answer"
    assert second.error is not None and "held by a process of another user (uid 0)" in second.error
    assert "impostor" not in second.final_output
