"""The APIs the model proxy speaks to agents, and where each route goes upstream.

| route | API | provider |
|---|---|---|
| `POST /v1/chat/completions` | OpenAI Chat Completions | openai |
| `POST /v1/responses` | OpenAI Responses | openai |
| `POST /v1/embeddings` | OpenAI embeddings | openai |
| `POST /v1/messages` | Anthropic Messages | anthropic |
| `GET /v1/models`, `GET /v1/models/{id}` | the model list | either, by the client's headers |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from evalward.runtime.wire.base import Api, Format, Kind, WireError
from evalward.runtime.wire.chat import ChatCompletions
from evalward.runtime.wire.messages import Messages
from evalward.runtime.wire.responses import Responses

__all__ = ["FORMATS", "Api", "Format", "Kind", "Route", "WireError", "route_of"]

FORMATS: dict[Kind, Format] = {
    Kind.chat: ChatCompletions(),
    Kind.responses: Responses(),
    Kind.messages: Messages(),
}
"""The formats of model calls: each is metered, cached and read for the trace."""


@dataclass(frozen=True)
class Route:
    api: Api
    kind: Kind | None
    """What the call is; None for a model list."""
    upstream: str
    """The path below the provider's `/v1` root."""


_POST = {
    "/v1/chat/completions": Route("openai", Kind.chat, "chat/completions"),
    "/v1/responses": Route("openai", Kind.responses, "responses"),
    "/v1/embeddings": Route("openai", Kind.embeddings, "embeddings"),
    "/v1/messages": Route("anthropic", Kind.messages, "messages"),
}
SERVED = (
    "POST /v1/chat/completions and POST /v1/responses (OpenAI), POST /v1/embeddings, "
    "POST /v1/messages (Anthropic) and GET /v1/models"
)


def route_of(method: str, path: str, headers: Mapping[str, str]) -> Route | None:
    if method == "POST":
        return _POST.get(path)
    if method != "GET" or not (path == "/v1/models" or path.startswith("/v1/models/")):
        return None
    model = path.removeprefix("/v1/models").strip("/")
    upstream = f"models/{model}" if model else "models"
    return Route(api_of(headers), None, upstream)


def api_of(headers: Mapping[str, str]) -> Api:
    """Whose client is asking, by the headers only Anthropic's clients send."""
    anthropic = "x-api-key" in headers or "anthropic-version" in headers
    return "anthropic" if anthropic else "openai"
