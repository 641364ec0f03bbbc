"""Server-sent events read as they arrive: whatever the line endings the standard allows
(CRLF, LF, CR, mixed) and wherever the chunks split, the events and their bytes are the same
as when the stream is read whole, and without keep-alives the bytes add up to the stream."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalward.http.sse import EventReader

pytestmark = pytest.mark.unit

ENDS = st.sampled_from(["\r\n", "\n", "\r"])
LINE = st.tuples(
    st.sampled_from(["data", "event", ":keep-alive", "id"]),
    st.text(alphabet=st.characters(blacklist_characters="\r\n"), max_size=12),
)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    text = ""
    for _ in range(draw(st.integers(1, 5))):
        for field, value in draw(st.lists(LINE, min_size=1, max_size=3)):
            text += (field if field.startswith(":") else f"{field}: {value}") + draw(ENDS)
        text += draw(ENDS)  # the blank line that ends the event
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate: bytes that are not UTF-8


def read(stream: bytes, cuts: list[int]) -> tuple[list[tuple[str | None, str]], bytes]:
    reader, events, at = EventReader(), [], 0
    for cut in [*sorted(cuts), len(stream)]:
        events += reader.feed(stream[at:cut])
        at = cut
    events += reader.finish()
    return [(e.event, e.data) for e in events], b"".join(e.raw for e in events)


def test_a_blank_line_of_any_line_ending_ends_an_event_and_crlf_is_one_line_end() -> None:
    stream = b"data: 1\r\n\r\ndata: 2\n\ndata: 3\r\rdata: a\r\ndata: b\n\r\ndata: 4\r\n\n"
    events, _ = read(stream, [])
    assert events == [(None, "1"), (None, "2"), (None, "3"), (None, "a\nb"), (None, "4")]


@given(stream=streams(), data=st.data())
def test_events_are_the_same_wherever_the_chunks_split(stream: bytes, data: st.DataObject) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=8))
    whole, whole_raw = read(stream, [])
    events, raw = read(stream, cuts)
    assert events == whole and raw == whole_raw
    if b":" not in stream.replace(b": ", b""):  # no keep-alive block, which is not an event
        assert raw == stream
