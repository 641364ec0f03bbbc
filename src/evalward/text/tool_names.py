"""Tool names as users write them, matched to the names frameworks put on the wire.

Frameworks qualify a tool's name with its plugin, namespace or server: Semantic Kernel sends
`OrderPlugin-lookup_order`, MCP clients `orders__lookup_order` (or `mcp__orders__lookup_order`),
others `orders.lookup_order`. An assertion that names `lookup_order` means that call, as long
as only one qualified name ends so; when two differ in their prefix (`A-lookup`, `B-lookup`)
the bare name is ambiguous and matches neither — except in `toolNotCalled`, which matches
both and so fails closed: calling two plugins' `send_email` does not slip past
`toolNotCalled send_email`. A name written qualified matches whatever
separator the wire uses (`OrderPlugin.lookup_order` matches `OrderPlugin-lookup_order`).

A name that matches nothing gets a did-you-mean from the names that were called.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

SEPARATORS = re.compile(r"__|[-./:]")
"""Between a namespace and a name: `Plugin-function`, `plugin.function`, `server__tool`,
`server/tool`, `server:tool`."""


def parts(name: str) -> tuple[str, ...]:
    """A name's segments, whatever separates them; `lookup_order` is one segment."""
    return tuple(p for p in SEPARATORS.split(name) if p)


def stands_for(called: str, written: str) -> bool:
    """`called` is `written`, or `written` qualified by a namespace (segment by segment)."""
    if called == written:
        return True
    have, want = parts(called), parts(written)
    return bool(want) and len(have) >= len(want) and have[len(have) - len(want) :] == want


def resolve(written: str, called: Iterable[str], *, ambiguous: bool = False) -> set[str]:
    """The called names that mean `written`: itself when called, else the one qualified name
    ending in it — none when several distinct ones do, or all of them with `ambiguous` (for
    an assertion that a tool is *not* called, which must fail closed)."""
    names = set(called)
    if written in names and not ambiguous:
        return {written}
    candidates = {name for name in names if stands_for(name, written)}
    distinct = {parts(name) for name in candidates}
    return candidates if len(distinct) <= 1 or ambiguous else set()


def as_written(
    called: Sequence[str], written: Iterable[str], *, ambiguous: bool = False
) -> list[str]:
    """The called names in order, each that means one of the `written` names replaced by it,
    so comparing with `==` matches qualified names as users write them."""
    meaning: dict[str, str] = {}
    for name in dict.fromkeys(written):
        for match in resolve(name, called, ambiguous=ambiguous):
            meaning.setdefault(match, name)
    return [meaning.get(name, name) for name in called]


def hint(written: str, called: Sequence[str]) -> str:
    """What to say when `written` matched no call: the ambiguity, or the closest names."""
    unique = list(dict.fromkeys(called))
    ambiguous = sorted(name for name in unique if stands_for(name, written))
    if len(ambiguous) > 1:
        return f"; {written} is ambiguous: {', '.join(ambiguous)} were called, name one of them"
    by_last = {parts(name)[-1] if parts(name) else name: name for name in unique}
    close = difflib.get_close_matches(written, unique, n=3, cutoff=0.6)
    close += [
        by_last[last]
        for last in difflib.get_close_matches(written, list(by_last), n=3, cutoff=0.6)
        if by_last[last] not in close
    ]
    return f"; did you mean {' or '.join(close[:3])}?" if close else ""
