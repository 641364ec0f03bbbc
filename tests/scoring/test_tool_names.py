"""Tool names as users write them: qualified wire names match, ambiguity does not, and a
near miss says what was called."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.rundata.results import Status
from scoring.test_assertions import run, trace_of

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("assertion", "tools", "expected"),
    [
        # Semantic Kernel, dotted namespaces, MCP servers (with and without the mcp__ prefix)
        (
            {"type": "toolCalled", "tool": "lookup_order"},
            ["OrderPlugin-lookup_order"],
            Status.passed,
        ),
        ({"type": "toolCalled", "tool": "lookup_order"}, ["orders.lookup_order"], Status.passed),
        ({"type": "toolCalled", "tool": "lookup_order"}, ["orders__lookup_order"], Status.passed),
        (
            {"type": "toolCalled", "tool": "lookup_order"},
            ["mcp__orders__lookup_order"],
            Status.passed,
        ),
        # a qualified name as written matches the wire's separator
        (
            {"type": "toolCalled", "tool": "OrderPlugin.lookup_order"},
            ["OrderPlugin-lookup_order"],
            Status.passed,
        ),
        # ... but not another plugin's, nor a name that only ends in the same letters
        (
            {"type": "toolCalled", "tool": "Billing.lookup_order"},
            ["OrderPlugin-lookup_order"],
            Status.failed,
        ),
        ({"type": "toolCalled", "tool": "order"}, ["lookup_order"], Status.failed),
        # two plugins with the same function: the bare name is ambiguous
        ({"type": "toolCalled", "tool": "lookup"}, ["A-lookup", "B-lookup"], Status.failed),
        ({"type": "toolCalled", "tool": "A.lookup"}, ["A-lookup", "B-lookup"], Status.passed),
        # the same qualified name called twice is not ambiguous
        ({"type": "toolCalled", "tool": "lookup"}, ["A-lookup", "A-lookup"], Status.passed),
        # ordering and the other tool assertions see the same names
        (
            {"type": "toolCalled", "tool": "clarify", "before": ["refund"]},
            ["P-clarify", "P-refund"],
            Status.passed,
        ),
        (
            {"type": "toolCalled", "tool": "clarify", "before": ["refund"]},
            ["P-refund", "P-clarify"],
            Status.failed,
        ),
        ({"type": "toolNotCalled", "tool": "send_email"}, ["Mail-send_email"], Status.failed),
        # ... and a tool that must not be called is not hidden by two plugins' copies of it
        (
            {"type": "toolNotCalled", "tool": "send_email"},
            ["Mail-send_email", "Other-send_email"],
            Status.failed,
        ),
        (
            {"type": "toolNotCalled", "tool": "send_email", "after": ["lookup"]},
            ["A-lookup", "B-lookup", "Mail-send_email"],
            Status.failed,
        ),
        ({"type": "toolSequence", "tools": ["a", "b"]}, ["S__a", "S__b"], Status.passed),
        (
            {"type": "trajectory", "tools": ["a", "b"], "mode": "strict"},
            ["S.a", "S.b"],
            Status.passed,
        ),
        ({"type": "toolArgs", "tool": "a", "args": {"k": 1}}, [("S-a", {"k": 1})], Status.passed),
    ],
)
def test_a_qualified_tool_name_matches_the_name_users_write(
    assertion: dict[str, Any], tools: list[Any], expected: Status
) -> None:
    status, message = run(assertion, trace_of(*tools))
    assert status is expected, message


def test_the_calls_listed_are_quoted_as_the_model_named_them() -> None:
    """A name is the model's to choose: unquoted, `refund, greet` reads as two calls."""
    status, message = run(
        {"type": "trajectory", "tools": ["refund", "greet"]}, trace_of("refund, greet")
    )
    assert status is Status.failed
    assert message == (
        "tool calls 'refund, greet' do not match the reference 'refund', 'greet' (strict)"
    )


def test_a_near_miss_lists_the_calls_with_a_did_you_mean() -> None:
    status, message = run(
        {"type": "toolCalled", "tool": "lookup_orders"},
        trace_of("OrderPlugin-lookup_order", "greet"),
    )
    assert status is Status.failed
    assert message == (
        "lookup_orders was never called (calls: 'OrderPlugin-lookup_order', 'greet'); "
        "did you mean OrderPlugin-lookup_order?"
    )
    _, sequence = run(
        {"type": "toolSequence", "tools": ["greet", "lookup"]}, trace_of("greet", "lookup_order")
    )
    assert sequence.endswith("calls were 'greet', 'lookup_order'; did you mean lookup_order?")
    _, args = run({"type": "toolArgs", "tool": "lookup_ordr", "args": {}}, trace_of("lookup_order"))
    assert args.endswith("did you mean lookup_order?")


def test_an_ambiguous_bare_name_says_which_names_to_choose_from() -> None:
    _, message = run({"type": "toolCalled", "tool": "lookup"}, trace_of("B-lookup", "A-lookup"))
    assert message.endswith("lookup is ambiguous: A-lookup, B-lookup were called, name one of them")
