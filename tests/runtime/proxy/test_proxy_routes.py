"""The model proxy forwards only what it can name: every route an exact shape, an id one
segment of a safe alphabet. Hostile request targets, written byte for byte on a raw socket
(no client library to tidy them), try every encoding of `..`, `/`, `?`, `#`, `%`, `@`, `\\`
and their Unicode look-alikes on every route; the scripted model server behind the proxy
records every target it receives, and none is outside the allowed shapes."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalward.rundata.spending import Allowance
from evalward.runtime.proxy.model_proxy import Grant
from fakes.model_server import ScriptedModelServer
from runtime.proxy.test_proxy_streams import (
    ANTHROPIC_KEY,
    GEMINI_KEY,
    OPENAI_KEY,
    providers_for,
    through_proxy,
)

pytestmark = pytest.mark.integration

ALLOWED_UPSTREAM = re.compile(
    r"POST /v1/(chat/completions|responses|embeddings|messages)"
    r"|GET /v1/models(/[A-Za-z0-9][A-Za-z0-9._:-]*)?"
    r"|GET /v1/models\?((limit|after_id|before_id)=[A-Za-z0-9._:-]+&?)+"
    r"|POST /v1(beta)?/models/[A-Za-z0-9][A-Za-z0-9._:-]*"
    r":(generateContent|streamGenerateContent\?alt=sse)"
)
"""Every target the provider may receive from the proxy."""

BODIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {
        "model": "gpt-4.1-mini",
        "messages": [{"role": "user", "content": "hi"}],
    },
    "/v1/responses": {"model": "gpt-4.1-mini", "input": "hi"},
    "/v1/embeddings": {"model": "text-embedding-3-small", "input": "hi"},
    "/v1/messages": {
        "model": "claude-haiku-4-5",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}],
    },
}
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
ROUTES = [
    "GET /v1/models/{}",
    "GET /v1/models{}",
    "GET /v1/models/gpt-4.1-mini{}",
    "GET /v1/models?limit={}",
    "GET /v1/models?after_id=a{}",
    "GET /v1/{}/models",
    "POST /v1/chat/completions{}",
    "POST /v1/responses{}",
    "POST /v1/embeddings{}",
    "POST /v1/messages{}",
    "POST /v1/messages?beta={}",
    "POST /v1beta/models/{}:generateContent",
    "POST /v1beta/models/gemini-2.5-flash{}:generateContent",
    "POST /v1/models/gemini-2.5-flash:streamGenerateContent?alt={}",
    "POST /v1beta/{}/models/gemini-2.5-flash:generateContent",
]
PIECES = ["..", "/", "?", "#", "%", "@", "\\", ".", ":"]
LOOKALIKES = [
    "\uff0e",  # FULLWIDTH FULL STOP
    "\u2024",  # ONE DOT LEADER
    "\u2025",  # TWO DOT LEADER
    "\uff0f",  # FULLWIDTH SOLIDUS
    "\u2215",  # DIVISION SLASH
    "\u2044",  # FRACTION SLASH
    "\uff3c",  # FULLWIDTH REVERSE SOLIDUS
    "\ufe56",  # SMALL QUESTION MARK
    "\uff03",  # FULLWIDTH NUMBER SIGN
    "\uff05",  # FULLWIDTH PERCENT SIGN
    "\uff20",  # FULLWIDTH COMMERCIAL AT
    "\u0430",  # CYRILLIC SMALL LETTER A
]
OVERLONG = {".": ["%C0%AE", "%E0%80%AE", "%c0%2e"], "/": ["%C0%AF", "%E0%80%AF"], "\\": ["%C1%9C"]}


def encodings(piece: str) -> set[bytes]:
    """`piece` raw, percent-encoded once (either case), twice, as overlong UTF-8 and as
    IIS's `%u` escape."""
    data = piece.encode()
    once = "".join(f"%{b:02X}" for b in data)
    forms = {data, once.encode(), once.lower().encode()}
    forms.add("".join(f"%25{b:02X}" for b in data).encode())
    forms.add("".join(f"%u{ord(c):04X}" for c in piece).encode())
    for char, escapes in OVERLONG.items():
        if char in piece:
            forms |= {piece.replace(char, escape).encode() for escape in escapes}
    return forms


def payloads() -> list[bytes]:
    out: set[bytes] = set()
    for piece in PIECES + LOOKALIKES:
        for e in encodings(piece):
            out |= {e, b"gpt-4" + e + b"files", e + e + b"v1" + e + b"files"}
    out |= {b"../../v1/files", b"..%2F..%2Fv1%2Ffiles", b"x?limit=1", b"..%252F..%252Ffiles"}
    out |= {b"../files/file-abc/content", b"../../v1/organization/admin_api_keys"}
    return sorted(out)


async def send(
    grant: Grant,
    method: str,
    target: bytes,
    headers: dict[str, str],
    fields: dict[str, Any] | None = None,
) -> int:
    """One request written as is (its body `fields`, else one of its route's); the status
    the proxy answered."""
    host, port = grant.env["ANTHROPIC_BASE_URL"].removeprefix("http://").split(":")
    path = target.split(b"?")[0]
    if fields is None:
        gemini = b"Content" in path
        fields = (
            GEMINI_BODY if gemini else BODIES.get(path.decode("latin-1"), BODIES["/v1/messages"])
        )
    body = json.dumps(fields).encode()
    head = [f"{method} ".encode() + target + b" HTTP/1.1", f"host: {host}:{port}".encode()]
    head += [f"{k}: {v}".encode() for k, v in headers.items()]
    if method == "POST":
        head += [b"content-type: application/json", f"content-length: {len(body)}".encode()]
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(
            b"\r\n".join([*head, b"connection: close", b"", body if method == "POST" else b""])
        )
        await writer.drain()
        status = (await reader.readline()).split()
        await reader.read()
    finally:
        writer.close()
    return int(status[1])


def test_no_encoding_of_a_path_or_query_reaches_the_provider_outside_the_allowed_shapes(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    sent = [
        (method, route.replace("{}", "\0").encode().replace(b"\0", payload))
        for route in ROUTES
        for payload in payloads()
        for method in [route.split()[0]]
    ]
    sent = [(method, target.split(b" ", 1)[1]) for method, target in sent]

    async def agent(grant: Grant) -> dict[tuple[str, bytes], int]:
        statuses = {}
        openai = {"authorization": f"Bearer {grant.key}"}
        anthropic = {"x-api-key": grant.key, "anthropic-version": "2023-06-01"}
        google = {"x-goog-api-key": grant.key}
        at_once = asyncio.Semaphore(16)

        async def one(method: str, target: bytes, auth: dict[str, str]) -> None:
            async with at_once:
                statuses[(method, target)] = await send(grant, method, target, auth)

        # the routes either provider serves are asked by both providers' clients
        both = (b"/v1/models", b"/v1/messages", b"/v1/%")
        await asyncio.gather(
            *(
                one(method, target, auth)
                for method, target in sent
                for auth in (
                    (google,)
                    if b"Content" in target
                    else (openai, anthropic)
                    if target.startswith(both)
                    else (openai,)
                )
            )
        )
        return statuses

    statuses, trace = through_proxy(providers_for(model, tmp_path), agent, Allowance())
    assert len(sent) > 2000
    outside = [t for t in model.targets if not ALLOWED_UPSTREAM.fullmatch(t)]
    assert outside == []
    assert any(t.endswith(":generateContent") for t in model.targets)  # Gemini's are asked too
    for call in model.calls:  # the host and the credentials are evalward's
        assert call.headers["host"] == model.server.url.removeprefix("http://")
        assert (
            call.headers.get("authorization") == f"Bearer {OPENAI_KEY}"
            or call.headers.get("x-api-key") == ANTHROPIC_KEY
            or call.headers.get("x-goog-api-key") == GEMINI_KEY
        )
    for target in (b"/v1/models/..%2F..%2Fv1%2Ffiles", b"/v1/models/x?limit=1"):
        assert statuses[("GET", target)] == 400
    # the record that counts the refusals past those a run keeps names no request
    refused = [c for c in trace.proxy_calls if c.status == 400 and c.endpoint]
    assert refused and all("refused this request" in (c.error or "") for c in refused)


@pytest.mark.parametrize(
    "target",
    [
        "/v1/models/..%2F..%2Fv1%2Ffiles",
        "/v1/models/../../v1/organization/admin_api_keys",
        "/v1/models/..%2Ffiles%2Ffile-abc%2Fcontent",
        "/v1/models/x%3Flimit=1",
        "/v1/models/x?limit=1",
        "/v1/models/%2e%2e",
        "/v1/models/a%252Fb",
        "/v1/models/%C0%AE%C0%AE",
        "/v1/models/gpt%40evil.example",
    ],
)
def test_a_model_id_that_is_not_one_safe_segment_is_refused_before_anything_leaves(
    model: ScriptedModelServer, tmp_path: Path, target: str
) -> None:
    async def agent(grant: Grant) -> int:
        auth = {"authorization": f"Bearer {grant.key}"}
        return await send(grant, "GET", target.encode(), auth)

    status, trace = through_proxy(providers_for(model, tmp_path), agent, Allowance())
    assert status == 400
    assert model.targets == []
    (call,) = trace.proxy_calls
    assert call.status == 400 and call.error is not None
    assert "model proxy refused this request" in call.error


def test_a_model_id_and_a_page_are_passed_on_as_the_provider_expects(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    async def agent(grant: Grant) -> list[int]:
        openai = {"authorization": f"Bearer {grant.key}"}
        anthropic = {"x-api-key": grant.key, "anthropic-version": "2023-06-01"}
        return [
            await send(grant, "GET", b"/v1/models/ft%3Agpt-4.1-mini%3Aacme%3A%3Aabc", openai),
            await send(grant, "GET", b"/v1/models?limit=20&after_id=claude-x", anthropic),
            await send(grant, "POST", b"/v1/messages?beta=true", anthropic),
        ]

    statuses, trace = through_proxy(providers_for(model, tmp_path), agent, Allowance())
    assert model.targets == [
        "GET /v1/models/ft:gpt-4.1-mini:acme::abc",
        "GET /v1/models?limit=20&after_id=claude-x",
        "POST /v1/messages",
    ]
    assert statuses[1:] == [200, 200]
    assert [c.model for c in trace.proxy_calls][:2] == [
        "openai/ft:gpt-4.1-mini:acme::abc",
        "anthropic/",
    ]


@pytest.mark.parametrize(
    "header",
    [
        {"anthropic-version": "2023-06-01/../../files"},
        {"anthropic-version": "2023-06-01", "anthropic-beta": "files-api-2025-04-14; x=1"},
        {"anthropic-version": "2023-06-01", "anthropic-beta": "a/b"},
    ],
)
def test_a_header_the_proxy_passes_on_is_refused_unless_it_is_in_its_shape(
    model: ScriptedModelServer, tmp_path: Path, header: dict[str, str]
) -> None:
    async def agent(grant: Grant) -> list[int]:
        headers = {"x-api-key": grant.key, **header}
        return [
            await send(grant, "POST", b"/v1/messages", headers),
            await send(grant, "GET", b"/v1/models", headers),
        ]

    statuses, _ = through_proxy(providers_for(model, tmp_path), agent, Allowance())
    assert statuses == [400, 400]
    assert model.targets == []


def test_headers_and_body_fields_cannot_move_the_upstream_request(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    hostile = {
        "x-forwarded-host": "evil.example",
        "x-original-url": "/v1/files",
        "x-rewrite-url": "/v1/files",
        "x-http-method-override": "DELETE",
        "openai-organization": "org-evil",
        "forwarded": "host=evil.example",
    }

    async def agent(grant: Grant) -> int:
        return await send(
            grant, "GET", b"/v1/models", {"authorization": f"Bearer {grant.key}", **hostile}
        )

    status, _ = through_proxy(providers_for(model, tmp_path), agent, Allowance())
    assert status == 200
    assert model.targets == ["GET /v1/models"]
    (call,) = model.calls
    assert not set(hostile) & set(call.headers)
    assert call.headers["authorization"] == f"Bearer {OPENAI_KEY}"


def test_another_method_on_a_served_path_is_no_route(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    methods = ["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "GET", "POST", "TRACE"]
    asked = [
        (method, path)
        for method in methods
        for path in ("/v1/models", "/v1/models/gpt-4.1-mini", "/v1/chat/completions")
        if (method, path[:10]) not in {("GET", "/v1/models"), ("POST", "/v1/chat/c")}
    ]

    async def agent(grant: Grant) -> list[int]:
        auth = {"authorization": f"Bearer {grant.key}"}
        return [await send(grant, method, path.encode(), auth) for method, path in asked]

    statuses, _ = through_proxy(providers_for(model, tmp_path), agent, Allowance())
    assert all(status in (400, 404, 405) for status in statuses), list(
        zip(asked, statuses, strict=True)
    )
    assert model.targets == []


@pytest.mark.parametrize(
    "fields",
    [
        {**GEMINI_BODY, "tools": [{"googleSearch": {}}]},
        {**GEMINI_BODY, "cachedContent": "cachedContents/agents-tools"},
        {**GEMINI_BODY, "generation_config": {"candidate_count": 2}},
        {**GEMINI_BODY, "model": "gemini-2.5-pro"},
    ],
    ids=["server tool", "cached content", "snake case", "a model of its own"],
)
def test_a_gemini_request_the_proxy_could_not_read_whole_never_leaves(
    model: ScriptedModelServer, tmp_path: Path, fields: dict[str, Any]
) -> None:
    target = b"/v1beta/models/gemini-2.5-flash:generateContent"

    async def agent(grant: Grant) -> int:
        return await send(grant, "POST", target, {"x-goog-api-key": grant.key}, fields)

    status, trace = through_proxy(providers_for(model, tmp_path), agent, Allowance())
    assert status == 400
    assert model.targets == []
    (call,) = trace.proxy_calls
    assert call.status == 400 and call.error is not None
