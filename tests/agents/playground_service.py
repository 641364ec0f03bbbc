"""A service playground for tests: `python3 playground_service.py MODE PORT`.

ok: /health, /state ({"hits": n}), POST /hit counts, POST /die exits with code 3.
never: never listens. huge: /state answers bytes without end.
"""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

MODE, PORT = sys.argv[1], int(sys.argv[2])
HITS = {"hits": 0, "pid": os.getpid(), "port": PORT}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/state" and MODE == "huge":
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"junk": "')
            while True:
                self.wfile.write(b"x" * 65536)
        body = json.dumps(HITS if self.path == "/state" else {"ok": True}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        if self.path == "/die":
            os._exit(3)
        HITS["hits"] += 1
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


if MODE == "never":
    while True:
        time.sleep(60)
HTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
