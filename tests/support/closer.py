"""A command agent `closer` with no adapter, whose one fixture `keep-account` forbids the tool
`delete_account`, run by `evalward run` on a real repository with the scripted model server as
the provider: how the proxy's tests of what a reply holds see the trace
(tests/runtime/proxy/test_*_observed.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from fakes.model_server import ScriptedModelServer
from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env


def closer_files(agent: str, *arguments: str) -> dict[str, str]:
    """The suite of `closer` and its program `agent/closer.py`, holding `agent` and run
    with `arguments` (YAML flow items)."""
    return {
        "agents.yaml": one_agent_suite(
            "closer",
            "keep-account",
            command=f"[{', '.join([sys.executable, 'agent/closer.py', *arguments])}]",
            prompt="close my account",
            assertion="{ type: toolNotCalled, tool: delete_account }",
        ),
        "agent/closer.py": agent,
    }


def run_closer(
    repo: GitRepo, model: ScriptedModelServer
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`evalward run` on `repo`: the finished process and the record of its one fixture."""
    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path, **provider_env(model))
    (fixture,) = json.loads(done.stdout)["fixtures"]
    return done, fixture
