"""The requests the model proxy forwards, as an allow-list of exact shapes.

An agent's request is read from its raw target (the bytes after the method, before any
decoding or normalising): its path must be one of the routes below exactly, an id in it one
segment of a safe alphabet, and its query string one the route names, with values of their
own safe shapes. Everything the proxy sends upstream is rebuilt from what it matched, never
copied: the upstream path is a fixed string or `models/<id>`, the query is written here, and
the only headers the agent chooses (Anthropic's `anthropic-version` and `anthropic-beta`) are
refused unless they are dates and beta names. A request of another shape is refused before
anything leaves: 404 for a route the proxy does not serve, 400 for a served route asked in a
shape it cannot name.

| route | API | provider |
|---|---|---|
| `POST /v1/chat/completions` | OpenAI Chat Completions | openai |
| `POST /v1/responses` | OpenAI Responses | openai |
| `POST /v1/embeddings` | OpenAI embeddings | openai |
| `POST /v1/messages` | Anthropic Messages | anthropic |
| `POST /v1beta/models/{model}:generateContent` (and `…:streamGenerateContent`) | Gemini | |
| `GET /v1/models`, `GET /v1/models/{id}` | the model list | either, by the client's headers |

Gemini's routes are served under `/v1` too, a stream only with `?alt=sse`, and go to the
provider evalward.yaml declares `api: gemini`.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from evalward.runtime.proxy.wire.base import Api, Kind


@dataclass(frozen=True)
class WireRoute:
    api: Api
    kind: Kind | None
    """What the call is; None for a model list."""
    upstream: str
    """The path below the provider's `/v1` root, with the query evalward wrote."""
    model_id: str = ""
    """The model a `GET /v1/models/{id}` asks about, or a Gemini call's path names."""


@dataclass(frozen=True)
class Unnamed:
    """A request to a served route in a shape the proxy cannot name: refused with 400."""

    api: Api
    reason: str


SERVED = (
    "POST /v1/chat/completions and POST /v1/responses (OpenAI), POST /v1/embeddings, "
    "POST /v1/messages (Anthropic), POST /v1beta/models/{model}:generateContent and "
    ":streamGenerateContent?alt=sse (Gemini, /v1 too), GET /v1/models and GET /v1/models/{id}"
)
_GEMINI_VERSIONS = ("/v1/models/", "/v1beta/models/")
_GEMINI_METHODS = {"generateContent": Kind.gemini, "streamGenerateContent": Kind.gemini_stream}
_POST = {
    "/v1/chat/completions": WireRoute("openai", Kind.chat, "chat/completions"),
    "/v1/responses": WireRoute("openai", Kind.responses, "responses"),
    "/v1/embeddings": WireRoute("openai", Kind.embeddings, "embeddings"),
    "/v1/messages": WireRoute("anthropic", Kind.messages, "messages"),
}
_MODELS = "/v1/models"

MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")
"""A model id as providers spell them (`gpt-4.1-mini`, `claude-haiku-4-5-20251001`,
`ft:gpt-4o-mini:org::abc123`): no `/`, `%`, `?`, `#`, `@`, `\\`, space or non-ASCII letter,
and never `.` or `..`, so it is one path segment whatever decodes it."""
_LIMIT = re.compile(r"[1-9][0-9]{0,3}")
_MODEL_QUERY = {"limit": _LIMIT, "after_id": MODEL_ID, "before_id": MODEL_ID}
"""What a model list may be asked for (Anthropic's pages, by model id); passed on as written."""
_IGNORED_QUERY = {"beta": "true"}
"""What the Anthropic SDK adds to its beta routes; it changes nothing upstream (the
`anthropic-beta` header does), so it is accepted and not passed on."""
_VERSION = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_BETAS = re.compile(r"[A-Za-z0-9._-]{1,100}(\s*,\s*[A-Za-z0-9._-]{1,100}){0,31}")


def route_of(method: str, target: str, headers: Mapping[str, str]) -> WireRoute | Unnamed | None:
    """The route `method` and the raw request `target` (path and query, undecoded) name;
    `Unnamed` when the path is a served route's but something else in the request is not
    in its shape; None when it is no route the proxy serves."""
    path, _, query = target.partition("?")
    if method == "POST" and path.startswith(_GEMINI_VERSIONS):
        return _gemini_route(path, query)
    if method == "POST" and path in _POST:
        route: WireRoute | Unnamed = _POST[path]
    elif method == "GET" and (path == _MODELS or path.startswith(_MODELS + "/")):
        api = api_of(headers)
        if api == "gemini":
            return None  # Gemini's model list is not one the proxy serves
        route = _model_route(api, path.removeprefix(_MODELS))
    else:
        return None
    if isinstance(route, Unnamed):
        return route
    return _agent_headers(route, headers) or _with_query(route, query)


def api_of(headers: Mapping[str, str]) -> Api:
    """Whose client is asking, by the headers only Anthropic's clients send."""
    if "x-goog-api-key" in headers:
        return "gemini"
    anthropic = "x-api-key" in headers or "anthropic-version" in headers
    return "anthropic" if anthropic else "openai"


def _gemini_route(path: str, query: str) -> WireRoute | Unnamed | None:
    """`POST /{version}/models/{model}:{method}`, the model one id as `MODEL_ID` spells them
    (read undecoded: an escaped `/` or `:` is no model id); a stream only as Server-Sent
    Events (`alt=sse`, as every SDK asks: without it the API streams one JSON array), and no
    key in the query (the SDKs send it as `x-goog-api-key`, which is where the proxy reads
    its own)."""
    version, _, rest = path.removeprefix("/").partition("/models/")
    model, _, method = rest.rpartition(":")
    kind = _GEMINI_METHODS.get(method)
    if kind is None:
        return None
    if not MODEL_ID.fullmatch(model):
        return Unnamed("gemini", f"{model!r:.100} is not a model id")
    wanted = "alt=sse" if kind is Kind.gemini_stream else ""
    if query != wanted:
        return Unnamed(
            "gemini",
            f"{method} takes {'the query alt=sse alone' if wanted else 'no query'}, not "
            f"{query!r:.100} (the key goes in the x-goog-api-key header)",
        )
    upstream = f"{version}/models/{model}:{method}" + (f"?{query}" if query else "")
    return WireRoute("gemini", kind, upstream, model)


def _model_route(api: Api, rest: str) -> WireRoute | Unnamed:
    """`GET /v1/models` (`rest` empty) or `GET /v1/models/{id}` (`rest` is `/` and the id,
    as the client encoded it: percent-escapes are decoded once, then the id must be one)."""
    if not rest:
        return WireRoute(api, None, "models")
    raw = rest.removeprefix("/")
    try:
        model_id = urllib.parse.unquote(raw, errors="strict")
    except UnicodeDecodeError:
        model_id = raw
    if not MODEL_ID.fullmatch(model_id):
        return Unnamed(
            api,
            f"{raw!r:.100} is not a model id (one path segment of letters, "
            "digits and `.`, `_`, `:`, `-`, starting with a letter or digit)",
        )
    return WireRoute(api, None, f"models/{model_id}", model_id)


def _agent_headers(route: WireRoute, headers: Mapping[str, str]) -> Unnamed | None:
    """The headers an Anthropic request passes on, refused unless they are in their shapes."""
    if route.api != "anthropic":
        return None
    version = headers.get("anthropic-version")
    if version is not None and not _VERSION.fullmatch(version):
        return Unnamed(route.api, f"anthropic-version {version!r:.40} is not a date")
    betas = headers.get("anthropic-beta")
    if betas is not None and not _BETAS.fullmatch(betas.strip()):
        return Unnamed(route.api, f"anthropic-beta {betas!r:.100} is not a list of beta names")
    return None


def _with_query(route: WireRoute, query: str) -> WireRoute | Unnamed:
    """`route` with the query evalward writes from the agent's, when each of its fields is
    one the route takes, once, in its shape."""
    allowed = _MODEL_QUERY if route.upstream == "models" else {}
    kept: dict[str, str] = {}
    for field in query.split("&") if query else []:
        name, equals, value = field.partition("=")
        if _IGNORED_QUERY.get(name) == value and equals:
            continue
        shape = allowed.get(name)
        if shape is None or not equals or name in kept or not shape.fullmatch(value):
            return Unnamed(route.api, f"the query field {field!r:.100} is not one this route takes")
        kept[name] = value
    if not kept:
        return route
    written = "&".join(f"{name}={value}" for name, value in kept.items())
    return WireRoute(route.api, route.kind, f"{route.upstream}?{written}")
