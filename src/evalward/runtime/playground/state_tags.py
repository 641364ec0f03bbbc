"""A service's state read again without its transfer, by HTTP validators (RFC 9110 §8.8.3,
§13.1.2): a service that answers its state with a strong `ETag` as it starts is sent that
tag back (`If-None-Match`) on every later read of a service of its playground, on the same
side, and a `304 Not Modified` carrying that very tag stands for the document first read
with it, neither sent nor parsed again. Such a read also asks for a delta (`state_delta.py`).

Runs that start together would each read their fresh service's state whole before any
answer gave its tag: the first of them reads it, and the others wait for that answer
(`first_read`), so that they are answered 304 as later runs are. A service that answered
without a tag is not waited for again.

The service is the side's own code, trusted as far as its state answers are; what it says
of its tags is still held to the standard, and anything else is the run's error
(`answered`). A weak tag on a whole answer (frameworks send one by default) only says the
bytes may differ: it is not kept, and the state is read whole as from a service without tags.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from evalward.runtime.playground.base import LivePlayground, keep_latest

TAG_LIMIT = 256
"""Bytes of an ETag at most, its quotes included."""
NOT_MODIFIED = 304
IM_USED = 226


def kept(live: LivePlayground, source: str) -> tuple[str, Any, int] | None:
    """The tag a service of this playground, as defined, and side started with, the
    document read with it and the bytes it was read from."""
    tags = live.templates.state_tags if live.templates is not None else None
    held = tags.get(_key(live, source)) if tags is not None else None
    if held is None or held[0] != live.source.spec:  # another definition of that name
        return None
    return held[1], held[2], held[3]


def keep(live: LivePlayground, source: str, tag: str, document: Any, size: int) -> None:
    """Remember the tag a fresh service answered its state with, the document read and the
    bytes it was read from."""
    if live.templates is None:
        return
    keep_latest(
        live.templates.state_tags, _key(live, source), (live.source.spec, tag, document, size)
    )
    live.templates.compared.keep(document)


@contextlib.asynccontextmanager
async def first_read(live: LivePlayground, source: str) -> AsyncIterator[None]:
    """Around a read of a fresh service's state: while another run's first read of this
    playground's service (as defined, on this side) is under way, wait for its answer, which
    may give the tag this read then sends."""
    reads = live.templates.state_reads if live.templates is not None else None
    if reads is None:
        yield
        return
    key = _key(live, source)
    under_way = reads.get(key)
    if under_way is not None and under_way[0] == live.source.spec:
        await under_way[1].wait()
        yield
        return
    answered = asyncio.Event()
    keep_latest(reads, key, (live.source.spec, answered))
    try:
        yield
    finally:
        answered.set()


def answered(
    live: LivePlayground, where: str, status: int, headers: Mapping[str, str], sent: str | None
) -> str | None:
    """The strong tag a state answer carries (None: none, or a weak one on a whole answer),
    `sent` the tag its read sent. PlaygroundError, naming `where`, for a 304 to a read that
    sent no tag, or that carries another tag, none or a weak one; a 226 (a delta) to a read
    that sent none; a tag that is malformed (`_malformed`)."""
    values = _all(headers, "etag")
    if status == IM_USED and sent is None:
        raise live.error(f"{where} answered 226 IM Used (a delta) to a read that sent no ETag")
    if status == NOT_MODIFIED:
        if sent is None:
            raise live.error(f"{where} answered 304 Not Modified to a read that sent no ETag")
        if not values:
            raise live.error(f"{where} answered 304 Not Modified without an ETag")
    if not values:
        return None
    if len(values) > 1:
        raise live.error(f"{where} answered {len(values)} ETag headers, not one")
    tag = values[0]
    if (why := _malformed(tag)) is not None:
        raise live.error(f"{where} answered an ETag that {why}")
    weak = tag.startswith("W/")
    if status == NOT_MODIFIED:
        if weak:
            raise live.error(f"{where} answered 304 Not Modified with a weak ETag")
        if tag != sent:
            raise live.error(
                f"{where} answered 304 Not Modified with another ETag than the one it was sent"
            )
    return None if weak else tag


def _malformed(tag: str) -> str | None:
    """Why `tag` is not an entity-tag evalward reads (printable ASCII, quoted, within
    TAG_LIMIT), or None."""
    if len(tag.encode("utf-8", "surrogateescape")) > TAG_LIMIT:
        return f"is longer than {TAG_LIMIT} bytes"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in tag):
        return "holds a control character"
    opaque = tag.removeprefix("W/")
    inner = opaque[1:-1]
    if (
        len(opaque) < 2
        or not (opaque.startswith('"') and opaque.endswith('"'))
        or '"' in inner
        or not all(0x21 <= ord(c) <= 0x7E for c in inner)
    ):
        return 'is not one quoted tag of printable ASCII ("...", or W/"..." for a weak one)'
    return None


def _all(headers: Mapping[str, str], name: str) -> list[str]:
    """Every value of header `name` (aiohttp's headers keep each one given)."""
    getall = getattr(headers, "getall", None)
    if getall is not None:
        return list(getall(name, []))
    value = headers.get(name)
    return [] if value is None else [value]


def _key(live: LivePlayground, source: str) -> tuple[str, Path, str, str]:
    return (live.source.side, live.source.world, live.name, source)
