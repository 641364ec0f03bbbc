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

import shutil
from pathlib import Path

import pytest

from agentenv import needs_root, open_pr, run_gate, workspace
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call

__all__ = ["workspace"]  # a fixture

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "frameworks"
IN_MAKE_TEST = {"openai-agents-python"}
OPENAI_KEY = "sk-real-openai-key-0123456789"


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


@needs_root
@pytest.mark.parametrize(
    "name",
    [pytest.param(n.name, marks=marks(n.name)) for n in sorted(EXAMPLES.iterdir()) if n.is_dir()],
)
def test_a_framework_agent_is_gated_in_the_sandbox_with_no_adapter(
    name: str, workspace: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    files = example(name)
    source = next(f for f in files if f.startswith("agent."))
    changed = files[source].replace("Look an order up", "Always look an order up")
    assert changed != files[source]
    event = open_pr(workspace, github, files, {source: changed}, suite={})
    # a conversation's turn 2 holds turn 1 too: its rule goes first
    model.script(
        "It is 12345.",
        tool_call("lookup_order", {"order_id": "12345"}),
        text("Your order 12345 has shipped."),
    )
    model.script("My order is late.", text("Sorry it is late. What is your order number?"))
    model.script(
        "Where is my order 12345?",
        tool_call("lookup_order", {"order_id": "12345"}),
        text("Your order 12345 has shipped."),
    )
    model.script("Hello there!", text("Hello! How can I help you today?"))

    run = run_gate(
        workspace,
        github,
        event,
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY=OPENAI_KEY,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    fixtures = {(f["side"], f["fixture"]): f for f in run.results()["fixtures"]}
    names = {"hello", "where-is-my-order"} | (
        {"order-conversation"} if "order-conversation" in files["evals.yaml"] else set()
    )
    assert set(fixtures) == {(side, fixture) for side in ("base", "head") for fixture in names}
    for (side, fixture), result in fixtures.items():
        assert result["status"] == "pass", (side, fixture, result.get("message"))
        trace = result["trace"]
        assert trace["proxy_calls"], "its model calls went through the proxy"
        assert all(c["status"] == 200 for c in trace["proxy_calls"])
    order = fixtures[("head", "where-is-my-order")]["trace"]
    assert [(s["type"], s.get("tool"), s.get("via")) for s in order["steps"]] == [
        ("input", None, None),
        ("tool_call", "lookup_order", "proxy"),
        ("tool_result", "lookup_order", "proxy"),
        ("final", None, "proxy"),
    ]
    assert order["steps"][1]["arguments"] == {"order_id": "12345"}
    if "order-conversation" in names:  # the agent, unchanged, held a conversation
        talk = fixtures[("head", "order-conversation")]
        assert talk["end_reason"] == "user done" and talk["turns"] == 2
        assert [(s["turn"], s["type"]) for s in talk["trace"]["steps"]] == [
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
