"""Programs for tests to run as loopback HTTP services (an http agent, a playground's
service): a handler whose methods answer JSON with `self.reply(value)`, serving on the
port given as the program's first argument."""

from __future__ import annotations

READY = """\
    def do_GET(self):
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
"""
"""A `do_GET` that answers an empty 200: a readiness check."""


def json_server(methods: str, preamble: str = "import json, sys\n") -> str:
    """The program: `preamble` (its imports, which must hold `json` and `sys`, and any state),
    then a handler with `methods` (Python, indented as a class body's)."""
    return f"""\
{preamble}from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
{methods}
    def reply(self, value):
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""
