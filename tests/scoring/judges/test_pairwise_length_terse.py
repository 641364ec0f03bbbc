"""`lengthControlled: true` counts a preference for the run more than `lengthTolerance` longer
as a tie. The head chooses its own length: the curter greeter of test_pairwise_gate ("Hello.
What?" against "Hello! How can I help you today?"), which the same judge blocks without length
control, had every pair it lost counted a tie, and passed (exit 0). Length ties that set aside
the base's wins are now weighed: where, counted as the judge gave them, they find the head
worse, the judge cannot tell content from length, and the Eval is inconclusive; under adaptive
reps they ask for the pairs that settle it, where two pairs of ties asked for none. The
length is what the judge reads of each run: a head that pads the replies before a short answer
was, measured on its final answer alone, no longer, and kept the wins a judge gave its length."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fakes.model_server import ScriptedModelServer, text
from scoring.judges.test_pairwise_gate import (
    CURT,
    GOOD,
    RUBRIC,
    pairwise_of,
    run,
    script,
    shown_finals,
    suite,
)
from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_eval, greeting_fixture
from support.suite import provider_env

pytestmark = pytest.mark.hostile


REPS = {"fixed": "repsPerFixture: 4", "adaptive": "reps: { min: 2, max: 8 }"}


def length_controlled(system: str, reps: str) -> str:
    controlled = suite(system).replace("margin: 0.4", "margin: 0.4, lengthControlled: true")
    return controlled.replace(REPS["fixed"], reps)


@pytest.mark.parametrize("reps", REPS.values(), ids=REPS.keys())
def test_a_terse_head_cannot_make_its_losses_length_ties(
    repo: GitRepo, tmp_path: Path, reps: str
) -> None:
    repo.commit(
        "a greeter",
        {
            "greeter.yaml": length_controlled("Greet warmly.", reps),
            "mock.yaml": script(CURT),
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("terse")
    repo.commit("a terser greeter", {"greeter.yaml": length_controlled("Greet tersely.", reps)})
    code, said, document = run(repo, tmp_path / "out")

    assert code == 1, said
    record = pairwise_of(document)
    pairs = len(record["pairs"])
    assert pairs >= 4 and all(p["length_tie"] for p in record["pairs"]), record["pairs"]
    assert f"length control counted {pairs} of its {pairs} pairs" in record["inconclusive_reason"]
    head = next(e for e in document["evals"] if e["side"] == "head")
    assert head["passed"] is False and "lengthControlled" in head["inconclusive_reason"]
    assert len(GOOD) > len(CURT) * 1.2  # the base's answer is the longer by the tolerance


PADDING = "Let me look into that for you. " * 12
PADDED_AGENT = """\
import json, sys
sys.stdin.readline()
for said in {said!r}:
    print(json.dumps(said), flush=True)
"""
"""A command greeter: its events, one a line."""


def greeter(*said: dict[str, str]) -> str:
    return PADDED_AGENT.format(said=list(said))


def padded_suite() -> str:
    pairwise = f"{{ rubric: {RUBRIC}, margin: 0.4, view: conversation, lengthControlled: true }}"
    agent = (
        "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: greeter }\n"
        f"spec:\n  runtime:\n    command: [{sys.executable}, agent/greeter.py]\n"
        "  watch: [agent/*.py]\n"
    )
    return documents(
        agent,
        greeting_fixture("{ type: contains, value: Hello }"),
        greeter_eval(
            f"judge: {{ model: openai/gpt-4.1-mini, pairwise: {pairwise} }}",
            "execution: { repsPerFixture: 2 }",
        ),
    )


def test_a_head_cannot_pass_its_length_for_content_in_the_replies_before_its_answer(
    repo: GitRepo, tmp_path: Path, model: ScriptedModelServer
) -> None:
    """Under `view: conversation` the judge reads every reply, the one before the answer
    too: a head that pads it while its final answer is short is the longer run the judge
    reads, and a judge that prefers it for that length is counted a tie, never a win."""
    repo.commit(
        "a greeter",
        {
            "greeter.yaml": padded_suite(),
            "agent/greeter.py": greeter({"type": "final", "content": GOOD}),
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("padded")
    repo.commit(
        "a greeter that talks before it answers",
        {
            "agent/greeter.py": greeter(
                {"type": "assistant", "content": PADDING}, {"type": "final", "content": CURT}
            )
        },
    )
    for head_first in (True, False):  # a judge that prefers the run it reads more of
        shown = (CURT, GOOD) if head_first else (GOOD, CURT)
        head, base = ("A", "B") if head_first else ("B", "A")
        cited = [
            {"run": head, "step": 2, "quote": PADDING.strip()},
            {"run": base, "step": 2, "quote": GOOD},
        ]
        answer = {"preference": head, "reason": "It says more.", "evidence": cited}
        model.script(
            lambda body, shown=shown: shown_finals(body) == shown, text(json.dumps(answer))
        )
    out = tmp_path / "out"

    done = evalward(
        "run", "--base", "main", "--output-dir", str(out), cwd=repo.path, **provider_env(model)
    )

    record = pairwise_of(json.loads((out / "results.json").read_text()))
    pairs = record["pairs"]
    assert len(pairs) == 2, done.stdout + done.stderr
    assert all(p["orders"][0]["answer"] in ("A", "B") for p in pairs)  # it preferred the head
    assert [(p["preferred"], p["length_tie"]) for p in pairs] == [("tie", True)] * 2
    assert all(p["head_chars"] > p["base_chars"] * 1.2 for p in pairs)
    assert record["pooled_counts"]["head"] == 0
