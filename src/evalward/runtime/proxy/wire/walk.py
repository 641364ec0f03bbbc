"""Every value in a request's (or a stream event's) JSON, for the model proxy's checks that
look anywhere in it: image parts and cache marks counted, file parts and Gemini's data
refused, text counted for a call without usage. Each check keeps only its own rule.

The walk opens a list or object only when at most `MAX_DEPTH` others hold it; one nested
deeper is passed over, neither given nor looked into (the values of the deepest opened one
are given). A request the proxy reads never nests that deep (`jsontext.AGENT_DEPTH`); the
bound keeps a stream event, read without one, from costing more than its size.
"""

from __future__ import annotations

from collections.abc import Container, Iterator

MAX_DEPTH = 64


def walk(value: object, skip: Container[str] = ()) -> Iterator[tuple[str | None, object]]:
    """`value` and each value in it, with the object key it is under (None for `value` itself
    and a list's items), each before those it holds, in the document's order. The values of
    a key in `skip` are passed over, and what they hold."""
    stack: list[tuple[str | None, object, int]] = [(None, value, 0)]
    while stack:
        key, node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                continue
            entries = node.items() if isinstance(node, dict) else ((None, item) for item in node)
            stack += reversed([(k, v, depth + 1) for k, v in entries if k not in skip])
        yield key, node
