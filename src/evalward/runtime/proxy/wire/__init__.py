"""The APIs the model proxy speaks to agents (`routes`: which requests it forwards, and where
each goes upstream) and the wire formats of their calls."""

from __future__ import annotations

from evalward.errors import WireError
from evalward.runtime.proxy.wire.base import Api, Format, Kind
from evalward.runtime.proxy.wire.chat import ChatCompletions
from evalward.runtime.proxy.wire.messages import Messages
from evalward.runtime.proxy.wire.responses import Responses
from evalward.runtime.proxy.wire.routes import SERVED, Unnamed, WireRoute, api_of, route_of

__all__ = [
    "FORMATS",
    "SERVED",
    "Api",
    "Format",
    "Kind",
    "Unnamed",
    "WireError",
    "WireRoute",
    "api_of",
    "route_of",
]

FORMATS: dict[Kind, Format] = {
    Kind.chat: ChatCompletions(),
    Kind.responses: Responses(),
    Kind.messages: Messages(),
}
"""The formats of model calls: each is metered, cached and read for the trace."""
