"""A service's port is its own: evalward never hands one port to two of its servers at once,
and a service whose port another program took before it could bind it is started again on
another port, so many services starting together each get their own world and their state."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import pytest

import fakes.http
from evalward.resources.playground import Playground
from evalward.rundata.trace import Trace
from evalward.runtime.playground.base import PlaygroundSource
from evalward.runtime.playground.provision import PlaygroundSetting
from evalward.runtime.playground.run import StateNeeds, run_in_playground
from evalward.runtime.processes.port_owner import HANDED, free_port, release_port
from fakes.http import (
    EPHEMERAL_PORTS,
    LOWEST_QUIET_PORT,
    LoopbackServer,
    Response,
    bound_quietly,
)
from fakes.reply_table import ReplyTableServer
from support.rawhttp import RawServer

pytestmark = pytest.mark.integration

ENV = {"PATH": os.environ["PATH"]}

STRANGER = """
import socket, sys, time
listener = socket.socket()
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen()
print("listening", flush=True)
time.sleep(600)
"""

# On its first start, another program (in a session of its own, as another run's service
# is) binds the port before the service does; it never answers HTTP, so only the service's
# own exit can tell what happened.
SERVICE = f"""
import json, os, subprocess, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

port, marker = int(sys.argv[1]), sys.argv[2]
if not os.path.exists(marker):
    stranger = subprocess.Popen(
        [sys.executable, "-c", {STRANGER!r}, str(port)],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    stranger.stdout.readline()
    with open(marker, "w") as out:
        out.write(f"{{stranger.pid}} {{port}}")


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({{"port": port, "pid": os.getpid()}}).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def test_a_service_whose_port_was_taken_before_it_bound_it_starts_again_on_another(
    tmp_path: Path,
) -> None:
    world = tmp_path / "world"
    world.mkdir()
    (world / "service.py").write_text(SERVICE, encoding="utf-8")
    marker = tmp_path / "stranger"
    spec = Playground.model_validate(
        {
            "service": {
                "start": ["python3", "service.py", "{port}", str(marker)],
                "ready": "/health",
                "state": "/state",
            }
        }
    )
    seen: dict[str, str] = {}

    async def agent(env: Mapping[str, str]) -> Trace:
        seen.update(env)
        return Trace()

    try:
        trace, run = asyncio.run(
            run_in_playground(
                PlaygroundSource("taken", spec, world), StateNeeds(), agent, PlaygroundSetting(ENV)
            )
        )
    finally:
        if marker.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(marker.read_text().split()[0]), signal.SIGKILL)
    assert trace.error is None, trace.error
    assert run is not None
    taken = int(marker.read_text().split()[1])
    state = run.final.document["service"]
    assert state["port"] != taken
    assert seen["EVALWARD_SERVICE_URL"] == f"http://127.0.0.1:{state['port']}"
    assert run.initial.document["service"]["pid"] == state["pid"]
    assert state["port"] not in HANDED  # given back with the run's end


def test_a_port_handed_to_a_server_is_not_handed_again_until_it_is_given_back() -> None:
    """The kernel offers a port again as soon as its probe closes, before the server it was
    picked for binds it: with 200 ports handed and 5,000 more picked, it offers one of the
    200 again about 70 times."""
    handed = [free_port() for _ in range(200)]
    try:
        later: set[int] = set()
        for _ in range(5000):
            port = free_port()
            later.add(port)
            release_port(port)
        assert later.isdisjoint(handed)
        assert len(set(handed)) == 200
    finally:
        for port in handed:
            release_port(port)
    assert not HANDED.intersection(handed)


def test_a_tests_fake_server_never_holds_a_port_evalward_could_pick() -> None:
    """evalward asks a service's port for readiness before the service binds it; a fake of
    the tests on a port of the kernel's ephemeral range (where `free_port` picks) could be
    given that port between the pick and the bind, and be asked in the service's place (a
    model server that took that `GET /` for a model call failed its test)."""
    low, high = map(int, EPHEMERAL_PORTS.read_text().split())
    if low <= LOWEST_QUIET_PORT:
        pytest.skip(f"the ephemeral range {low}-{high} leaves no port below it")
    servers = [LoopbackServer(lambda _: Response(404)) for _ in range(10)]
    raw = [RawServer() for _ in range(10)]
    try:
        ports = {int(server.url.rsplit(":", 1)[1]) for server in [*servers, *raw]}
    finally:
        for server in [*servers, *raw]:
            server.close()
    assert len(ports) == 20
    assert all(LOWEST_QUIET_PORT <= port < low for port in ports), sorted(ports)
    picked = [free_port() for _ in range(20)]
    for port in picked:
        release_port(port)
    assert all(low <= port <= high for port in picked)


def test_a_fake_server_never_listens_on_a_port_a_test_holds_refusing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test holds a port bound and never listened on (SO_REUSEADDR, to take back a closed
    server's port) so that its URL refuses connections; a server binding with SO_REUSEADDR
    too may listen on it beside the holder, so a fake whose only quiet port is that one takes
    another."""
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

        def hold(candidate: int) -> int:
            held.bind(("127.0.0.1", candidate))
            return candidate

        port = bound_quietly(hold)
        ranges = tmp_path / "ip_local_port_range"
        ranges.write_text(f"{port + 1}\t60999\n")
        monkeypatch.setattr(fakes.http, "EPHEMERAL_PORTS", ranges)
        monkeypatch.setattr(fakes.http, "LOWEST_QUIET_PORT", port)
        servers = [LoopbackServer(lambda _: Response(404)), RawServer()]
        try:
            taken = {int(server.url.rsplit(":", 1)[1]) for server in servers}
        finally:
            for server in servers:
                server.close()
    assert port not in taken


def test_a_reply_table_keeps_only_the_model_calls_it_serves() -> None:
    """A fake's port may still be known to a client of a test before (its readiness probe, a
    `GET /`): the reply table answers it 404 and keeps it out of the calls a test reads."""
    table = ReplyTableServer([], "fine")
    try:
        stray = urllib.request.Request(f"{table.server.url}/", method="GET")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(stray, timeout=60)
        call = urllib.request.Request(
            f"{table.base_url}/chat/completions",
            json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
            {"content-type": "application/json"},
        )
        with urllib.request.urlopen(call, timeout=60) as reply:
            answered = json.load(reply)
    finally:
        table.close()
    assert refused.value.code == 404
    assert answered["choices"][0]["message"]["content"] == "fine"
    assert [r.target for r in table.received] == ["/v1/chat/completions"]
