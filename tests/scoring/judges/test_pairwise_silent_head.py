"""A pairwise preference counts only when the judge cites a step of each run whose quote stands
in it; one it cannot back on the head's side is a tie. So a head whose agent answered nothing
(an empty reply, white space, or only characters a reader ignores) could not be quoted at
all: a judge that prefers the base's warm greeting over the head's silence was unsupported on
every pair, every pair a tie, and the silent head passed (exit 0) wherever the fixture's own
checks pass an empty reply (`notContains`, a tool called, a state criterion). A run whose own
words hold nothing to quote needs no citation: its silence is what the judge read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, text
from scoring.judges.test_pairwise_gate import (
    CALIBRATION,
    CURT,
    GOOD,
    RUBRIC,
    pairwise_of,
    shown_finals,
)
from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.suite import provider_env

pytestmark = pytest.mark.hostile

SILENT = {"empty": "", "white space": " \n ", "invisible": "\u2060\u034f"}
"""Replies with nothing to quote in them."""


def suite(system: str) -> str:
    """The greeter judged pairwise, its fixture's own check one an empty reply passes."""
    pairwise = f"{{ rubric: {RUBRIC}, margin: 0.4, calibration: greeting-pairs }}"
    return documents(
        greeter_agent("openai/gpt-4.1-mini", system),
        greeting_fixture("{ type: notContains, value: password }"),
        greeter_eval(
            f"judge: {{ model: openai/gpt-4.1-mini, pairwise: {pairwise} }}",
            "execution: { repsPerFixture: 4 }",
            "scoring: { gate: { falseBlockRate: 0.2 } }",
        ),
        CALIBRATION,
    )


def _prefers_warm(warm_first: bool, other: str) -> str:
    """Prefers the warm greeting, quoting the other reply as it is (nothing, when silent)."""
    warm, curt = ("A", "B") if warm_first else ("B", "A")
    return json.dumps(
        {
            "preference": warm,
            "reason": "One reply offers help; the other does not.",
            "evidence": [
                {"run": warm, "step": 2, "quote": "How can I help"},
                {"run": curt, "step": 2, "quote": other.strip()},
            ],
        }
    )


@pytest.mark.parametrize("silent", SILENT.values(), ids=SILENT.keys())
def test_a_head_cannot_make_its_losses_ties_by_saying_nothing(
    repo: GitRepo, tmp_path: Path, model: ScriptedModelServer, silent: str
) -> None:
    model.script("Greet tersely.", text(silent))
    model.script("Greet warmly.", text(GOOD))
    for other in (CURT, silent):  # the calibration's curt replies, and the head's
        for warm_first in (True, False):
            pair = (GOOD, other) if warm_first else (other, GOOD)

            def shown(body: dict[str, Any], pair: tuple[str, str] = pair) -> bool:
                return shown_finals(body) == pair

            model.script(shown, text(_prefers_warm(warm_first, other)))
    repo.commit("a greeter", {"greeter.yaml": suite("Greet warmly."), ".gitignore": ".evalward/\n"})
    repo.branch("terse")
    repo.commit("a silent greeter", {"greeter.yaml": suite("Greet tersely.")})
    out = tmp_path / "out"
    done = evalward(
        "run", "--base", "main", "--output-dir", str(out), cwd=repo.path,
        **provider_env(model),
    )  # fmt: skip
    document = json.loads((out / "results.json").read_text())
    record = pairwise_of(document)

    assert done.returncode == 1, (record["pooled_counts"], done.stdout[-1500:])
    assert record["blocks"] and record["pooled_counts"]["base"] == 4, record["pooled_counts"]
    # the fixture's own check passed the silent head: only the pairwise judge saw it
    assert all(f["status"] == "pass" for f in document["fixtures"])
