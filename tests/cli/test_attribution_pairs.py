"""A fixture only the pairwise judge finds worse is traced to its hunk: every assertion passes
on both sides, question-1 loses every pair on the head, and the gate blocks on that alone.
`evalward run --base main` with every default (adaptive reps 1 to 8, the result cache on,
attribution's budget half the run's calls) runs the variants' question-1 against the base's
runs (read from the cache) and judges them in pairs: the line that makes its answer wrong is
named, where before the comment said nothing of where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, error, text
from support.clirun import run_for_results
from support.guessing import GUESS, project, script
from support.suite import provider_env
from verdict.test_pairwise_one_fixture import finals

pytestmark = pytest.mark.e2e


def test_a_fixture_only_the_pairwise_judge_finds_worse_is_traced_to_its_line(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    script(model)
    repo = project(tmp_path / "repo")

    code, results, said = run_for_results(
        repo.path, "--base", "main", cache=True, **provider_env(model)
    )

    assert code == 1, said
    assert all(f["status"] == "pass" for f in results["fixtures"])  # the judge alone saw it
    found = results["attribution"]
    (regression,) = found["regressions"]
    assert (regression["fixtures"], regression["inPairs"]) == (["question-1"], True)
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/helper.md", 5)
    # each hunk applied alone to the base first: line 1 costs a run and a tie; line 5 loses
    # its pairs until the test settles worse, then the head without it ties: 26 calls
    assert [(t["way"], t["regressed"]) for t in regression["trials"]] == [
        ("applied", False),
        ("applied", True),
        ("reverted", False),
    ]
    assert found["spentModelCalls"] <= found["budgetModelCalls"]
    assert found["budgetModelCalls"] == results["run"]["spent"]["model_calls"] // 2
    trials = {t["way"]: t for t in regression["trials"] if t["hunks"] == regression["culprit"]}
    (removed,) = trials["reverted"]["scores"]
    (reproduced,) = trials["applied"]["scores"]
    assert removed["pairs"] and removed["passed"] == removed["runs"] >= 1
    assert reproduced["pairs"] and reproduced["passed"] == 0 and reproduced["runs"] >= 2
    assert "### 🧭 Where it regressed" in said and "prompts/helper.md:5" in said
    assert "(`question-1`, worse by the pairwise judge)" in said


def test_without_the_result_cache_the_variants_replay_no_calibration(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """`--no-cache`, and a budget of four times the run's calls: the variants run the base's
    question-1 again beside their own, but the judge's calibration, replayed once for the
    gate (30 calls), is not replayed for each variant: their pairwise calls are their
    pairs' orders, at most two a pair."""
    script(model)
    repo = project(tmp_path / "repo", "attribution: { budget: 4 }\n")

    code, results, said = run_for_results(repo.path, "--base", "main", **provider_env(model))

    assert code == 1, said
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    pairs = sum(s["runs"] for t in regression["trials"] for s in t["scores"])
    asked = results["run"]["attribution_spent"]["calls_by_purpose"]["pairwise"]
    assert 0 < asked <= 2 * pairs, (asked, pairs)


def test_pairs_the_judge_could_not_answer_prove_nothing_smaller_than_the_whole_change(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The judge is down from the moment the first variant that guesses without the head's
    other words runs (the base with line 5 alone): its pairs get no answer, and no trial
    whose pairs went unanswered is read as worse or as fixed. Line 5 taken back is fixed, but
    the base with it alone decided nothing: the only set proven is the whole change, the
    head without it judged no worse and the head itself the gate's own runs, which the judge
    answered. The trials whose pairs went unanswered say they decided nothing."""
    down = {"now": False}

    def watches(body: dict[str, Any]) -> bool:  # sees every request first, answers none
        said = json.dumps(body)
        if finals(body) is None and GUESS.strip() in said and "Answer clearly" not in said:
            down["now"] = True
        return False

    model.script(watches, text(""))
    model.script(
        lambda body: down["now"] and finals(body) is not None,
        error(503, headers={"Retry-After": "0"}),
    )
    script(model)
    repo = project(tmp_path / "repo", "attribution: { budget: 4 }\n")

    code, results, said = run_for_results(
        repo.path, "--base", "main", cache=True, **provider_env(model)
    )

    assert code == 1, said  # the gate's judge answered: it blocks, as without attribution
    (regression,) = results["attribution"]["regressions"]
    trials = regression["trials"]
    assert regression["result"] == "attributed", regression["reason"]
    assert regression["culprit"] == [0, 1, 2]
    unanswered = [t for t in trials if t["notBuilt"]]
    assert unanswered and all("decided nothing" in t["notBuilt"] for t in unanswered)
    assert any("gave no answer" in t["notBuilt"] for t in unanswered), unanswered
    brought_back = [t for t in trials if t["way"] == "applied" and t["regressed"]]
    assert [(t["hunks"], t["gateRuns"]) for t in brought_back] == [([0, 1, 2], True)]
    assert [t["gateRuns"] for t in trials].count(True) == 1
