"""A fake CRM, as a team writes one for its integration tests: orders and refunds in memory,
seeded from a JSON file, served on a port it is given.

    python server.py --port 8080 --seed seed.json

GET /health answers once it listens; GET /state answers everything it holds, which is how
evalward reads what the agent left behind; GET /orders/<id> and POST /refunds are its API.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LOCK = threading.Lock()
STATE: dict[str, Any] = {"orders": {}, "refunds": []}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, {"ok": True})
        elif self.path == "/state":
            with LOCK:
                self._send(200, STATE)
        elif self.path.startswith("/orders/"):
            order = STATE["orders"].get(self.path.removeprefix("/orders/"))
            self._send(200 if order else 404, order or {"error": "no such order"})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self.path != "/refunds":
            self._send(404, {"error": "not found"})
            return
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        with LOCK:
            order = STATE["orders"].get(str(body.get("order_id")))
            if order is None:
                self._send(404, {"error": "no such order"})
                return
            refund = {
                "id": f"R-{len(STATE['refunds']) + 1}",
                "order_id": body["order_id"],
                "amount": body.get("amount"),
                "reason": body.get("reason", ""),
            }
            STATE["refunds"].append(refund)
            order["status"] = "refund_requested"
        self._send(201, refund)

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seed")
    args = parser.parse_args()
    if args.seed:
        STATE.update(json.loads(Path(args.seed).read_text(encoding="utf-8")))
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
