"""What a pairwise judge costs an unchanged pull request as `evalward init` sets it up, counted
on the model server, run as GitHub runs the action at init's defaults (adaptive reps 1 to 8)
over ten fixtures, each with a `contains` assertion and an absolute judge rubric, with init's
calibration (fourteen labelled pairs, no tie) and init's workflow: a push to the default branch
runs first and keeps the calibration's replay in the cache a pull request restores. The agent
answers each question with the same text every run, as a deterministic agent does; its
pairwise judge is scripted to prefer the right answer. The same repository judged by its
rubric alone, the first pull request with the pairwise judge (its base a new commit, so that
no run is reused), and one in a workspace whose cache has no replay."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from action.test_github_events import real_payload
from evalward.scoring.judges.judge import CLOSE, OPEN
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.documents import by_label, documents, eval_for
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

FIXTURES = 10
RUBRIC = "Which reply answers the question correctly?"
GOOD = "The right answer."
BAD = "A wrong answer."
CALIBRATION_INPUT = "Any?"
CALIBRATION_PAIRS = 14
"""As init writes them: pairs of a right and a wrong answer, no tie."""


def suite(system: str, *, pairwise: bool) -> str:
    agent = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: helper }}
spec:
  models: [openai/gpt-4.1-mini]
  system: {system}
"""
    fixtures = [
        f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: question-{index}, labels: {{ agent: helper }} }}
spec:
  targetAgent: helper
  input: {{ type: prompt, payload: {{ prompt: "Question {index}?" }} }}
  assertions:
    - {{ type: contains, value: answer }}
    - {{ type: judge, rubric: Is the question answered?, minScore: 0.8 }}
"""
        for index in range(FIXTURES)
    ]
    judge = "judge: { model: openai/gpt-4.1-mini }"
    calibration = []
    if pairwise:
        judge = (
            "judge: { model: openai/gpt-4.1-mini, pairwise: "
            f"{{ rubric: {RUBRIC}, calibration: answer-pairs }} }}"
        )
        calibration = [
            f"""\
apiVersion: evalward.dev/v1
kind: JudgeCalibration
metadata: {{ name: answer-pairs }}
spec:
  rubric: {RUBRIC}
  judgeModels: [openai/gpt-4.1-mini]
  pairs:
"""
            + "".join(
                f'    - {{ input: "{CALIBRATION_INPUT}", outputA: "{GOOD}", outputB: "{BAD}", '
                "humanPreference: A }\n"
                f'    - {{ input: "{CALIBRATION_INPUT}", outputA: "{BAD}", outputB: "{GOOD}", '
                "humanPreference: B }\n"
                for _ in range(CALIBRATION_PAIRS // 2)
            )
        ]
    return documents(
        agent,
        *fixtures,
        eval_for("helper", by_label("helper"), judge, "execution: { reps: { min: 1, max: 8 } }"),
        *calibration,
    )


def compared(body: dict[str, Any]) -> dict[str, Any] | None:
    """What a pairwise ask shows (None for any other request)."""
    user = body["messages"][-1]["content"] if body.get("messages") else ""
    if "Compare run A and run B" not in user:
        return None
    shown: dict[str, Any] = json.loads(user.split(OPEN + "\n", 1)[1].rsplit("\n" + CLOSE, 1)[0])
    return shown


def rubric_ask(body: dict[str, Any]) -> bool:
    return "Grade the run against the rubric" in json.dumps(body.get("messages", []))


def script(model: ScriptedModelServer) -> None:
    """A judge that calls equal answers a tie and the right one better; an agent that always
    answers right; an absolute judge that passes it."""
    cited = [{"run": run, "step": 2, "quote": "answer"} for run in ("A", "B")]
    for preference in ("A", "B", "tie"):

        def asks(body: dict[str, Any], preference: str = preference) -> bool:
            shown = compared(body)
            if shown is None:
                return False
            a, b = (GOOD in shown["A_final"]), (GOOD in shown["B_final"])
            return preference == ("tie" if a == b else "A" if a else "B")

        reply = {"preference": preference, "reason": "correctness", "evidence": cited}
        model.script(asks, text(json.dumps(reply)))
    verdict = {"score": 0.9, "confidence": 0.8, "summary": "Answers it.", "violations": []}
    model.script(rubric_ask, text(json.dumps(verdict)))
    model.script("Question", text(GOOD))


@dataclass(frozen=True)
class Calls:
    runs: int
    rubric: int
    pairwise: int
    calibration: int

    @property
    def all(self) -> int:
        return self.runs + self.rubric + self.pairwise + self.calibration


def calls_of(requests: list[dict[str, Any]]) -> Calls:
    shown = [compared(body) for body in requests]
    asks = [s for s in shown if s is not None]
    calibration = sum(s["input"] == CALIBRATION_INPUT for s in asks)
    rubric = sum(rubric_ask(body) for body in requests)
    return Calls(
        runs=len(requests) - len(asks) - rubric,
        rubric=rubric,
        pairwise=len(asks) - calibration,
        calibration=calibration,
    )


@dataclass(frozen=True)
class PullRequest:
    """What one pull request asked the model server, its results.json and its comment."""

    calls: Calls
    results: dict[str, Any]
    comment: str


def pull_request(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    *,
    number: int,
    prompt: str,
    pairwise: bool,
) -> PullRequest:
    """An unchanged pull request on a new base commit (`prompt`): the head only rewords the
    prompt, the agent answers alike. What it asked the model server."""
    repo.checkout("main")
    base = repo.commit(f"base {number}", {"helper.yaml": suite(prompt, pairwise=pairwise)})
    repo.branch(f"change-{number}")
    head = repo.commit("reworded", {"helper.yaml": suite(prompt + " Please.", pairwise=pairwise)})
    github.add_pull(FakePull(number=number, head_sha=head, base_sha=base))
    before = len(model.requests)
    event = pull_request_event(github.repository, number, base, head)
    run = run_action(repo.path, github, event, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    results = run.results()
    assert results["result"] == "pass"
    [comment] = github.comments_on(number)
    return PullRequest(calls_of(model.requests[before:]), results, comment["body"])


def push(repo: GitRepo, github: FakeGitHub, env: dict[str, str]) -> None:
    """init's workflow on a push to the default branch: its runs (of a prompt no pull request
    below uses) and the calibration's replay, kept in the cache."""
    repo.checkout("main")
    commit = repo.commit("pushed", {"helper.yaml": suite("Start.", pairwise=True)})
    payload = real_payload("push", ref="refs/heads/main", after=commit)
    payload["repository"]["default_branch"] = "main"
    run = run_action(repo.path, github, payload, env=env, event_name="push")
    assert run.returncode == 0, run.stdout + run.stderr


def measure(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> tuple[PullRequest, PullRequest, Calls]:
    """The rubric alone, the pairwise judge's first pull request after a push to the default
    branch, and what that push asked."""
    script(model)
    repo.commit("start", {".gitignore": ".evalward/\n"})
    alone = pull_request(repo, github, model, env, number=7, prompt="Answer.", pairwise=False)
    before = len(model.requests)
    push(repo, github, env)
    pushed = calls_of(model.requests[before:])
    first = pull_request(repo, github, model, env, number=8, prompt="Reply.", pairwise=True)
    return alone, first, pushed


def test_an_unchanged_pull_request_asks_no_pair_of_equal_text_and_no_replay_after_a_push(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    alone, first, pushed = measure(repo, github, model, env)

    # the rubric alone: each fixture once on the head, its rubric asked once; no base run
    assert alone.calls == Calls(runs=FIXTURES, rubric=FIXTURES, pairwise=0, calibration=0)
    # the push replayed the calibration, both orders of every pair, and kept it
    assert pushed == Calls(
        runs=FIXTURES, rubric=FIXTURES, pairwise=0, calibration=2 * CALIBRATION_PAIRS
    )
    # the pull request: each fixture once a side; two runs of the same text are a tie asked
    # nothing; the rubric on the head's runs only (the pairwise judge settles every fixture)
    assert first.calls == Calls(runs=2 * FIXTURES, rubric=FIXTURES, pairwise=0, calibration=0)
    [head] = [e for e in first.results["evals"] if e["side"] == "head"]
    record = head["pairwise"]
    assert record["agreement"] == 1.0 and record["left_out_reason"] == ""
    assert record["pooled_counts"] == {
        "head": 0, "base": 0, "ties": FIXTURES, "inconsistent": 0, "unavailable": 0,
        "pairs": FIXTURES,
    }  # fmt: skip
    assert all(pair["identical"] and pair["orders"] == [] for pair in record["pairs"])


def test_an_unchanged_pull_request_with_inits_pairwise_judge_costs_at_most_twice_the_rubric(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    alone, first, _ = measure(repo, github, model, env)
    assert first.calls.all <= 2 * alone.calls.all

    # what was not asked is said, never shown as a score: results.json marks each base run's
    # judge assertion deferred and counts them on the base's Eval; the comment says why
    [base] = [e for e in first.results["evals"] if e["side"] == "base"]
    assert base["not_judged"] == FIXTURES
    runs = [f for f in first.results["fixtures"] if f["side"] == "base"]
    assert len(runs) == FIXTURES
    for run in runs:
        assert run["status"] == "skipped"
        judged = [a for a in run["assertions"] if a["type"] == "judge"]
        assert [a["deferred"] for a in judged] == [True]
        assert judged[0]["message"].startswith("not judged: the pairwise judge settled it")
    assert "| not judged → **" in first.comment
    assert "base not judged: the pairwise judge settled it (10 base runs" in first.comment


def test_a_pull_request_whose_cache_has_no_replay_asks_the_calibration_once(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    script(model)
    repo.commit("start", {".gitignore": ".evalward/\n"})
    first = pull_request(repo, github, model, env, number=8, prompt="Reply.", pairwise=True)
    later = pull_request(repo, github, model, env, number=9, prompt="Respond.", pairwise=True)

    # fourteen pairs in both orders, on top of the pull request's own calls; then kept
    own = Calls(runs=2 * FIXTURES, rubric=FIXTURES, pairwise=0, calibration=0)
    assert first.calls == Calls(
        runs=own.runs, rubric=own.rubric, pairwise=0, calibration=2 * CALIBRATION_PAIRS
    )
    assert later.calls == own
