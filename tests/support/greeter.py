"""The smallest suite: a `greeter` agent, its Eval and one `greeting` fixture saying "Hi!",
each part built apart so a test can vary the model, the Eval's settings or the assertions."""

from __future__ import annotations

from support.documents import by_label, eval_for


def greeter_agent(models: str, system: str = "Greet.") -> str:
    """The greeter Agent on `models` (a flow sequence's items)."""
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: greeter }}
spec:
  models: [{models}]
  system: {system}
"""


def greeter_eval(*settings: str, labelled: bool = False) -> str:
    """The greeter's Eval over `greeting` (over the fixtures labelled `agent: greeter` when
    `labelled`), with more `spec` lines."""
    select = by_label("greeter") if labelled else "fixtures: [greeting]"
    return eval_for("greeter", select, *settings)


def greeting_fixture(*assertions: str) -> str:
    """The `greeting` fixture, with `assertions` (each an item's text, after its `- `)."""
    items = "".join(f"    - {assertion}\n" for assertion in assertions)
    return f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: greeting }}
spec:
  targetAgent: greeter
  input: {{ type: prompt, payload: {{ prompt: "Hi!" }} }}
  assertions:
{items}"""
