"""A declarative agent's command tool that prints more than a tool's answer may hold, through
`evalward run`: past `MAX_OUTPUT_BYTES` on stdout in one call it is stopped while it runs, the
model is never sent what it printed, and its run is an error naming the tool and the bound;
one that prints up to the bound is answered with all of it, and one that floods its stderr
only has that stderr's tail kept."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from evalward.runtime.tools.mcp_wire import MESSAGE_BYTES
from evalward.runtime.tools.tools import MAX_OUTPUT_BYTES
from support.clirun import run_for_results
from support.documents import documents, eval_for
from support.gitrepo import GitRepo
from support.mcpsuite import calls, fixture

pytestmark = pytest.mark.hostile

TOOL = """\
import sys, time

mode, bound = sys.argv[1], int(sys.argv[2])
chunk = b"x" * (1024 * 1024)


def write(stream, size):
    while size > 0:
        stream.write(chunk[:size])
        size -= len(chunk)
    stream.flush()


if mode == "flood":  # past the bound, then holds its stdout open for a minute
    write(sys.stdout.buffer, bound + 1)
    time.sleep(60)
elif mode == "full":  # the bound exactly
    sys.stdin.read()
    write(sys.stdout.buffer, bound)
elif mode == "loud":  # twice the bound on stderr, a short answer on stdout
    sys.stdin.read()
    write(sys.stderr.buffer, 2 * bound)
    sys.stderr.write("\\nlast words\\n")
    print("shipped")
"""


def _agent(name: str, mode: str) -> str:
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: {name} }}
spec:
  models: [openai/gpt-test]
  watch: [tools/*.py]
  tools:
    - name: lookup_order
      description: Look up an order.
      parameters: {{ type: object, properties: {{ order_id: {{ type: string }} }} }}
      command:
        run: [{sys.executable}, tools/talk.py, {mode}, "{MAX_OUTPUT_BYTES}"]
        timeoutSeconds: 30
"""


def _suite(name: str, mode: str) -> str:
    return documents(
        _agent(name, mode),
        eval_for(name, f"fixtures: [{name}-run]"),
        fixture(f"{name}-run", name),
    )


def _steps(run: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in run["trace"]["steps"] if s["type"] == kind]


def test_a_command_tool_printing_past_the_bound_is_stopped_and_errs_its_run(
    repo: GitRepo, tmp_path: Path
) -> None:
    modes = {"flood": "flood", "full": "full", "loud": "loud"}
    repo.commit(
        "tools",
        {
            "agents.yaml": documents(*(_suite(name, mode) for name, mode in modes.items())),
            "tools/talk.py": TOOL,
        },
    )
    script = tmp_path / "mock.yaml"
    lookup = "name: lookup_order, arguments: { order_id: A-1 }"
    script.write_text("replies:\n" + "".join(calls(name, lookup) for name in modes))

    code, results, said = run_for_results(repo.path, "--mock-script", str(script))

    runs = {f["fixture"].removesuffix("-run"): f for f in results["fixtures"]}
    assert code != 0, said

    flood = runs["flood"]
    assert flood["status"] == "error", flood["status"]
    (result,) = _steps(flood, "tool_result")
    assert result["is_error"] is True
    assert result["output"] == (
        "error: the tool command printed more than 4 MiB on stdout and was stopped"
    )
    assert result["duration_ms"] < 20_000  # stopped at the bound, not at its minute's end
    (error,) = _steps(flood, "error")
    assert error["content"] == (
        "tool 'lookup_order': its command printed more than 4 MiB on stdout for one call "
        f"(evalward's bound, {MAX_OUTPUT_BYTES} bytes); it was stopped and its output not "
        "given to the model"
    )
    assert not _steps(flood, "final")  # the model was not asked again
    assert len(str(flood["trace"])) < 64 * 1024

    full = runs["full"]
    assert full["status"] == "pass", full["status"]
    (answer,) = _steps(full, "tool_result")
    assert (answer["is_error"], len(answer["output"])) == (False, MAX_OUTPUT_BYTES)

    loud = runs["loud"]
    assert loud["status"] == "pass", loud["status"]
    (answer,) = _steps(loud, "tool_result")
    assert (answer["is_error"], answer["output"]) == (False, "shipped")


def test_a_command_tools_bound_is_an_mcp_servers_bound_for_one_reply() -> None:
    assert MAX_OUTPUT_BYTES == MESSAGE_BYTES == 4 * 1024 * 1024
