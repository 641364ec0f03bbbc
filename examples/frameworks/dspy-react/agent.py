"""Acme's support agent on DSPy, written as its documentation writes one: a ReAct module over
a LiteLLM model, its tool a plain function. DSPy sends no `tools` field: the tool protocol is
in the prompt's text, which evalward's model proxy reads. The question is its argument, the
answer what it prints."""

import sys

import dspy


def lookup_order(order_id: str) -> str:
    """Look up an order's shipping status."""
    return f'{{"order_id": "{order_id}", "status": "shipped"}}'


class Support(dspy.Signature):
    """You are Acme's support agent. Look an order up before you say where it is."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


dspy.configure(lm=dspy.LM("openai/gpt-4.1-mini", cache=False))
agent = dspy.ReAct(Support, tools=[lookup_order])

if __name__ == "__main__":
    print(agent(question=sys.argv[1]).answer)
