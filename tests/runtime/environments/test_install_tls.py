"""An environment built behind a proxy that inspects TLS (`runtime.environments.installers`): a
package index whose certificate the installer does not trust fails the build with uv's words
and what to do about it, and the CA bundle the workflow names in SSL_CERT_FILE is the one the
installer trusts. The index is a real HTTPS server on loopback with a self-signed certificate,
and uv the one evalward installs with."""

from __future__ import annotations

import asyncio
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward.errors import AgentRunError
from evalward.resources.agents.agent import AgentEnvironment
from evalward.runtime.environments.environment import EnvironmentRequest, EnvironmentStore
from fakes.http import bound_quietly
from support.tls import issued

pytestmark = pytest.mark.integration


class _NoPackages(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS package index that knows no package: its URL, and its certificate."""
    certificate, context = issued(tmp_path / "tls", "127.0.0.1")
    server = bound_quietly(
        lambda port: http.server.ThreadingHTTPServer(("127.0.0.1", port), _NoPackages)
    )
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/simple/", certificate
    finally:
        server.shutdown()
        server.server_close()


def build(tmp_path: Path, name: str, env: dict[str, str]) -> str:
    """Build an environment that installs one package with `env` as the workflow's: the error
    that stopped it."""
    root = tmp_path / name
    (root / "agent").mkdir(parents=True)
    (root / "agent" / "requirements.txt").write_text("order-desk-client\n", encoding="utf-8")
    request = EnvironmentRequest(
        agent="bot",
        side="head",
        spec=AgentEnvironment.model_validate({"python": "agent/requirements.txt"}),
        checkout=root,
        source=root,
        not_copied=frozenset(),
        user=None,
        env={"PATH": os.environ["PATH"], **env},
        commit="c0ffee",
    )
    store = EnvironmentStore(tmp_path / f"{name}-cache")
    store.attach(tmp_path / f"{name}-live")
    try:
        with pytest.raises(AgentRunError) as raised:
            asyncio.run(store.provide(request))
    finally:
        store.close()
    return str(raised.value)


def test_an_index_whose_certificate_is_not_trusted_says_to_name_the_ca_in_ssl_cert_file(
    tmp_path: Path, index: tuple[str, Path]
) -> None:
    url, certificate = index
    said = build(tmp_path, "untrusted", {"UV_INDEX_URL": url})
    assert "invalid peer certificate" in said or "UnknownIssuer" in said, said
    assert "name its CA bundle (PEM) in SSL_CERT_FILE" in said

    # named in SSL_CERT_FILE, the index is trusted: it answers that it has no such package
    said = build(tmp_path, "trusted", {"UV_INDEX_URL": url, "SSL_CERT_FILE": str(certificate)})
    assert "order-desk-client" in said and "SSL_CERT_FILE" not in said, said
