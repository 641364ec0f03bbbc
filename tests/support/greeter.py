"""The smallest suite: a `greeter` agent, its Eval and one `greeting` fixture saying "Hi!",
each part built apart so a test can vary the model, the Eval's settings or the assertions."""

from __future__ import annotations


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


def eval_for(agent: str, select: str, *settings: str) -> str:
    """The Eval `<agent>-eval` of `agent`, choosing its fixtures by `select` (a `spec` line:
    `fixtures: [...]` or `fixtureSelector: ...`), with more `spec` lines (`judge: {...}`)."""
    extra = "".join(f"  {line}\n" for line in settings)
    return f"""\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: {agent}-eval }}
spec:
  targetAgent: {agent}
  {select}
{extra}"""


def greeter_eval(*settings: str, by_label: bool = False) -> str:
    """The greeter's Eval over `greeting` (over the fixtures labelled `agent: greeter` when
    `by_label`), with more `spec` lines."""
    labelled = "fixtureSelector: { matchLabels: { agent: greeter } }"
    return eval_for("greeter", labelled if by_label else "fixtures: [greeting]", *settings)


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


def documents(*parts: str) -> str:
    """YAML documents as one file."""
    return "---\n".join(parts)
