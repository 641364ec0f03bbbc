"""An agent whose model calls each name a model of 4 MB (`"model": "mmmm…"`, within the
proxy's 32 MB request bound). The proxy keeps `provider/<model>` of every call in the run's
trace (`Call.model`, set before anything checks the name), refused calls included, so what
evalward holds and writes grows with what the agent sends: 30 such calls took evalward to
3.3 GB and wrote a results.json, a report.html and a `--json` output of 500 MB each.
Through `evalward run` on a real repository, twelve calls must leave results.json bounded by
the run's own bounds, not by the agent's bytes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
import json, os, sys, urllib.error, urllib.request
sys.stdin.readline()
base, key = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
model = "m" * (4 * 1024 * 1024)
body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]}).encode()
for _ in range(12):
    request = urllib.request.Request(
        base + "/chat/completions", data=body, method="POST",
        headers={"content-type": "application/json", "authorization": "Bearer " + key},
    )
    try:
        urllib.request.urlopen(request, timeout=60).read()
    except urllib.error.HTTPError as failed:
        failed.read()
print(json.dumps({"type": "final", "content": "hello"}))
"""


def test_model_names_of_megabytes_do_not_grow_what_evalward_holds_and_writes(
    repo: GitRepo, env: dict[str, str], tmp_path: Path
) -> None:
    repo.commit(
        "an agent that names huge models",
        {
            "agents.yaml": one_agent_suite(
                "namer",
                "name",
                command=f"{{ run: [{sys.executable}, agent/agent.py] }}",
                prompt="say hello",
                assertion="{ type: contains, value: hello }",
            ),
            "agent/agent.py": AGENT,
        },
    )
    out = tmp_path / "out"
    done = evalward("run", ".", "--no-history", "--output-dir", str(out), cwd=repo.path, **env)
    assert done.returncode != 4, done.stderr[-3000:]
    written = (out / "results.json").stat().st_size
    assert written < 8 * 1024 * 1024, f"results.json is {written:,} bytes"
