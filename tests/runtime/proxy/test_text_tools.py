"""DSPy's ReAct protocol, read from its text: the call a reply asks for, the results a
request's trajectory carries (the texts as DSPy 3 writes them)."""

from __future__ import annotations

import json

import pytest

from evalward.rundata.trace import Trace
from evalward.runtime.proxy.observed import TrafficObserver
from evalward.runtime.proxy.text_tools import TextCall, calls_in_reply, offered, trajectory
from evalward.runtime.proxy.wire.base import Turn

pytestmark = pytest.mark.unit

REPLY = """[[ ## next_thought ## ]]
I should look the order up.

[[ ## next_tool_name ## ]]
lookup_order

[[ ## next_tool_args ## ]]
{"order_id": "12345"}

[[ ## completed ## ]]"""

REQUEST = """[[ ## question ## ]]
Where is my order 12345?

[[ ## trajectory ## ]]
[[ ## thought_0 ## ]]
I should look the order up.

[[ ## tool_name_0 ## ]]
lookup_order

[[ ## tool_args_0 ## ]]
{"order_id": "12345"}

[[ ## observation_0 ## ]]
Order 12345 has shipped.

[[ ## thought_1 ## ]]
Done.

[[ ## tool_name_1 ## ]]
finish

[[ ## tool_args_1 ## ]]
{}

[[ ## observation_1 ## ]]
Completed.

Respond with the corresponding output fields, starting with the field `[[ ## reasoning ## ]]`."""


def test_a_react_reply_names_its_call_in_either_adapter() -> None:
    call = TextCall("lookup_order", {"order_id": "12345"})
    assert calls_in_reply(REPLY) == [call]
    as_json = (
        '{"next_thought": "look", "next_tool_name": "lookup_order", '
        '"next_tool_args": {"order_id": "12345"}}'
    )
    assert calls_in_reply(as_json) == [call]
    # Python's dict literal, as a model may write DSPy's `dict[str, Any]`
    assert calls_in_reply(REPLY.replace('{"order_id": "12345"}', "{'order_id': '12345'}")) == [call]
    assert calls_in_reply(REPLY.replace("lookup_order", "finish")) == []
    assert calls_in_reply("Your order has shipped.") == []


def test_arguments_are_only_what_the_trace_can_write() -> None:
    """A lone surrogate in either spelling is U+FFFD; a literal JSON cannot hold is none."""
    written = {
        '{"q": "a\\ud800b"}': {"q": "a\ufffdb"},
        "{'q': 'a\\ud800b', 'pair': (1, 2)}": {"q": "a\ufffdb", "pair": [1, 2]},
        "{'q': b'\\xff'}": {},
        "{'q': {1, 2}}": {},
        "{'q': 1j}": {},
        "{'q': 1e999}": {},
        '{"q": NaN}': {},
    }
    for args, expected in written.items():
        (call,) = calls_in_reply(REPLY.replace('{"order_id": "12345"}', args))
        assert call.arguments == expected, args
        json.dumps(call.arguments, ensure_ascii=False, allow_nan=False).encode()
    as_json = '{"next_tool_name": "lookup_order", "next_tool_args": {"q": "\\udc00"}}'
    assert calls_in_reply(as_json) == [TextCall("lookup_order", {"q": "\ufffd"})]


def test_a_trajectory_gives_each_tool_its_observation_and_finish_is_no_tool() -> None:
    assert trajectory(REQUEST) == [
        TextCall("lookup_order", {"order_id": "12345"}, "Order 12345 has shipped.")
    ]
    assert trajectory("[[ ## question ## ]]\nhi") == []


SYSTEM = """Your input fields are:
1. `question` (str):
2. `trajectory` (str):
Your output fields are:
1. `next_thought` (str):
2. `next_tool_name` (Literal['lookup_order', 'finish']):
3. `next_tool_args` (dict[str, Any]):
All interactions will be structured in the following way, with the appropriate values filled in.

[[ ## next_tool_name ## ]]
{next_tool_name}"""
"""What DSPy's ChatAdapter asks a ReAct step for, in its system message (abridged)."""


def test_the_proxy_view_turns_the_text_protocol_into_tool_steps() -> None:
    trace = Trace()
    observer = TrafficObserver(trace)
    asked = {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "?"}]}
    observer.reply(Turn(text=REPLY), "openai/gpt-4.1-mini", request=asked)
    body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": REQUEST}]}
    observer.request([], body=body)
    observer.request([], body=body)  # a retry, or the next step: the result is taken once
    steps = [(s.type.value, s.tool) for s in trace.steps]
    assert steps == [
        ("assistant", None),
        ("tool_call", "lookup_order"),
        ("tool_result", "lookup_order"),
    ]
    assert trace.steps[2].output == "Order 12345 has shipped."
    assert trace.steps[1].arguments == {"order_id": "12345"}
    # a trajectory step no reply of this run asked for (a made-up history) is no step
    other = TrafficObserver(Trace())
    other.request([], body=body)
    assert other.trace.steps == []


def test_a_reply_whose_request_asked_for_no_react_fields_calls_no_tool_by_its_text() -> None:
    trace = Trace()
    observer = TrafficObserver(trace)
    plain = {
        "messages": [{"role": "system", "content": "Answer."}, {"role": "user", "content": REQUEST}]
    }
    observer.reply(Turn(text=REPLY), "openai/gpt-4.1-mini", request=plain)
    observer.reply(Turn(text=REPLY), "openai/gpt-4.1-mini")
    assert [s.type.value for s in trace.steps] == ["assistant", "assistant"]


def react_request(system: str) -> dict[str, object]:
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": "Hi"}]}


LISTED = """Your output fields are:
1. `next_thought` (str)
2. `next_tool_name` (Literal['lookup_order', 'orders.refund_order', 'finish'])
3. `next_tool_args` (dict[str, Any])
In adhering to this structure, your objective is:
        When selecting the next_tool_name and its next_tool_args, the tool must be one of:

        (1) lookup_order, whose description is <desc>Look it up.</desc>. It takes arguments {}.
        (2) orders.refund_order, whose description is <desc>Refund.</desc>. It takes arguments {}.
        (3) finish, whose description is <desc>Done.</desc>. It takes arguments {}."""


@pytest.mark.parametrize(
    ("system", "names"),
    [
        (LISTED, ["lookup_order", "orders.refund_order"]),
        (LISTED.split("In adhering")[0], ["lookup_order", "orders.refund_order"]),
        (
            "next_tool_name\n  (1) lookup_order. It takes arguments {}.\n  (2) finish.",
            ["lookup_order"],
        ),
        (
            "[[ ## next_tool_name ## ]]\n{next_tool_name}        # note: the value you produce "
            "must exactly match (no extra characters) one of: lookup_order; finish",
            ["lookup_order"],
        ),
        ("[[ ## next_tool_name ## ]]\n(1) lookup_order: looks it up", None),
        ("[[ ## next_tool_name ## ]]\n`next_tool_name` (Literal['finish'])", None),
    ],
    ids=["listed", "literal-only", "undescribed", "one-of", "unreadable", "finish-only"],
)
def test_a_react_request_offers_the_tools_its_instructions_list_or_is_not_known(
    system: str, names: list[str] | None
) -> None:
    assert offered(react_request(system)) == names
