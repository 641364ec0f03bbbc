"""Acme's support agent on Semantic Kernel, written as its documentation writes one: a
`ChatCompletionAgent` over OpenAI's chat completions, its tool a kernel function of a plugin.
On the wire the tool is `OrderPlugin-lookup_order`; the fixtures name it `lookup_order`. The
question is its argument, the answer what it prints."""

import asyncio
import sys
from typing import Annotated

from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
from semantic_kernel.functions import kernel_function


class OrderPlugin:
    @kernel_function(description="Look up an order's shipping status.")
    def lookup_order(self, order_id: Annotated[str, "The order's id"]) -> str:
        return f'{{"order_id": "{order_id}", "status": "shipped"}}'


agent = ChatCompletionAgent(
    service=OpenAIChatCompletion(ai_model_id="gpt-4.1-mini"),
    name="Support",
    instructions="You are Acme's support agent. Look an order up before you say where it is.",
    plugins=[OrderPlugin()],
)


async def main() -> None:
    response = await agent.get_response(messages=sys.argv[1])
    print(response)


if __name__ == "__main__":
    asyncio.run(main())
