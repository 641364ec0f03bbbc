"""`plan.preflight.tool_refs`: the tools a declarative agent's calls are recorded by, known
before a run only when its definition lists them all, and the fields of a fixture's
assertions that name one it does not have."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.plan.preflight.tool_refs import agent_tools, unknown_tools, unoffered_tools
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.models import EvalFixtureSpec

pytestmark = pytest.mark.unit

TOOLS = [
    {"name": "lookup_order", "mock": {"output": "shipped"}},
    {"type": "bash", "enabled": False},
]


def agent(**spec: Any) -> AgentSpec:
    return AgentSpec.model_validate({"models": ["openai/gpt-4.1-mini"], "tools": TOOLS, **spec})


def fixture(*assertions: dict[str, Any]) -> EvalFixtureSpec:
    return EvalFixtureSpec.model_validate(
        {
            "targetAgent": "clerk",
            "input": {"type": "prompt", "payload": {"prompt": "Where is my order?"}},
            "assertions": list(assertions),
        }
    )


def test_an_agents_own_tools_count_disabled_ones_too() -> None:
    assert agent_tools(agent()) == ["lookup_order", "bash"]


def test_an_mcp_servers_tools_count_only_when_its_allow_list_names_them() -> None:
    allowed = {"url": "http://127.0.0.1:9/mcp", "tools": {"allow": ["a", "b"], "deny": ["b"]}}
    assert agent_tools(agent(mcpServers={"orders": allowed})) == [
        "lookup_order",
        "bash",
        "orders__a",
    ]
    listed = {"url": "http://127.0.0.1:9/mcp"}
    assert agent_tools(agent(mcpServers={"orders": allowed, "more": listed})) is None


def test_a_bring_your_own_agents_tools_are_not_known() -> None:
    byo = AgentSpec.model_validate({"runtime": {"command": ["python3", "agent.py"]}})
    assert agent_tools(byo) is None
    assert unknown_tools("byo", byo, fixture({"type": "toolCalled", "tool": "anything"})) == []


def test_each_field_naming_an_unknown_tool_is_found_once_in_order() -> None:
    spec = fixture(
        {"type": "toolCalled", "tool": "lookup_order", "before": ["bash", "rm"]},
        {"type": "assertSet", "assertions": [{"type": "toolArgs", "tool": "lookup_ordr"}]},
        {"type": "trajectory", "tools": ["lookup_order", "bahs"]},
    )
    found = unknown_tools("clerk", agent(), spec)
    assert [(f.at, f.refused) for f in found] == [
        (("spec", "assertions", 0, "before", 1), False),  # a guard, maybe: close to no tool
        (("spec", "assertions", 1, "assertions", 0, "tool"), True),
        (("spec", "assertions", 2, "tools", 1), True),
    ]
    assert found[1].message == (
        "`toolArgs` names the tool 'lookup_ordr', which agent 'clerk' does not have (did you "
        "mean 'lookup_order'?), so the agent cannot pass it: name one of the agent's tools "
        "(lookup_order, bash)"
    )
    assert "(did you mean 'bash'?), so the agent cannot pass it" in found[2].message


def test_a_check_passing_without_a_call_is_refused_when_the_name_is_close() -> None:
    spec = fixture(
        {"type": "toolNotCalled", "tool": "lookup_ordr", "after": ["delete_account"]},
        {"type": "trajectory", "tools": ["lookup_order", "lookup_ordr"], "mode": "subset"},
    )
    found = unknown_tools("clerk", agent(), spec)
    assert [(f.at, f.refused) for f in found] == [
        (("spec", "assertions", 0, "tool"), True),
        (("spec", "assertions", 0, "after", 0), False),
        (("spec", "assertions", 1, "tools", 1), True),
    ]
    assert "so it passes whatever the agent does" in found[0].message
    assert "so it passes unless the model calls a tool it is not offered" in found[1].message


def test_a_shadowed_or_replayed_name_stands_in_for_a_tool_only_when_the_agent_has_it() -> None:
    spec = EvalFixtureSpec.model_validate(
        {
            "targetAgent": "clerk",
            "input": {"type": "prompt", "payload": {"prompt": "Where is my order?"}},
            "shadowTools": ["bash", "lookup_ordr", "send_fax"],
            "toolReplay": [
                {"tool": "lookup_order", "output": "shipped"},
                {"tool": "lookup-order", "output": "shipped"},
            ],
            "assertions": [{"type": "contains", "value": "shipped"}],
        }
    )
    found = unknown_tools("clerk", agent(), spec)
    assert [(f.at, f.refused) for f in found] == [
        (("spec", "shadowTools", 1), True),
        (("spec", "shadowTools", 2), False),  # a recording of a tool the agent lost, maybe
        (("spec", "toolReplay", 1, "tool"), True),
    ]
    assert found[0].message == (
        "`shadowTools` names the tool 'lookup_ordr', which agent 'clerk' does not have (did "
        "you mean 'lookup_order'?), so it stands in for none and the tool meant runs: name one "
        "of the agent's tools (lookup_order, bash)"
    )
    assert found[2].message.startswith("`toolReplay` names the tool 'lookup-order'")


GUARDS = fixture(
    {"type": "toolNotCalled", "tool": "refund_order"},
    {"type": "assertSet", "assertions": [{"type": "toolCalled", "tool": "lookup_order"}]},
    {"type": "toolCalled", "tool": "clarify", "before": ["mcp__billing__void"]},
)
"""Guards of `refund_order` and of a qualified `mcp__billing__void`, and a check that wants a
call of `lookup_order` (which fails without one: no guard)."""


@pytest.mark.parametrize(
    ("base", "head", "failed"),
    [
        (
            (["refund_order", "mcp__billing__void", "lookup_order"], False),
            [],
            {"refund_order", "mcp__billing__void"},
        ),
        ((["refund_order"], False), ["issue_refund"], {"refund_order"}),
        ((["billing__refund_order"], False), ["refund_order"], set()),
        ((["refund_order"], True), ["orders.refund_order"], set()),
        ((["delete_account"], False), [], set()),
        ((None, False), ["refund_order"], {"mcp__billing__void"}),
    ],
    ids=["offers-none", "renamed", "unqualified", "qualified", "neither", "unknown"],
)
def test_a_guard_fails_where_the_base_offered_its_tool_and_the_head_never_did(
    base: tuple[list[str] | None, bool], head: list[str], failed: set[str]
) -> None:
    found = unoffered_tools("clerk", GUARDS, base, head)
    assert {tool.name for tool in found} == failed
    for tool in found:
        assert not tool.stand_in and "bypass label" in tool.message, tool
        known = "is not known" if base[0] is None else "removed or renamed it:"
        assert known in tool.message, tool.message
