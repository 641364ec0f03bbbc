"""The example CRM (`server.py`, beside it) answering its state with an ETag: a version
counter bumped on each change, its first value from its seed, so that every service started
from one seed starts with one tag; a read that sends that tag back (`If-None-Match`) while
nothing changed is answered `304 Not Modified`, with no body, and one that also asks for a
delta (`A-IM: json-patch`) after a change is answered `226 IM Used` with the JSON Patch of
the changes made since (RFC 3229; docs/playgrounds.md). `--answers tags` answers such a
read with the whole state; `--answers whole` never gives a tag, as a service that knows
nothing of them.

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
CHANGED: list[dict[str, object]] = []
"""Every change made since the seed, as JSON Patch operations."""
SINCE: dict[int, int] = {0: 0}
"""How many of them each version had: its delta is the rest."""
ANSWERS = ["deltas"]


class Tagged(server.Handler):
    def do_GET(self) -> None:
        if self.path != "/state":
            super().do_GET()
            return
        with CHANGES:
            tag = f'"{SEED_TAG[0]}-{VERSION[0]}"'
            asked = self.headers.get("if-none-match", "")
            if asked == tag:
                self.send_response(304)
                self.send_header("etag", tag)
                self.end_headers()
                return
            base = _version(asked)
            delta = "json-patch" in self.headers.get("a-im", "") and ANSWERS[0] == "deltas"
            if delta and base is not None:
                data = json.dumps(CHANGED[SINCE[base] :]).encode()
                self.send_response(226)
                self.send_header("im", "json-patch")
                self.send_header("delta-base", asked)
                self.send_header("content-type", "application/json-patch+json")
                self.send_header("content-length", str(len(data)))
                self.send_header("etag", tag)
                self.end_headers()
                self.wfile.write(data)
                return
            data = json.dumps(server.STATE).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if ANSWERS[0] != "whole":
            self.send_header("etag", tag)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        with CHANGES:
            refunds = len(server.STATE["refunds"])
            super().do_POST()
            if len(server.STATE["refunds"]) > refunds:  # a refund was made: what it changed
                refund = server.STATE["refunds"][-1]
                order = str(refund["order_id"]).replace("~", "~0").replace("/", "~1")
                CHANGED.append({"op": "add", "path": "/refunds/-", "value": refund})
                CHANGED.append(
                    {
                        "op": "replace",
                        "path": f"/orders/{order}/status",
                        "value": "refund_requested",
                    }
                )
            VERSION[0] += 1
            SINCE[VERSION[0]] = len(CHANGED)


def _version(tag: str) -> int | None:
    """The version of one of this service's own tags, or None."""
    prefix = f'"{SEED_TAG[0]}-'
    if not (tag.startswith(prefix) and tag.endswith('"')):
        return None
    number = tag[len(prefix) : -1]
    return int(number) if number.isdigit() and int(number) in SINCE else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seed")
    parser.add_argument("--answers", choices=("deltas", "tags", "whole"), default="deltas")
    args = parser.parse_args()
    ANSWERS[0] = args.answers
    if args.seed:
        seed = Path(args.seed).read_bytes()
        server.STATE.update(json.loads(seed))
        SEED_TAG[0] = hashlib.sha256(seed).hexdigest()[:16]
    ThreadingHTTPServer(("127.0.0.1", args.port), Tagged).serve_forever()


if __name__ == "__main__":
    main()
