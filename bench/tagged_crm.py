"""The example CRM (`server.py`, beside it) answering its state with an ETag: a version
counter bumped on each change, its first value from its seed, so that every service started
from one seed starts with one tag; a read that sends that tag back (`If-None-Match`) while
nothing changed is answered `304 Not Modified`, with no body.

    python tagged.py --port 8080 --seed seed.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import server  # the example CRM, copied beside this file

CHANGES = threading.Lock()
"""Held while the state changes and while its tag and bytes are taken: a tag never names a
state it was not taken with."""
VERSION = [0]
SEED_TAG = ["empty"]


class Tagged(server.Handler):
    def do_GET(self) -> None:
        if self.path != "/state":
            super().do_GET()
            return
        with CHANGES:
            tag = f'"{SEED_TAG[0]}-{VERSION[0]}"'
            if self.headers.get("if-none-match") == tag:
                self.send_response(304)
                self.send_header("etag", tag)
                self.end_headers()
                return
            data = json.dumps(server.STATE).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("etag", tag)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        with CHANGES:
            super().do_POST()
            VERSION[0] += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seed")
    args = parser.parse_args()
    if args.seed:
        seed = Path(args.seed).read_bytes()
        server.STATE.update(json.loads(seed))
        SEED_TAG[0] = hashlib.sha256(seed).hexdigest()[:16]
    ThreadingHTTPServer(("127.0.0.1", args.port), Tagged).serve_forever()


if __name__ == "__main__":
    main()
