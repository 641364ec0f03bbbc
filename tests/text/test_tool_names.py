"""Tool names as users write them against the names frameworks put on the wire
(`text/tool_names.py`): a bare name means its one qualified call, two plugins' same name are
ambiguous (and both, for an assertion that fails closed), and a miss says what was called."""

from __future__ import annotations

import pytest

from evalward.text.tool_names import as_written, hint, parts, resolve, stands_for

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("lookup_order", ("lookup_order",)),
        ("OrderPlugin-lookup_order", ("OrderPlugin", "lookup_order")),
        ("mcp__orders__lookup_order", ("mcp", "orders", "lookup_order")),
        ("orders.lookup_order", ("orders", "lookup_order")),
        ("server/tool", ("server", "tool")),
        ("server:tool", ("server", "tool")),
        ("--", ()),
    ],
)
def test_a_name_splits_at_every_separator_frameworks_use(
    name: str, expected: tuple[str, ...]
) -> None:
    assert parts(name) == expected


def test_a_qualified_call_stands_for_its_bare_or_differently_qualified_name() -> None:
    assert stands_for("OrderPlugin-lookup_order", "lookup_order")
    assert stands_for("OrderPlugin-lookup_order", "OrderPlugin.lookup_order")
    assert stands_for("mcp__orders__lookup_order", "orders__lookup_order")
    assert not stands_for("lookup_order", "OrderPlugin-lookup_order")
    assert not stands_for("OrderPlugin-lookup_orders", "lookup_order")
    assert not stands_for("OrderPlugin-lookup_order", "--")


def test_a_bare_name_resolves_to_its_one_qualified_call() -> None:
    called = ["OrderPlugin-lookup_order", "send_email"]
    assert resolve("lookup_order", called) == {"OrderPlugin-lookup_order"}
    assert resolve("send_email", called) == {"send_email"}
    assert resolve("refund", called) == set()


def test_two_plugins_name_is_ambiguous_unless_the_assertion_must_fail_closed() -> None:
    called = ["A-send_email", "B-send_email"]
    assert resolve("send_email", called) == set()
    assert resolve("send_email", called, ambiguous=True) == {"A-send_email", "B-send_email"}
    # a call of the bare name does not hide the qualified ones from toolNotCalled
    both = ["send_email", "A-send_email"]
    assert resolve("send_email", both) == {"send_email"}
    assert resolve("send_email", both, ambiguous=True) == {"send_email", "A-send_email"}


def test_calls_are_rewritten_as_written_in_their_order() -> None:
    called = ["OrderPlugin-lookup_order", "other", "Pay.refund", "OrderPlugin-lookup_order"]
    assert as_written(called, ["lookup_order", "refund"]) == [
        "lookup_order",
        "other",
        "refund",
        "lookup_order",
    ]


def test_a_miss_names_the_ambiguity_or_the_closest_calls() -> None:
    assert hint("send_email", ["A-send_email", "B-send_email"]) == (
        "; send_email is ambiguous: A-send_email, B-send_email were called, name one of them"
    )
    assert hint("lookup_ordr", ["OrderPlugin-lookup_order", "x"]) == (
        "; did you mean OrderPlugin-lookup_order?"
    )
    assert hint("zzz", ["lookup_order"]) == ""
