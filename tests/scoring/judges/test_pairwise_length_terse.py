"""`lengthControlled: true` counts a preference for the run more than `lengthTolerance` longer
as a tie. The head chooses its own length: the curter greeter of test_pairwise_gate ("Hello.
What?" against "Hello! How can I help you today?"), which the same judge blocks without length
control, had every pair it lost counted a tie, and passed (exit 0). Length ties that set aside
the base's wins are now weighed: where, counted as the judge gave them, they find the head
worse, the judge cannot tell content from length, and the Eval is inconclusive; under adaptive
reps they ask for the pairs that settle it, where two pairs of ties asked for none."""

from __future__ import annotations

from pathlib import Path

import pytest

from scoring.judges.test_pairwise_gate import CURT, GOOD, pairwise_of, run, script, suite
from support.gitrepo import GitRepo

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
