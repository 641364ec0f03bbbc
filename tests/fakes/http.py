"""A tiny threaded HTTP server on 127.0.0.1 with a free port, for the fakes below."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Response:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    delay: float = 0.0
    cut: bool = False
    """Announce the whole body, send half of it, then reset the connection."""


Handler = Callable[[Request], Response]


class LoopbackServer:
    """Serves `handler` on a free loopback port until `close()`."""

    def __init__(self, handler: Handler) -> None:
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = Request(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
                response = outer.handler(request)
                if response.delay:
                    threading.Event().wait(response.delay)
                payload = (
                    response.raw
                    if response.raw is not None
                    else (b"" if response.body is None else json.dumps(response.body).encode())
                )
                try:
                    self.send_response(response.status)
                    headers = {"content-type": "application/json", **response.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    if response.cut:
                        self.wfile.write(payload[: len(payload) // 2])
                        self.wfile.flush()
                        self.connection.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                        self.close_connection = True
                        self.connection.close()
                        return
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.handler = handler
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
