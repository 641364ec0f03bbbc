"""The calibration `evalward init` writes, replayed on the judge a user has: a judge that
agrees with every pair gates; one that disagrees on a single pair is left out of the gate (too
few pairs to tell), so no pull request is blocked for it and the comment's first lines say why
and how many pairs it needs; a calibration big enough to show the judge bad fails closed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

MOCK = "evals/mock-replies.yaml"
CITED = [{"run": "A", "step": 2, "quote": "12345"}, {"run": "B", "step": 2, "quote": "12345"}]


def answers(
    match: dict[str, str], preference: str, cited: list[dict[str, object]] = CITED
) -> dict[str, object]:
    reply = {"preference": preference, "reason": "It gives a date.", "evidence": cited}
    return {"match": {"purpose": "pairwise", **match}, "always": {"content": json.dumps(reply)}}


def prefers_the_date_on_the_first_pair() -> list[dict[str, object]]:
    """The first calibration pair (its A gives the status, its B invents a date) judged for
    the date in both orders: as the base shown first it says B, as the head shown first A."""
    return [
        answers({"fixture": "pair-1", "side": "base"}, "B"),
        answers({"fixture": "pair-1", "side": "head"}, "A"),
    ]


def prefers_the_date_everywhere() -> list[dict[str, object]]:
    return [
        answers({"contains": '"A_final": "Order 12345 will arrive on Tuesday'}, "A"),
        answers({"contains": '"B_final": "Order 12345 will arrive on Tuesday'}, "B"),
    ]


def with_replies_first(repo: GitRepo, replies: list[dict[str, object]]) -> str:
    """init's mock replies with `replies` ahead of its own, written beside them."""
    script = yaml.safe_load((repo.path / MOCK).read_text())
    script["replies"] = replies + script["replies"]
    path = repo.path / "evals" / "judge-replies.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False))
    return "evals/judge-replies.yaml"


def inits_project_with_a_change(repo: GitRepo) -> None:
    assert evalward("init", cwd=repo.path).returncode == 0
    repo.git("branch", "-m", "main", "trunk")
    repo.commit("evals")
    repo.branch("reworded")
    prompt = repo.path / "prompts" / "assistant.md"
    repo.commit("a reworded prompt", {"prompts/assistant.md": prompt.read_text() + "Be kind.\n"})


def run(repo: GitRepo, script: str, out: Path) -> tuple[int, str, dict[str, object]]:
    done = evalward(
        "run", "--base", "trunk", "--mock-script", script, "--output-dir", str(out),
        cwd=repo.path,
    )  # fmt: skip
    results = json.loads((out / "results.json").read_text())
    return done.returncode, done.stdout, results


def test_a_judge_agreeing_on_every_pair_of_inits_calibration_gates(
    repo: GitRepo, tmp_path: Path
) -> None:
    inits_project_with_a_change(repo)
    code, said, results = run(repo, MOCK, tmp_path / "out")

    assert code == 0, said
    assert results["result"] == "pass"
    [head] = [e for e in results["evals"] if e["side"] == "head"]
    assert head["pairwise"]["left_out_reason"] == ""
    assert head["pairwise"]["agreement"] == 1.0
    assert "left out of the gate" not in said


def test_a_judge_that_disagrees_on_one_pair_of_inits_calibration_is_left_out_not_blocking(
    repo: GitRepo, tmp_path: Path
) -> None:
    inits_project_with_a_change(repo)
    script = with_replies_first(repo, prefers_the_date_on_the_first_pair())
    code, said, results = run(repo, script, tmp_path / "out")

    # κ 0.86 on 14 pairs: neither shown at the floor nor below it; the rest of the Eval decides
    assert code == 0, said
    assert results["result"] == "pass"
    [head] = [e for e in results["evals"] if e["side"] == "head"]
    assert head["passed"] and not head["inconclusive_reason"]
    reason = head["pairwise"]["left_out_reason"]
    assert "too few pairs to tell" in reason and "κ of openai/gpt-4.1-mini is 0.86 on 14" in reason
    assert "label at least 14 pairs" in reason
    assert head["pairwise"]["pairs"] == []  # a judge left out is asked no pair
    headline = results["summary"]["headline"]
    assert headline.startswith("every affected Eval passes — assistant-eval's pairwise judge is")
    assert "left out of the gate: its calibration 'assistant-pairs' has too few pairs" in headline
    assert headline in said.splitlines()[0] + said  # the first thing the run says
    # its own line says the same, and counts no pair it did not judge
    assert "assistant-eval: left out of the gate — its calibration" in said
    assert "no fixture ran on both" not in said
    assert "base not judged: its pairwise judge is left out of the gate" in said
    assert "the pairwise judge settled it" not in said


def test_a_calibration_big_enough_to_show_the_judge_bad_fails_closed(
    repo: GitRepo, tmp_path: Path
) -> None:
    inits_project_with_a_change(repo)
    # the judge prefers the invented date on every pair: 0 of 14 agreed
    every = prefers_the_date_everywhere()
    code, _, results = run(repo, with_replies_first(repo, every), tmp_path / "out")

    assert code != 0
    assert results["result"] == "inconclusive"
    [head] = [e for e in results["evals"] if e["side"] == "head"]
    assert "below the floor 0.60" in head["inconclusive_reason"]
    assert "on its 14 pairs" in head["inconclusive_reason"]
    assert head["pairwise"]["left_out_reason"] == ""
    assert results["summary"]["headline"].startswith("assistant-eval is inconclusive")


WORSE = "Happy to help. What is your order number? It will arrive on Tuesday."
"""The head's answer to the question without an order number: it invents a date, and every
assertion still passes."""


def test_a_pull_request_cannot_shrink_the_calibration_to_leave_its_judge_out(
    repo: GitRepo, tmp_path: Path
) -> None:
    inits_project_with_a_change(repo)
    evals = repo.path / "evals" / "assistant.yaml"
    text = evals.read_text()
    cut = text.index("  pairs:\n") + len("  pairs:\n")
    kept = "".join(text[cut:].splitlines(keepends=True)[:3])
    # the pull request keeps three pairs, too few to tell, and answers worse on one fixture
    repo.commit("fewer pairs", {"evals/assistant.yaml": text[:cut] + kept})
    cited: list[dict[str, object]] = [
        {"run": "A", "step": 2, "quote": "order number"},
        {"run": "B", "step": 2, "quote": "order number"},
    ]
    asked = {"purpose": "agent", "fixture": "assistant-asks-for-the-order", "side": "head"}
    worse = [
        {"match": asked, "always": {"content": WORSE}},
        answers({"contains": f'"A_final": "{WORSE}'}, "B", cited),
        answers({"contains": f'"B_final": "{WORSE}'}, "A", cited),
    ]
    code, said, results = run(repo, with_replies_first(repo, worse), tmp_path / "out")

    # the base's calibration judges (gate-config: base): its fourteen pairs, and the judge blocks
    assert code != 0, said
    assert results["result"] == "fail"
    [head] = [e for e in results["evals"] if e["side"] == "head"]
    record = head["pairwise"]
    assert record["left_out_reason"] == "" and record["blocks"]
    assert record["agreement"] == 1.0
    assert "assistant-asks-for-the-order worse by the pairwise judge" in " ".join(record["why"])
