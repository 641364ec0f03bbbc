"""What names a call past the model proxy on an agent's stderr, and what does not."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import evalward
from evalward.runtime.proxy.past_proxy import from_stderr

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("stderr", "host", "variable"),
    [
        # Node.js's fetch and the openai package
        (
            "TypeError: fetch failed\n  [cause]: Error: getaddrinfo ENOTFOUND api.openai.com",
            "api.openai.com",
            "OPENAI_BASE_URL",
        ),
        ("Error: connect ECONNREFUSED 127.0.0.1:11434", "127.0.0.1:11434", "OLLAMA_HOST"),
        (
            "httpx.ConnectError: [Errno -2] Name or service not known (myres.openai.azure.com)",
            "myres.openai.azure.com",
            "AZURE_OPENAI_ENDPOINT",
        ),
        (
            "curl: (6) Could not resolve host: api.anthropic.com",
            "api.anthropic.com",
            "ANTHROPIC_BASE_URL",
        ),
    ],
)
def test_a_connection_failure_to_a_provider_is_named(stderr: str, host: str, variable: str) -> None:
    message = from_stderr(stderr)
    assert message is not None
    assert message.startswith(f"the agent called {host} (")
    assert variable in message


@pytest.mark.parametrize(
    "stderr",
    [
        "using https://api.openai.com/v1 as the model server",  # no failure
        "Error: getaddrinfo ENOTFOUND crm.example.com",  # not a model provider
        "Error: connect ECONNREFUSED 127.0.0.1:8080",  # a local service of the agent's own
        "api.openai.com.evil.example: Connection refused",  # only looks like one
        "",
    ],
)
def test_anything_else_is_not_taken_for_a_call_past_the_proxy(stderr: str) -> None:
    assert from_stderr(stderr) is None


CHECK_GUARD = """
import json, os
from pathlib import Path
from evalward.runtime.proxy import past_proxy
folder = Path(past_proxy.guard_env()["PYTHONPATH"])
print(json.dumps({
    "folder": str(folder),
    "same": (folder / "sitecustomize.py").read_bytes()
    == (past_proxy.GUARD / "sitecustomize.py").read_bytes(),
    "open": all(p.stat().st_mode & 0o005 == 0o005 for p in [folder, *folder.parents]),
    "readable": (folder / "sitecustomize.py").stat().st_mode & 0o004 != 0,
}))
"""


def test_the_guard_is_where_another_user_can_read_it_even_when_evalward_is_not(
    tmp_path: Path,
) -> None:
    """evalward installed under a private folder (0700, as a home or `mktemp -d` is): the
    agent user's Python would find no guard there, so it gets a copy others may read."""
    private = tmp_path / "home"
    shutil.copytree(Path(evalward.__file__).parent, private / "evalward")
    private.chmod(0o700)
    done = subprocess.run(
        [sys.executable, "-c", CHECK_GUARD],
        env={"PYTHONPATH": str(private)}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = json.loads(done.stdout)
    assert not Path(found["folder"]).is_relative_to(private)
    assert (found["same"], found["open"], found["readable"]) == (True, True, True)
    assert not Path(found["folder"]).exists()  # removed when the process ends
