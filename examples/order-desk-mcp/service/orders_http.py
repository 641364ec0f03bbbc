"""Acme's order desk as an MCP server over streamable HTTP, written with the MCP Python SDK:
a playground service (docs/playgrounds.md) that the agent reaches with `service: /mcp`.

evalward starts it for every run on the port it picks (the first argument) and waits until it
answers an MCP `initialize` at /mcp (`ready: {mcp: /mcp}`); its tools act on the run's copy
of the shop's database (EVALWARD_SQLITE_PATH), which the state criteria read.
"""

import json
import os
import sqlite3
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("orders")


def _database() -> sqlite3.Connection:
    return sqlite3.connect(os.environ["EVALWARD_SQLITE_PATH"])


@server.tool()
def lookup_order(order_id: str) -> str:
    """Look an order up by its id: its amount and status."""
    row = (
        _database()
        .execute("SELECT id, amount, status FROM orders WHERE id = ?", (order_id,))
        .fetchone()
    )
    if row is None:
        raise ValueError(f"no order {order_id}")
    return json.dumps({"id": row[0], "amount": row[1], "status": row[2]})


@server.tool()
def refund_order(order_id: str, reason: str) -> str:
    """Refund a delivered order in full, with the customer's reason."""
    database = _database()
    row = database.execute("SELECT amount, status FROM orders WHERE id = ?", (order_id,)).fetchone()
    if row is None or row[1] != "delivered":
        raise ValueError(f"order {order_id} cannot be refunded")
    refund = "INSERT INTO refunds (order_id, amount, reason) VALUES (?, ?, ?)"
    database.execute(refund, (order_id, row[0], reason))
    database.execute("UPDATE orders SET status = 'refunded' WHERE id = ?", (order_id,))
    database.commit()
    return json.dumps({"refunded": order_id, "amount": row[0]})


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
