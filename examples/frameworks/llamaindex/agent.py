"""Acme's support agent on LlamaIndex, written as its documentation writes one: a
`FunctionAgent` over LlamaIndex's OpenAI model, its tool a plain function. LlamaIndex reads
its server's address from `OPENAI_API_BASE`, which evalward points at its model proxy. The
question is its argument, the answer what it prints."""

import asyncio
import sys

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.llms.openai import OpenAI


def lookup_order(order_id: str) -> str:
    """Look up an order's shipping status."""
    return f'{{"order_id": "{order_id}", "status": "shipped"}}'


agent = FunctionAgent(
    tools=[lookup_order],
    llm=OpenAI(model="gpt-4.1-mini"),
    system_prompt="You are Acme's support agent. Look an order up before you say where it is.",
)


async def main() -> None:
    response = await agent.run(user_msg=sys.argv[1])
    print(response)


if __name__ == "__main__":
    asyncio.run(main())
