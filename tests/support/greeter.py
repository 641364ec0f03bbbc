"""The smallest suite: a `greeter` agent, its Eval and one `greeting` fixture saying "Hi!",
each part built apart so a test can vary the model, the Eval's settings or the assertions."""

from __future__ import annotations

from support.documents import by_label, documents, eval_for
from support.gitrepo import GitRepo


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


def model_change(repo: GitRepo) -> tuple[str, str]:
    """Commit to `repo` the greeter on `openai/gpt-4.1-mini`, its greeting passing when the
    answer holds "Hello", then on a branch `feature` a head moving it to `openai/gpt-4.1`:
    (base, head)."""
    agent = greeter_agent("openai/%s")
    suite = documents(greeter_eval(), greeting_fixture("{ type: contains, value: Hello }"))
    base = repo.commit(
        "a greeter", {"agents/greeter.yaml": agent % "gpt-4.1-mini", "evals/greeter.yaml": suite}
    )
    repo.branch("feature")
    head = repo.commit("another model", {"agents/greeter.yaml": agent % "gpt-4.1"})
    return base, head
