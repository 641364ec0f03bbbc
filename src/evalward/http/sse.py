"""Server-sent events, the framing every model API streams in: read as bytes arrive, written
back event by event.

The model proxy passes an upstream stream to the agent one whole event at a time, exactly
as it came (`Event.raw`), so the agent's first token is not held back for the rest, and
reads each event's `data` on the way to meter the call and see what the model asked for.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from evalward.errors import EventStreamError
from evalward.text import jsontext

_END = rb"(?:\r\n|\n|\r(?!\n))"
_BOUNDARY = re.compile(_END + _END)
"""A blank line: a line's end (CRLF, LF or CR, as the standard allows) and another."""
_LONGEST_BOUNDARY = 4
_LINE = re.compile(r"\r\n|\n|\r")
MAX_EVENT_BYTES = 16 * 1024 * 1024
"""An event longer than this is not one a model API sends: the stream is refused."""


@dataclass(frozen=True)
class Event:
    """One event: its `event:` name (None when it has none), its `data` lines joined by
    newlines, and the bytes it arrived as, blank line included."""

    event: str | None
    data: str
    raw: bytes

    def json(self) -> Any:
        """The data as JSON; ValueError when it is not (`[DONE]`, a comment-only event)."""
        return jsontext.loads(self.data)


class EventReader:
    """Splits a byte stream into events as they complete; bytes of an unfinished event wait
    for the next chunk."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[Event]:
        # the bytes already pending held no blank line, so one can only end in this chunk:
        # the search starts just before it, and a long event costs one pass, not one per chunk
        search_from = max(0, len(self._pending) - _LONGEST_BOUNDARY + 1)
        self._pending += chunk
        events: list[Event] = []
        start = 0
        for match in _BOUNDARY.finditer(self._pending, search_from):
            if match.end() == len(self._pending) and self._pending.endswith(b"\r"):
                break  # a CR last: the LF of a CRLF may come in the next chunk
            raw = bytes(self._pending[start : match.end()])
            start = match.end()
            event = parse(raw)
            if event is not None:
                events.append(event)
        del self._pending[:start]
        if len(self._pending) > MAX_EVENT_BYTES:
            raise EventStreamError(f"an event is longer than {MAX_EVENT_BYTES:,} bytes")
        return events

    def finish(self) -> list[Event]:
        """What is left when the stream ends: an event without its closing blank line."""
        raw, self._pending = bytes(self._pending), bytearray()
        event = parse(raw + b"\n\n") if raw.strip() else None
        return [] if event is None else [Event(event.event, event.data, raw)]


def parse(raw: bytes) -> Event | None:
    """One event's bytes as an Event; None for a block of comments only (a keep-alive)."""
    name: str | None = None
    data: list[str] = []
    seen = False
    for line in _LINE.split(raw.decode("utf-8", "replace")):
        if not line or line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        seen = True
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return Event(name, "\n".join(data), raw) if seen else None


def encode(data: object, event: str | None = None) -> bytes:
    """One event carrying `data` as compact JSON (or as it is, for a string like `[DONE]`)."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()
