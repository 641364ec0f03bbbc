"""An MCP server written with the MCP SDK as its documentation writes one: an order desk.

`python mcp_server.py` serves stdio; `python mcp_server.py http PORT` streamable HTTP on
127.0.0.1:PORT at /mcp (with /ready answering 200 and /state the orders, for a playground
service). With EVALWARD_SQLITE_PATH set (a playground), orders live in that database;
otherwise in memory; `write_note` writes into the files playground. `whoami` says what the
server can see of its process.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("orders")
MEMORY: dict[str, dict[str, Any]] = {
    "A-1": {"id": "A-1", "amount": 25.0, "status": "delivered"},
    "B-2": {"id": "B-2", "amount": 90.0, "status": "delivered"},
}


def _db() -> sqlite3.Connection | None:
    path = os.environ.get("EVALWARD_SQLITE_PATH")
    return sqlite3.connect(path) if path else None


@server.tool()
def lookup_order(order_id: str) -> str:
    """Look an order up by its id."""
    db = _db()
    if db is None:
        order = MEMORY.get(order_id)
    else:
        row = db.execute(
            "SELECT id, amount, status FROM orders WHERE id = ?", (order_id,)
        ).fetchone()
        order = None if row is None else {"id": row[0], "amount": row[1], "status": row[2]}
    if order is None:
        raise ValueError(f"no order {order_id}")
    return json.dumps(order, sort_keys=True)


@server.tool()
def refund_order(order_id: str, reason: str) -> str:
    """Refund an order."""
    db = _db()
    if db is None:
        MEMORY[order_id]["status"] = "refunded"
    else:
        db.execute("UPDATE orders SET status = 'refunded' WHERE id = ?", (order_id,))
        db.execute("INSERT INTO refunds (order_id, reason) VALUES (?, ?)", (order_id, reason))
        db.commit()
    return f"refunded {order_id} ({reason})"


@server.tool()
def write_note(path: str, text: str) -> str:
    """Write a note into the run's files playground (EVALWARD_PLAYGROUND_DIR)."""
    folder = os.environ["EVALWARD_PLAYGROUND_DIR"]
    target = os.path.join(folder, path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w") as note:
        note.write(text)
    return f"wrote {path}"


@server.tool()
def whoami() -> str:
    """What this server's process sees of itself."""
    seen = {
        "uid": os.getuid(),
        "home": os.environ.get("HOME", ""),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
    }
    return json.dumps(seen, sort_keys=True)


def _http(port: int) -> None:
    import uvicorn
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    app = server.streamable_http_app(json_response="--sse" not in sys.argv)

    async def ready(request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def state(request: Any) -> JSONResponse:
        return JSONResponse({"orders": MEMORY})

    app.router.routes += [Route("/ready", ready), Route("/state", state)]
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        _http(int(sys.argv[2]))
    else:
        server.run()
