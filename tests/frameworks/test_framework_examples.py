"""The framework examples (examples/frameworks/), each a repository as a team keeps it — the
agent as its framework's documentation writes it, no adapter — gated by the action as GitHub
runs it: a pull request that changes the agent, each side's environment built from that
side's files as that side's agent user, the agent run in the sandbox, its model calls going
through evalward's model proxy to a scripted provider that speaks every API and stream shape
and checks each request against the SDKs' types.

The OpenAI Agents SDK's Python example runs in `make test`; every example runs in
`make test-frameworks` (`-m frameworks`): each installs its framework from PyPI or npm.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.agentenv import needs_root, open_pr, run_gate, workspace

__all__ = ["workspace"]  # a fixture

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "frameworks"
IN_MAKE_TEST = {"openai-agents-python"}
OPENAI_KEY = "sk-real-openai-key-0123456789"
WIRE_NAME = {"semantic-kernel": "OrderPlugin-lookup_order"}
"""The tool's name on the wire, where the framework qualifies it (the fixtures say
`lookup_order`)."""
FIRST_AGENT_UID = 21001
"""The agent users of these runs: each example its own two (21001, and 21002 for the base
side, for the first; 21003 and 21004 for the next), so the sweep for leftover processes at
the end of another sandboxed run, another example's beside it included, cannot stop a
framework's long install or start-up."""
IN_TEXT = {"dspy-react"}
"""Frameworks whose tool protocol is in the prompt's text: the model answers in it."""


def user_text(body: dict[str, Any]) -> str:
    messages = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = messages[-1].get("content", "") if messages else ""
    return content if isinstance(content, str) else json.dumps(content)


def asks(*needles: str) -> Callable[[dict[str, Any]], bool]:
    return lambda body: all(n in user_text(body) for n in needles)


def react(thought: str, tool: str, args: dict[str, Any]) -> str:
    """A ReAct step as DSPy's ChatAdapter asks the model to write it."""
    return (
        f"[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n"
        f"[[ ## next_tool_args ## ]]\n{json.dumps(args)}\n\n[[ ## completed ## ]]"
    )


def extract(answer: str) -> str:
    return f"[[ ## reasoning ## ]]\nDone.\n\n[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]"


def script_in_text(model: ScriptedModelServer) -> None:
    """DSPy's ReAct: each step a fresh request whose trajectory holds the steps before it."""
    order, hello = "Where is my order 12345?", "Hello there!"
    extracting = "`[[ ## reasoning ## ]]`"
    model.script(asks(order, extracting), text(extract("Your order 12345 has shipped.")))
    model.script(asks(hello, extracting), text(extract("Hello! How can I help you today?")))
    model.script(asks(order, "[[ ## observation_0 ## ]]"), text(react("Shipped.", "finish", {})))
    # the conversation: turn 2's question (the whole conversation) holds turn 1's too
    late, number = "My order is late.", "It is 12345."
    model.script(asks(number, extracting), text(extract("Your order 12345 has shipped.")))
    model.script(asks(number, "[[ ## observation_0 ## ]]"), text(react("Shipped.", "finish", {})))
    model.script(asks(number), text(react("I look it up.", "lookup_order", {"order_id": "12345"})))
    model.script(
        asks(late, extracting), text(extract("Sorry it is late. What is your order number?"))
    )
    model.script(asks(late), text(react("I need its number.", "finish", {})))
    model.script(asks(order), text(react("I look it up.", "lookup_order", {"order_id": "12345"})))
    model.script(asks(hello), text(react("A greeting.", "finish", {})))


def example(name: str) -> dict[str, str]:
    """The example's files, as a repository holds them (no installed packages)."""
    folder = EXAMPLES / name
    return {
        str(path.relative_to(folder)): path.read_text()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "node_modules" not in path.parts
    }


def marks(name: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.registries] + ([] if name in IN_MAKE_TEST else [pytest.mark.frameworks])


EXAMPLE_NAMES = [n.name for n in sorted(EXAMPLES.iterdir()) if n.is_dir()]


@needs_root
@pytest.mark.parametrize("name", [pytest.param(n, marks=marks(n)) for n in EXAMPLE_NAMES])
def test_a_framework_agent_is_gated_in_the_sandbox_with_no_adapter(
    name: str, workspace: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    files = example(name)
    source = next(f for f in files if f.startswith("agent."))
    changed = files[source].replace("Look an order up", "Always look an order up")
    assert changed != files[source]
    event = open_pr(workspace, github, files, {source: changed}, suite={})
    tool = WIRE_NAME.get(name, "lookup_order")
    if name in IN_TEXT:
        script_in_text(model)
    else:
        # a conversation's turn 2 holds turn 1 too: its rule goes first
        model.script(
            "It is 12345.",
            tool_call(tool, {"order_id": "12345"}),
            text("Your order 12345 has shipped."),
        )
        model.script("My order is late.", text("Sorry it is late. What is your order number?"))
        model.script(
            "Where is my order 12345?",
            tool_call(tool, {"order_id": "12345"}),
            text("Your order 12345 has shipped."),
        )
        model.script("Hello there!", text("Hello! How can I help you today?"))

    run = run_gate(
        workspace,
        github,
        event,
        {"agent-user": str(FIRST_AGENT_UID + 2 * EXAMPLE_NAMES.index(name))},
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY=OPENAI_KEY,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    fixtures = {(f["side"], f["fixture"]): f for f in run.results()["fixtures"]}
    names = {"hello", "where-is-my-order", "order-conversation"}
    # adaptive reps: the minimum on the head (one pass settles a fixture working); a base run
    # only of the fixtures whose `toolNotCalled` the head's run is held to what the base's
    # offered its model (a program's tools are known as its requests name them)
    guarded = {"hello", "order-conversation"}
    assert set(fixtures) == {("head", f) for f in names} | {("base", f) for f in guarded}
    reps = [(f["side"], f["fixture"]) for f in run.results()["fixtures"]]
    assert sorted(reps) == sorted(fixtures)
    for (side, fixture), result in fixtures.items():  # the SDK's requests name its tool
        offered = result["trace"]["offered_tools"]
        assert tool in (offered or []), (side, fixture, offered, result.get("message"))
    for (side, fixture), result in fixtures.items():
        assert result["status"] == "pass", (side, fixture, result.get("message"))
        trace = result["trace"]
        assert trace["proxy_calls"], "its model calls went through the proxy"
        assert all(c["status"] == 200 for c in trace["proxy_calls"])
    order = fixtures[("head", "where-is-my-order")]["trace"]
    steps = [(s["type"], s.get("tool"), s.get("via")) for s in order["steps"]]
    if name in IN_TEXT:  # the model's ReAct text, and the tool call and result read from it
        steps = [step for step in steps if step[0] != "assistant"][:-1]
    else:
        assert steps[-1] == ("final", None, "proxy")
    assert steps[:3] == [
        ("input", None, None),
        ("tool_call", tool, "proxy"),
        ("tool_result", tool, "proxy"),
    ]
    call, result = (s for s in order["steps"] if s.get("tool") == tool)
    assert call["arguments"] == {"order_id": "12345"}
    assert "shipped" in result["output"]
    talk = fixtures[("head", "order-conversation")]  # the agent, unchanged, held it
    assert talk["end_reason"] == "user done" and talk["turns"] == 2
    held = [(s["turn"], s["type"]) for s in talk["trace"]["steps"] if s["type"] != "assistant"]
    assert held == [
        (1, "input"),
        (1, "final"),
        (2, "input"),
        (2, "tool_call"),
        (2, "tool_result"),
        (2, "final"),
    ]
    # the provider got evalward's key, never the agent's, on the API the framework speaks
    assert {c.headers["authorization"] for c in model.calls} == {f"Bearer {OPENAI_KEY}"}
    comment = github.comments_on(3)[0]["body"]
    assert "support-eval" in comment
    shutil.rmtree(workspace / ".evalward", ignore_errors=True)
