"""A helper whose prompt change is three hunks, one of which (line 5 of the head's prompt,
"Guess when unsure.") makes its answer to question-1 wrong: every assertion still passes, and
only the Eval's pairwise judge (`evalward init`'s defaults: adaptive reps 1 to 8, a calibrated
judge) finds it worse. The pull request attribution's tests in pairs run, on the command line
(tests/cli/test_attribution_pairs.py) and through the action
(tests/action/test_attribution_pairs.py; tests/action/test_attribution_pooled_pairs.py, with a
suite of its own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.model_server import ScriptedModelServer, text
from support.documents import by_label, documents, eval_for
from support.gitrepo import GitRepo
from verdict.test_pairwise_one_fixture import (
    BAD,
    CALIBRATION,
    GOOD,
    RUBRIC,
    answer,
    finals,
    fixture,
)
from verdict.test_pairwise_one_fixture import choice as perfect

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: helper }
spec:
  models: [openai/gpt-4.1-mini]
  systemFile: prompts/helper.md
"""
BASE_PROMPT = "Answer.\nBe kind.\n\nBe exact.\n\nKeep it short.\n"
GUESS = "Guess when unsure.\n"
"""The hunk that makes question-1's answer wrong (line 5 of the head's prompt)."""
HEAD_PROMPT = "Answer clearly.\nBe kind.\n\nBe exact.\n" + GUESS + "\nKeep it very short.\n"


def suite(fixtures: int) -> str:
    """The helper's Eval over `fixtures` questions, judged in pairs at init's adaptive reps."""
    return documents(
        *(fixture(index) for index in range(fixtures)),
        eval_for(
            "helper",
            by_label("helper"),
            f"judge: {{ model: openai/gpt-4.1-mini, pairwise: {{ rubric: {RUBRIC}, "
            "calibration: answer-pairs } }",
            "execution: { reps: { min: 1, max: 8 } }",
        ),
        CALIBRATION,
    )


SUITE = suite(3)


def script(model: ScriptedModelServer) -> None:
    """A perfect pairwise judge; the agent answers question-1 wrongly where told to guess."""
    for preference in ("A", "B", "tie"):

        def asks(body: dict[str, Any], preference: str = preference) -> bool:
            shown = finals(body)
            return shown is not None and perfect(*shown) == preference

        model.script(asks, text(answer(preference)))

    def guesses(body: dict[str, Any]) -> bool:
        said = json.dumps(body)
        return GUESS.strip() in said and "Question 1?" in said

    model.script(guesses, text(BAD))
    model.script(lambda body: True, text(GOOD))


def project(path: Path, config: str | None = None, suite: str = SUITE) -> GitRepo:
    """main: the helper and `suite` (`config` its evalward.yaml, None for none); then a
    branch `guessing` with the three-hunk prompt committed."""
    repo = GitRepo(path)
    repo.commit(
        "the helper",
        {
            "agents/helper.yaml": AGENT,
            "prompts/helper.md": BASE_PROMPT,
            "evals/suite.yaml": suite,
            ".gitignore": ".evalward/\nout/\n",
            **({"evalward.yaml": config} if config is not None else {}),
        },
    )
    repo.git("branch", "-M", "main")
    repo.branch("guessing")
    repo.commit("a guessing helper", {"prompts/helper.md": HEAD_PROMPT})
    return repo
