"""The one walk the model proxy's checks read a request or a stream event by: every value in
the document's order, a key's values passed over on request, and nothing nested past
`MAX_DEPTH` (a stream event is read with no bound of its own)."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.http.sse import Event
from evalward.runtime.proxy.wire.unreported import DeltaTally
from evalward.runtime.proxy.wire.walk import MAX_DEPTH, walk

pytestmark = pytest.mark.unit


def nested(levels: int, inner: Any) -> Any:
    """`inner` inside `levels` lists."""
    for _ in range(levels):
        inner = [inner]
    return inner


def test_each_value_comes_with_its_key_before_what_it_holds_in_the_document_s_order() -> None:
    document = {"a": [1, {"b": "x"}], "skipped": {"c": 2}, "d": None}
    seen = list(walk(document, skip={"skipped"}))
    assert seen == [
        (None, document),
        ("a", [1, {"b": "x"}]),
        (None, 1),
        (None, {"b": "x"}),
        ("b", "x"),
        ("d", None),
    ]


def test_a_list_or_object_nested_past_the_bound_is_passed_over_unread() -> None:
    inside, past = nested(MAX_DEPTH, ["text"]), nested(MAX_DEPTH + 1, ["text"])
    assert ("text" in (value for _, value in walk(inside))) is True
    assert ("text" in (value for _, value in walk(past))) is False


@pytest.mark.parametrize(("levels", "counted"), [(MAX_DEPTH - 2, True), (500, False)])
def test_a_stream_event_nested_deeper_than_a_request_may_is_tallied_to_the_bound(
    levels: int, counted: bool
) -> None:
    content = "[" * levels + '"abcdefgh"' + "]" * levels
    data = '{"choices": [{"delta": {"content": ' + content + '}}], "delta": "abcd"}'
    tally = DeltaTally()
    tally.feed(Event(None, data, b""))
    assert tally.chars == (12 if counted else 4)  # read, and its top-level delta counted
