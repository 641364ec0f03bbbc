"""Acme's support agent on Pydantic AI, written as its documentation writes one: an `openai:`
model (the Responses API) and a plain tool. The question is its argument, the answer what it
prints."""

import sys

from pydantic_ai import Agent

agent = Agent(
    "openai:gpt-4.1-mini",
    instructions="You are Acme's support agent. Look an order up before you say where it is.",
)


@agent.tool_plain
def lookup_order(order_id: str) -> str:
    """Look up an order's shipping status."""
    return f'{{"order_id": "{order_id}", "status": "shipped"}}'


if __name__ == "__main__":
    print(agent.run_sync(sys.argv[1]).output)
