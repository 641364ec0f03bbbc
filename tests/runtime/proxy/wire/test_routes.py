"""The requests the model proxy forwards, read from the raw target as an allow-list of exact
shapes (`runtime/proxy/wire/routes.py`): what goes upstream is rebuilt from what matched, a
served route asked in another shape is refused by name, and anything else is no route."""

from __future__ import annotations

import pytest

from evalward.runtime.proxy.wire.base import Kind
from evalward.runtime.proxy.wire.routes import Unnamed, WireRoute, api_of, route_of

pytestmark = pytest.mark.unit

ANTHROPIC = {"x-api-key": "k", "anthropic-version": "2023-06-01"}


@pytest.mark.parametrize(
    ("method", "target", "headers", "route"),
    [
        ("POST", "/v1/chat/completions", {}, WireRoute("openai", Kind.chat, "chat/completions")),
        ("POST", "/v1/responses", {}, WireRoute("openai", Kind.responses, "responses")),
        ("POST", "/v1/messages", ANTHROPIC, WireRoute("anthropic", Kind.messages, "messages")),
        (
            "POST",
            "/v1/messages?beta=true",
            ANTHROPIC,
            WireRoute("anthropic", Kind.messages, "messages"),
        ),
        ("GET", "/v1/models", {}, WireRoute("openai", None, "models")),
        (
            "GET",
            "/v1/models?limit=100&after_id=claude-3",
            ANTHROPIC,
            WireRoute("anthropic", None, "models?limit=100&after_id=claude-3"),
        ),
        (
            "GET",
            "/v1/models/ft%3Agpt-4o-mini%3Aorg%3A%3Aabc",
            {},
            WireRoute("openai", None, "models/ft:gpt-4o-mini:org::abc", "ft:gpt-4o-mini:org::abc"),
        ),
    ],
)
def test_each_served_route_is_rebuilt_from_what_matched(
    method: str, target: str, headers: dict[str, str], route: WireRoute
) -> None:
    assert route_of(method, target, headers) == route


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("GET", "/v1/chat/completions"),
        ("POST", "/v1/chat/completions/"),
        ("POST", "/v1//chat/completions"),
        ("POST", "/v1/%63hat/completions"),
        ("POST", "/openai/deployments/x/chat/completions"),
        ("DELETE", "/v1/models/x"),
    ],
)
def test_anything_else_is_no_route(method: str, target: str) -> None:
    assert route_of(method, target, {}) is None


@pytest.mark.parametrize(
    ("target", "headers", "reason"),
    [
        ("/v1/models/..", {}, "is not a model id"),
        ("/v1/models/a%2Fb", {}, "is not a model id"),
        ("/v1/models/gpt/../x", {}, "is not a model id"),
        ("/v1/chat/completions?api-version=1", {}, "the query field 'api-version=1'"),
        ("/v1/models?limit=1&limit=2", {}, "the query field 'limit=2'"),
        ("/v1/models?limit=0", {}, "the query field 'limit=0'"),
        ("/v1/messages", {**ANTHROPIC, "anthropic-version": "latest"}, "is not a date"),
        ("/v1/messages", {**ANTHROPIC, "anthropic-beta": "a b;c"}, "is not a list of beta names"),
    ],
)
def test_a_served_route_in_a_shape_it_cannot_name_is_refused_by_name(
    target: str, headers: dict[str, str], reason: str
) -> None:
    method = "GET" if target.startswith("/v1/models") else "POST"
    found = route_of(method, target, headers)
    assert isinstance(found, Unnamed)
    assert reason in found.reason


def test_whose_client_asks_is_read_from_the_headers_only_anthropic_s_send() -> None:
    assert api_of({"x-api-key": "k"}) == "anthropic"
    assert api_of({"anthropic-version": "2023-06-01"}) == "anthropic"
    assert api_of({"authorization": "Bearer k"}) == "openai"
