"""Whether a call's key came from its own run's processes (`isolation.key_holders`).

A key whose grant names no processes (no sandbox: the command line on a developer's machine,
an http agent's server's own key) is taken from whoever presents it, as before. Otherwise the
processes holding the call's connection are looked up (off the event loop: it reads /proc)
and the key is refused unless every one of them is its run's.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from evalward.runtime.isolation import socket_holders
from evalward.runtime.proxy.grants import Grant

if TYPE_CHECKING:
    from aiohttp import web


async def refused_presenter(grant: Grant, request: web.BaseRequest) -> str | None:
    """Why `request` may not use `grant`'s key (None: it may)."""
    if grant.holders is None:
        return None
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    local = transport.get_extra_info("sockname") if transport is not None else None
    found: list[socket_holders.Holder] = []
    if peer and local:
        client, server = (str(peer[0]), int(peer[1])), (str(local[0]), int(local[1]))
        found = await asyncio.to_thread(socket_holders.holders, client, server)
    why = grant.holders.refusal(found)
    if why is None:
        return None
    labels = grant.labels
    whose = (
        f"the run of fixture {labels.fixture!r} (agent {labels.agent!r})"
        if grant.trace is not None
        else f"the server of agent {labels.agent!r}"
    )
    return (
        f"evalward's model proxy refused this key: it is the key of {whose}, and {why}. "
        "A run's calls are made with "
        "the OPENAI_API_KEY / ANTHROPIC_API_KEY evalward gave that run's own processes (an "
        "http agent: the request's `modelProxy` key), never with another run's"
    )
