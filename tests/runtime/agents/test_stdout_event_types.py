"""A bring-your-own agent's stdout line that is a JSON object whose `type` is an event's
spelt otherwise (`tool-call`, `toolCall`, `Tool_Call`) and that carries that event's fields
(a tool call's `tool`) is an error of the run naming the line, the type and the event it
resembles, on a one-shot and a REPL agent alike, as the same line on `$EVALWARD_EVENTS` is:
read as text, the tool call it holds went unseen, and a `toolNotCalled` of that tool passed.
A JSON object shaped like no event is still text (an agent may print JSON of its own): the
Vercel AI SDK's and Mastra's `tool-call` and `tool-result` stream parts, which name the tool
`toolName`, among them."""

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

line, channel = sys.argv[1], sys.argv[2]


def answer():
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

ONE_SHOT = "{{ run: [{python}, agent/bot.py, {line}, {channel}], stdin: text }}"
REPL = "{{ run: [{python}, agent/bot.py, {line}, repl], stdin: text, repl: {{ prompt: '> ' }} }}"


def tool_call(kind: str) -> dict[str, Any]:
    """A tool call of lookup_order as evalward's event has it, its `type` spelt `kind`."""
    return {"type": kind, "tool": "lookup_order", "arguments": {"order_id": "7"}}


def run_agent(
    repo: GitRepo, printed: dict[str, Any], channel: str
) -> tuple[int, dict[str, Any], str]:
    """Run, through `evalward run`, an agent that writes `printed` as one line on `channel`
    (stdout, events, or stdout as a REPL) and then its `final` event, under a fixture that
    says it never calls lookup_order: the exit code, the fixture's result, stderr."""
    command = REPL if channel == "repl" else ONE_SHOT
    line = json.dumps(json.dumps(printed))
    suite = one_agent_suite(
        "desk",
        "ask",
        command=command.format(python=sys.executable, line=line, channel=channel),
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
    code, fixture, stderr = run_agent(repo, tool_call(kind), channel)

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
    code, fixture, stderr = run_agent(repo, tool_call("message"), channel)

    assert code == 0, stderr[-3000:]
    assert fixture["status"] == "pass", fixture


@pytest.mark.parametrize(
    ("printed", "meant"),
    [
        ({"type": "Usage", "input_tokens": 812, "output_tokens": 40}, "usage"),
        ({"type": "ERROR", "content": "the CRM was down"}, "error"),
    ],
    ids=["Usage", "ERROR"],
)
def test_any_event_spelt_otherwise_with_its_fields_is_an_error(
    repo: GitRepo, printed: dict[str, Any], meant: str
) -> None:
    code, fixture, stderr = run_agent(repo, printed, "stdout")

    assert code == 1, stderr[-3000:]
    assert fixture["status"] == "error", fixture
    assert f"(did you mean {meant!r}?)" in fixture["message"], fixture["message"]


AI_SDK_TOOL_CALL = {
    "type": "tool-call",
    "toolCallId": "call_1",
    "toolName": "lookup_order",
    "args": {"order_id": "7"},
}
AI_SDK_TOOL_RESULT = {
    "type": "tool-result",
    "toolCallId": "call_1",
    "toolName": "lookup_order",
    "input": {"order_id": "7"},
    "output": {"status": "shipped"},
}


@pytest.mark.parametrize(
    ("printed", "channel"),
    [
        (AI_SDK_TOOL_CALL, "stdout"),
        (AI_SDK_TOOL_RESULT, "stdout"),
        (AI_SDK_TOOL_CALL, "repl"),
        ({"type": "Usage", "promptTokens": 812, "completionTokens": 40}, "stdout"),
        ({"type": "Error", "error": {"name": "AI_APICallError", "statusCode": 503}}, "stdout"),
    ],
    ids=["ai-sdk-tool-call", "ai-sdk-tool-result", "ai-sdk-repl", "Usage", "Error"],
)
def test_a_framework_s_part_whose_type_is_an_event_s_spelt_otherwise_is_text(
    repo: GitRepo, printed: dict[str, Any], channel: str
) -> None:
    code, fixture, stderr = run_agent(repo, printed, channel)

    assert code == 0, stderr[-3000:]
    assert fixture["status"] == "pass", fixture
