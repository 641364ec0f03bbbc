"""tau2-bench's airline domain as a playground service: its database and its 14 tools, served
over MCP (streamable HTTP, the MCP Python SDK) at /mcp, and the database as the service's
state at /state.

Nothing of the domain is written here: the tools, their checks and the database are tau2's
own (`tau2.domains.airline`), so a run changes the database exactly as tau2's environment
does, and the state evalward reads is the one tau2's database check hashes. evalward starts
it for every run on the port it picks (the first argument): a fresh copy of the database per
run, held in memory.
"""

import sys

from loguru import logger
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse
from tau2.domains.airline.environment import get_environment

logger.remove()  # tau2 logs every reservation it changes at DEBUG
environment = get_environment()
server = MCPServer("airline")

for tool in environment.tools.tools.values():
    server.add_tool(tool)  # tau2's own method: its signature is the tool's schema


@server.custom_route("/state", methods=["GET"])
async def state(_: Request) -> JSONResponse:
    """The whole database, compact (about 3 MB): flights, users and reservations by id."""
    return JSONResponse(environment.tools.db.model_dump(mode="json"))


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
