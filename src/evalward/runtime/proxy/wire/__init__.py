"""The APIs the model proxy speaks to agents (`routes`: which requests it forwards, and where
each goes upstream) and the wire formats of their calls."""

from __future__ import annotations

from evalward.runtime.proxy.wire.base import Format, Kind
from evalward.runtime.proxy.wire.chat import ChatCompletions
from evalward.runtime.proxy.wire.gemini import GenerateContent
from evalward.runtime.proxy.wire.messages import Messages
from evalward.runtime.proxy.wire.responses import Responses

FORMATS: dict[Kind, Format] = {
    Kind.chat: ChatCompletions(),
    Kind.responses: Responses(),
    Kind.messages: Messages(),
    Kind.gemini: GenerateContent(stream=False),
    Kind.gemini_stream: GenerateContent(stream=True),
}
"""The formats of model calls: each is metered, cached and read for the trace."""
