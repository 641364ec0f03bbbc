"""evalward's guard in a fixture run's Python processes (`runtime/proxy/guard/sitecustomize.py`),
loaded as Python loads it: from PYTHONPATH, at the start-up of a real interpreter. It cannot
be imported into the test's own process, where it would wrap this process's resolver and run
whatever other `sitecustomize` the path holds. A lookup of a model provider's host fails
naming it, once in the run's events; any other host is looked up as before; and an agent's
own `sitecustomize` further along the path is still run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalward.runtime.proxy.past_proxy import GUARD

pytestmark = pytest.mark.integration

HOSTS = "\n".join(
    [
        "api.openai.com\t{host} was called past evalward's model proxy: set OPENAI_BASE_URL",
        ".anthropic.com\t{host} was called past evalward's model proxy: set ANTHROPIC_BASE_URL",
        ":11434\t{host} (Ollama) was called past evalward's model proxy",
    ]
)
LOOK_UP = """\
import socket, sys
for host, port in [tuple(a.rsplit(":", 1)) for a in sys.argv[1:]]:
    try:
        socket.getaddrinfo(host, int(port))
        print("resolved", host)
    except socket.gaierror as exc:
        print("refused", host, "|", exc.args[1])
"""


def run(tmp_path: Path, *addresses: str, path: str = "", hosts: str = HOSTS) -> tuple[str, str]:
    """What a Python program started with the guard printed, and the run's events."""
    events = tmp_path / "events.jsonl"
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.pathsep.join(p for p in (str(GUARD), path) if p),
        "EVALWARD_MODEL_HOSTS": hosts,
        "EVALWARD_EVENTS": str(events),
    }
    done = subprocess.run(
        [sys.executable, "-c", LOOK_UP, *addresses],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=tmp_path,
    )
    return done.stdout, events.read_text() if events.exists() else ""


def test_a_providers_host_is_refused_by_name_and_told_once(tmp_path: Path) -> None:
    out, events = run(
        tmp_path, "api.openai.com:443", "API.OpenAI.com.:443", "eu.api.anthropic.com:443"
    )

    assert out.splitlines() == [
        "refused api.openai.com | api.openai.com was called past evalward's model proxy: "
        "set OPENAI_BASE_URL",
        "refused API.OpenAI.com. | api.openai.com was called past evalward's model proxy: "
        "set OPENAI_BASE_URL",
        "refused eu.api.anthropic.com | eu.api.anthropic.com was called past evalward's model "
        "proxy: set ANTHROPIC_BASE_URL",
    ]
    told = [json.loads(line) for line in events.splitlines()]
    assert [e["type"] for e in told] == ["error", "error"]  # once per message, not per lookup


def test_a_local_model_server_is_known_by_its_port_on_loopback_only(tmp_path: Path) -> None:
    out, _ = run(tmp_path, "127.0.0.1:11434", "127.0.0.1:8080")

    assert out.splitlines() == [
        "refused 127.0.0.1 | 127.0.0.1:11434 (Ollama) was called past evalward's model proxy",
        "resolved 127.0.0.1",
    ]


def test_without_model_hosts_nothing_is_refused(tmp_path: Path) -> None:
    out, events = run(tmp_path, "localhost:443", hosts="")
    assert out.splitlines() == ["resolved localhost"]
    assert events == ""


def test_an_agents_own_sitecustomize_further_along_the_path_still_runs(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("print('the agent set up its own start-up')\n")

    out, _ = run(tmp_path, "localhost:443", path=str(own))

    assert out.splitlines() == ["the agent set up its own start-up", "resolved localhost"]
