"""A bring-your-own agent's stdout line that is a JSON object whose `type` is an event's
spelt otherwise (`tool-call`, `toolCall`, `Tool_Call`) is an error of the run naming the line,
the type and the event it resembles, on a one-shot and a REPL agent alike, as the same line on
`$EVALWARD_EVENTS` is: read as text, the tool call it holds went unseen, and a
`toolNotCalled` of that tool passed. A JSON object whose `type` is like no event's is still
text (an agent may print JSON of its own)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENT = """\
import json, os, sys

kind, channel = sys.argv[1], sys.argv[2]


def answer():
    line = json.dumps({"type": kind, "tool": "lookup_order", "arguments": {"order_id": "7"}})
    if channel == "events":
        with open(os.environ["EVALWARD_EVENTS"], "a") as events:
            events.write(line + "\\n")
    else:
        print(line)
    print(json.dumps({"type": "final", "content": "Hello, shipped"}), flush=True)


if channel == "repl":
    while True:
        try:
            input("> ")
        except EOFError:
            break
        answer()
else:
    sys.stdin.readline()
    answer()
"""

ONE_SHOT = "{{ run: [{python}, agent/bot.py, {kind}, {channel}], stdin: text }}"
REPL = "{{ run: [{python}, agent/bot.py, {kind}, repl], stdin: text, repl: {{ prompt: '> ' }} }}"


def run_agent(repo: GitRepo, kind: str, channel: str) -> tuple[int, dict[str, Any], str]:
    """Run, through `evalward run`, an agent that writes one line of type `kind` on `channel`
    (stdout, events, or stdout as a REPL) and then its `final` event, under a fixture that
    says it never calls lookup_order: the exit code, the fixture's result, stderr."""
    command = REPL if channel == "repl" else ONE_SHOT
    suite = one_agent_suite(
        "desk",
        "ask",
        command=command.format(python=sys.executable, kind=json.dumps(kind), channel=channel),
        prompt="where is my order?",
        assertion="{ type: toolNotCalled, tool: lookup_order }",
    )
    repo.commit("an agent", {"agents.yaml": suite, "agent/bot.py": AGENT})
    done = evalward("run", ".", "--json", "--no-history", "--no-cache", cwd=repo.path)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    (fixture,) = json.loads(done.stdout)["fixtures"]
    return done.returncode, fixture, done.stderr


@pytest.mark.parametrize(
    ("kind", "channel", "where"),
    [
        ("tool-call", "stdout", "stdout line 1 is"),
        ("toolCall", "stdout", "stdout line 1 is"),
        ("Tool_Call", "stdout", "stdout line 1 is"),
        ("tool-call", "repl", "the agent wrote stdout line 1, which is"),
        ("tool-call", "events", "$EVALWARD_EVENTS line 1 is"),
    ],
    ids=["tool-call", "toolCall", "Tool_Call", "repl", "events-file"],
)
def test_a_misspelt_event_type_is_an_error_naming_the_event_it_resembles(
    repo: GitRepo, kind: str, channel: str, where: str
) -> None:
    code, fixture, stderr = run_agent(repo, kind, channel)

    assert code == 1, stderr[-3000:]
    assert fixture["status"] == "error", fixture
    said = (
        f"{where} not a trace event (unknown event type {kind!r} (did you mean 'tool_call'?); "
        "expected one of assistant, tool_call, tool_result, usage, final, error)"
    )
    assert fixture["message"].startswith(f"the run failed: {said}"), fixture["message"]


@pytest.mark.parametrize("channel", ["stdout", "repl"])
def test_json_of_the_agent_s_own_whose_type_is_like_no_event_s_is_text(
    repo: GitRepo, channel: str
) -> None:
    code, fixture, stderr = run_agent(repo, "message", channel)

    assert code == 0, stderr[-3000:]
    assert fixture["status"] == "pass", fixture
