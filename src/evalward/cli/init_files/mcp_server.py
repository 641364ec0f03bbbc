"""The order desk the agent's tools come from: an MCP server on stdin/stdout.

Run it alone with `python3 mcp/orders_server.py` (it waits for an MCP client). Its tools are
what the model is offered; change them here and the agent's evals run against the change.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("orders")
ORDERS = {"12345": "shipped", "67890": "processing"}


@server.tool()
def lookup_order(order_id: str) -> str:
    """Look up an order's shipping status by its id."""
    status = ORDERS.get(order_id)
    if status is None:
        raise ValueError(f"no order {order_id}")
    return f'{{"order": "{order_id}", "status": "{status}"}}'


if __name__ == "__main__":
    server.run()
