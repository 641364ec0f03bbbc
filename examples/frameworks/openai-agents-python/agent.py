"""Acme's support agent on the OpenAI Agents SDK, written as the SDK's documentation writes
one. Nothing in it is for evalward: the question is its argument, the answer what it prints."""

import sys

from agents import Agent, Runner, function_tool


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order's shipping status."""
    return f'{{"order_id": "{order_id}", "status": "shipped"}}'


agent = Agent(
    name="Support",
    instructions="You are Acme's support agent. Look an order up before you say where it is.",
    model="gpt-4.1-mini",
    tools=[lookup_order],
)

if __name__ == "__main__":
    result = Runner.run_sync(agent, sys.argv[1])
    print(result.final_output)
