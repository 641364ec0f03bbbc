"""A drop only the pairwise judge's pooled preference test sees is traced to its hunk: every
assertion passes on both sides, and on each of four fixtures the base wins the first two pairs,
the head the third and the base every later one, so no fixture's own test can find the head
worse (a fixture is worse alone only where the base wins every pair after its first) while,
pooled over the four, the base wins 24 of 28 pairs and the gate blocks on that alone.
The action, with the result cache on (its default), runs each variant's four fixtures against
the base's runs and judges them in pairs: line 5 of the prompt ("Guess when unsure.") is
named in the comment and reviewed on its line, where the comment said "not traced".

The scripted model answers by what the agent is told (each prompt's own sequence of answers,
so a variant of the head is answered from its first rep as the head was), and a perfect judge
prefers the right answer in either order (`verdict/test_pairwise_one_fixture.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import Rule, ScriptedModelServer, text
from support.actionrun import gate_pull_request
from support.guessing import BASE_PROMPT, GUESS, project, suite
from support.suite import provider_env
from verdict.test_pairwise_one_fixture import BAD, GOOD, answer, finals
from verdict.test_pairwise_one_fixture import choice as perfect

pytestmark = pytest.mark.e2e

FIXTURES = [f"question-{index}" for index in range(4)]
PAIRS = "BBHBBBBB"
"""Who wins each pair of every fixture, in rep order, where the prompt says to guess."""


def system(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    return str(messages[0]["content"]) if messages and messages[0]["role"] == "system" else ""


def script(model: ScriptedModelServer) -> None:
    """The perfect judge; per fixture, the base's prompt answers as `PAIRS` has the base win,
    and each prompt that says to guess (the head's, and each variant's with line 5) answers
    as `PAIRS` has the head lose, from its own first request; any other prompt is right."""
    for preference in ("A", "B", "tie"):

        def asks(body: dict[str, Any], preference: str = preference) -> bool:
            shown = finals(body)
            return shown is not None and perfect(*shown) == preference

        model.script(asks, text(answer(preference)))
    for index in range(len(FIXTURES)):
        question = f"Question {index}?"
        guessing = [text(BAD if won == "B" else GOOD) for won in PAIRS]
        base = [text(GOOD if won == "B" else BAD) for won in PAIRS]
        for clearly in (True, False):  # line 1 and line 7 of the head, each there or not
            for shorter in (True, False):

                def told(
                    body: dict[str, Any], q: str = question, c: bool = clearly, s: bool = shorter
                ) -> bool:
                    said = system(body)
                    return (
                        q in json.dumps(body)
                        and GUESS.strip() in said
                        and ("Answer clearly" in said) == c
                        and ("very short" in said) == s
                    )

                model.rules.append(Rule(told, list(guessing), sequence=True))

        def on_base(body: dict[str, Any], q: str = question) -> bool:
            return q in json.dumps(body) and system(body).strip() == BASE_PROMPT.strip()

        model.rules.append(Rule(on_base, list(base), sequence=True))
    model.script(lambda body: True, text(GOOD))


def gated(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer, config: str | None
) -> dict[str, Any]:
    """Pull request 7 of `project`, gated by the action: its results.json."""
    script(model)
    repo = project(tmp_path / "repo", config, suite(len(FIXTURES)))
    base, head = repo.git("rev-parse", "main").strip(), repo.git("rev-parse", "HEAD").strip()
    run = gate_pull_request(repo, github, base, head, provider_env(model))
    assert run.returncode == 1, run.stdout + run.stderr
    results: dict[str, Any] = json.loads((repo.path / ".evalward/out/results.json").read_text())
    assert all(f["status"] == "pass" for f in results["fixtures"])  # the judge alone saw it
    (head_eval,) = [e for e in results["evals"] if e["side"] == "head"]
    record = head_eval["pairwise"]
    assert record["pooled"] == "worse" and not any(v["blocks"] for v in record["fixtures"])
    return results


def test_a_drop_only_the_pooled_preference_test_sees_is_traced_to_its_line(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    results = gated(tmp_path, github, model, "attribution: { budget: 1 }\n")

    found = results["attribution"]
    assert found["untraced"] == []
    (regression,) = found["regressions"]
    assert (regression["fixtures"], regression["inPairs"], regression["pooled"]) == (
        FIXTURES,
        True,
        True,
    )
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/helper.md", 5)
    # line 1 applied alone ties every first pair; line 5 loses its pairs as the head did, the
    # pooled test finding it worse; the head without it ties again
    trials = [(t["way"], t["regressed"], t["notBuilt"]) for t in regression["trials"]]
    assert trials == [("applied", False, ""), ("applied", True, ""), ("reverted", False, "")]
    lost = {s["fixture"]: (s["passed"], s["runs"]) for s in regression["trials"][1]["scores"]}
    assert lost == dict.fromkeys(FIXTURES, (1, 7))
    assert found["spentModelCalls"] <= found["budgetModelCalls"]
    (comment,) = github.comments_on(7)
    where = str(comment["body"]).split("### 🧭 Where it regressed\n\n")[1].split("\n\n")[0]
    named = ", ".join(f"`{name}`" for name in FIXTURES)
    assert where.startswith(
        f"- **helper-eval** ({named}, worse by the pairwise judge over them together (pooled "
        "preference test)): [`prompts/helper.md:5`]("
    ), where
    assert "— taken back, question-0: base preferred in 0/1 pairs" in where
    assert "the base with only it: question-0: base preferred in 6/7 pairs" in where
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("prompts/helper.md", 5)
    said = (
        "> This change makes helper-eval worse: its pairwise judge prefers the base's runs of "
        "question-0, question-1, question-2, question-3 to this head's taken together (pooled "
        "preference test), though they pass and none alone is worse. Taken back, the head is "
        "no worse (question-0: base preferred in 0/1 pairs"
    )
    assert said in review_comment["body"], review_comment["body"]


def test_at_the_default_budget_it_says_where_the_budget_stopped_it(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """Half the run's calls cover the variant with line 1 alone, not the one that loses its
    pairs until the pooled test settles: the finding says the budget ran out, and where to
    raise it."""
    results = gated(tmp_path, github, model, None)

    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "not attributable"
    assert "attribution.budget in the base branch's evalward.yaml raises it" in regression["reason"]
    assert [t["notBuilt"] for t in regression["trials"]][-1] == "the budget ran out during its runs"
