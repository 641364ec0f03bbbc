"""Acme's support agent on LangGraph, written as its documentation writes one: the prebuilt
ReAct agent over LangChain's OpenAI chat model. The question is its argument, the answer what
it prints."""

import sys

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's shipping status."""
    return f'{{"order_id": "{order_id}", "status": "shipped"}}'


agent = create_react_agent(
    ChatOpenAI(model="gpt-4.1-mini"),
    tools=[lookup_order],
    prompt="You are Acme's support agent. Look an order up before you say where it is.",
)

if __name__ == "__main__":
    result = agent.invoke({"messages": [{"role": "user", "content": sys.argv[1]}]})
    print(result["messages"][-1].content)
