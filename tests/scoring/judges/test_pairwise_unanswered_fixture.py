"""Pairs the judge gave no answer on say nothing, and a test they belong to that is not settled
leaves the pairwise judge without a verdict. That was asked of the pooled test alone: a head
that is better on one fixture (the judge prefers its greeting in every pair, which settles the
pooled test "not worse") and answers the fixture it breaks at such length (36 KiB) that every
pair of it, shown to the judge in both runs' steps and finals, is too large for the judge's
provider (HTTP 400) had that fixture's pairs all unanswered, "no pairs", and passed (exit 0).
A gating fixture whose pairs went unanswered and whose own test is not settled makes the
Eval incomplete."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, error, text
from scoring.judges.test_pairwise_gate import (
    CALIBRATION,
    CURT,
    GOOD,
    RUBRIC,
    pairwise_of,
    shown_finals,
)
from support.clirun import evalward
from support.documents import documents, eval_for
from support.gitrepo import GitRepo
from support.greeter import greeter_agent
from support.suite import provider_env

pytestmark = pytest.mark.hostile

BETTER = "Hello! How can I help you today? I am glad you are here."
BYE = "Goodbye! Have a great day."
SPRAWLING = "Goodbye. " + "ok " * 12000
"""The head's farewell: it passes `contains: Goodbye`, and is too long for the judge's
provider twice over."""
PROVIDER_LIMIT = 60_000
"""The judge's provider refuses a request longer than this (its context window)."""


def fixture(name: str, prompt: str, value: str) -> str:
    return f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name} }}
spec:
  targetAgent: greeter
  input: {{ type: prompt, payload: {{ prompt: "{prompt}" }} }}
  assertions:
    - {{ type: contains, value: {value} }}
"""


def suite(system: str) -> str:
    pairwise = f"{{ rubric: {RUBRIC}, margin: 0.4, calibration: greeting-pairs }}"
    return documents(
        greeter_agent("openai/gpt-4.1-mini", system),
        fixture("greeting", "Hi!", "Hello"),
        fixture("farewell", "Bye!", "Goodbye"),
        eval_for(
            "greeter",
            "fixtures: [greeting, farewell]",
            f"judge: {{ model: openai/gpt-4.1-mini, pairwise: {pairwise} }}",
            "execution: { repsPerFixture: 4 }",
            "scoring: { gate: { falseBlockRate: 0.2 } }",
        ),
        CALIBRATION,
    )


def _prefers(first: str, second: str, choice: str) -> str:
    cited = [
        {"run": "A", "step": 2, "quote": first[:20]},
        {"run": "B", "step": 2, "quote": second[:20]},
    ]
    return json.dumps({"preference": choice, "reason": "One offers more.", "evidence": cited})


def _script(model: ScriptedModelServer) -> None:
    def too_large(body: dict[str, Any]) -> bool:
        return len(json.dumps(body)) > PROVIDER_LIMIT

    model.script(too_large, error(400))
    for better, worse in ((GOOD, CURT), (BETTER, GOOD)):  # the calibration's, the greeting's
        for shown, choice in (((better, worse), "A"), ((worse, better), "B")):

            def asked(body: dict[str, Any], shown: tuple[str, str] = shown) -> bool:
                return shown_finals(body) == shown

            model.script(asked, text(_prefers(*shown, choice)))

    def said(*words: str) -> Any:
        return lambda body: all(word in json.dumps(body) for word in words)

    model.script(said("Greet better.", "Bye!"), text(SPRAWLING))
    model.script(said("Greet better.", "Hi!"), text(BETTER))
    model.script(said("Bye!"), text(BYE))
    model.script(said("Hi!"), text(GOOD))


def test_a_fixture_whose_pairs_went_unanswered_is_no_pass(
    repo: GitRepo, tmp_path: Path, model: ScriptedModelServer
) -> None:
    _script(model)
    repo.commit("a greeter", {"greeter.yaml": suite("Greet warmly."), ".gitignore": ".evalward/\n"})
    repo.branch("better")
    repo.commit("a better greeter", {"greeter.yaml": suite("Greet better.")})
    out = tmp_path / "out"
    done = evalward(
        "run", "--base", "main", "--output-dir", str(out), cwd=repo.path,
        **provider_env(model),
    )  # fmt: skip
    document = json.loads((out / "results.json").read_text())
    record = pairwise_of(document)
    verdicts = {v["fixture"]: v["verdict"] for v in record["fixtures"]}

    assert verdicts == {"greeting": "not worse", "farewell": "no pairs"}, record["fixtures"]
    assert record["pooled"] == "not worse"  # the greeting's pairs settle it
    assert done.returncode == 1, done.stdout[-1500:]
    assert "the test of farewell" in record["unavailable_reason"]
    head = next(e for e in document["evals"] if e["side"] == "head")
    assert head["passed"] is False and "farewell" in head["incomplete_reason"]
