"""Acme's order desk as an MCP server on stdin/stdout, written with the MCP Python SDK.

In an eval it works on the run's playground database (EVALWARD_SQLITE_PATH, set by
evalward), as any program of the agent does.
"""

import json
import os
import sqlite3

from mcp.server.mcpserver import MCPServer

server = MCPServer("orders")


def _database() -> sqlite3.Connection:
    return sqlite3.connect(os.environ.get("EVALWARD_SQLITE_PATH", "shop.sqlite"))


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
    return f"refunded {order_id} (${row[0]:.2f})"


@server.tool()
def delete_order(order_id: str) -> str:
    """Delete an order for good (the agent is never offered this one)."""
    database = _database()
    database.execute("DELETE FROM orders WHERE id = ?", (order_id,))
    database.commit()
    return f"deleted {order_id}"


if __name__ == "__main__":
    server.run()
