"""Evalward's YAML documents for a test suite, built from their parts: an Eval of any agent,
the selector of the fixtures labelled for it, and an Eval with one labelled fixture."""

from __future__ import annotations


def documents(*parts: str) -> str:
    """YAML documents as one file."""
    return "---\n".join(parts)


def by_label(agent: str) -> str:
    """The `spec` line selecting the fixtures labelled `agent: <agent>`."""
    return f"fixtureSelector: {{ matchLabels: {{ agent: {agent} }} }}"


def eval_for(agent: str, select: str, *settings: str) -> str:
    """The Eval `<agent>-eval` of `agent`, choosing its fixtures by `select` (a `spec` line:
    `fixtures: [...]` or `by_label(agent)`), with more `spec` lines (`judge: {...}`)."""
    extra = "".join(f"  {line}\n" for line in settings)
    return f"""\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: {agent}-eval }}
spec:
  targetAgent: {agent}
  {select}
{extra}"""


def labelled_suite(agent: str, fixture: str, prompt: str, assertion: str) -> str:
    """`agent`'s Eval over its labelled fixtures, and one: `fixture`, giving it `prompt` and
    checking `assertion` (a flow mapping)."""
    return documents(
        eval_for(agent, by_label(agent)),
        f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {fixture}, labels: {{ agent: {agent} }} }}
spec:
  targetAgent: {agent}
  input: {{ type: prompt, payload: {{ prompt: {prompt} }} }}
  assertions:
    - {assertion}
""",
    )
