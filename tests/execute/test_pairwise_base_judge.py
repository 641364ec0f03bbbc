"""The base's absolute judge beside a pairwise judge, under adaptive reps, run as GitHub runs the
action: asked only on the base runs of a fixture the head fails, before its verdict is
settled, so the words "regression" and "still failing" stay true; and a base run stored in
the result cache unjudged is never served as judged to a run that reads its judge (fixed reps,
which compare the sides' scores), and its judge's calls, asked later, count once in
attribution's budget."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from scoring.judges.test_pairwise_cost import (
    BAD,
    FIXTURES,
    GOOD,
    compared,
    rubric_ask,
    suite,
)
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

BROKEN = "question-0"


def script(
    model: ScriptedModelServer, *, head_prompt: str, base_fails: bool = False, once: bool = False
) -> None:
    """A pairwise judge that prefers the right answer; a rubric judge that passes only it; an
    agent that answers right, but wrong on question 0 on the head (its first time only, when
    `once`; on the base too, when `base_fails`)."""
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

    def graded(body: dict[str, Any], right: bool) -> bool:
        return rubric_ask(body) and (GOOD in json.dumps(body["messages"])) == right

    passes = {"score": 0.9, "confidence": 0.8, "summary": "Answers it.", "violations": []}
    fails = {"score": 0.1, "confidence": 0.8, "summary": "Wrong.", "violations": []}
    model.script(lambda body: graded(body, True), text(json.dumps(passes)))
    model.script(lambda body: graded(body, False), text(json.dumps(fails)))

    def wrong(body: dict[str, Any]) -> bool:
        said = json.dumps(body.get("messages", []))
        return "Question 0?" in said and (base_fails or head_prompt in said)

    if once:
        model.script_sequence(wrong, text(BAD), text(GOOD))
    else:
        model.script(wrong, text(BAD))
    model.script("Question", text(GOOD))


def judge_of(run: dict[str, Any]) -> dict[str, Any]:
    [judged] = [a for a in run["assertions"] if a["type"] == "judge"]
    return judged


def pull_request(repo: GitRepo, github: FakeGitHub, env: dict[str, str], head_prompt: str) -> Any:
    """A pull request whose head rewords the agent's prompt (to `head_prompt`), through the
    action; the base's definitions gate."""
    repo.commit("start", {".gitignore": ".evalward/\n"})
    base = repo.commit("base", {"helper.yaml": suite("Reply.", pairwise=True)})
    repo.branch("change")
    head = repo.commit("reworded", {"helper.yaml": suite(head_prompt, pairwise=True)})
    github.add_pull(FakePull(number=3, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 3, base, head)
    return run_action(repo.path, github, event, env=env)


@pytest.mark.parametrize(
    ("base_fails", "verdict"), [(False, "regression"), (True, "still failing")]
)
def test_a_fixture_the_head_breaks_reads_its_base_judged_and_so_does_the_pooled_test(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    base_fails: bool,
    verdict: str,
) -> None:
    """Question 0 fails on every head rep: its base runs are judged between the rounds (its
    word reads them), and the pooled test, leaning broken, reads every fixture's base, so by
    the verdict every base run is judged: nothing is left "not judged"."""
    script(model, head_prompt="Reply. Please.", base_fails=base_fails)

    run = pull_request(repo, github, env, "Reply. Please.")

    results = run.results()
    assert results["result"] == "fail", run.stdout + run.stderr
    [sequential] = [e["sequential"] for e in results["evals"] if e["side"] == "head"]
    calls = {f["fixture"]: f for f in sequential["fixtures"]}
    assert calls[BROKEN]["verdict"] == verdict  # "failing" had the base's judge not been asked
    assert calls[BROKEN]["base_runs"] >= 1
    assert sequential["pooled_base"] is not None  # the pooled test read the base
    base_runs = [f for f in results["fixtures"] if f["side"] == "base"]
    head_runs = [f for f in results["fixtures"] if f["side"] == "head"]
    assert all(not judge_of(f)["deferred"] and judge_of(f)["judge"] for f in base_runs)
    broken = [f["status"] for f in base_runs if f["fixture"] == BROKEN]
    assert broken == ["fail" if base_fails else "pass"] * len(broken)
    assert all(c["base_not_judged"] == 0 for c in calls.values())
    [base_eval] = [e for e in results["evals"] if e["side"] == "base"]
    assert base_eval["not_judged"] == 0
    asked = sum(rubric_ask(body) for body in model.requests)
    assert asked == len(head_runs) + len(base_runs)
    [comment] = github.comments_on(3)
    assert f"| {BROKEN} | ❌ {verdict} |" in comment["body"]
    assert "not judged" not in comment["body"]
    # the log says of a base run scored before its judge was asked that its judge waits,
    # not that the run was skipped
    deferred = [x for x in run.stdout.splitlines() if x.startswith("base ") and " #" in x]
    assert deferred and all(": skipped (" not in x for x in deferred), deferred
    assert any(": judge deferred (" in x for x in deferred), deferred


def test_a_fixture_the_head_fails_once_has_its_base_judged_and_no_other(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Question 0 fails its first head rep and passes after (noise): its base runs are judged,
    as its word could have read them; every other fixture's base run is left unjudged."""
    script(model, head_prompt="Reply. Please.", once=True)

    run = pull_request(repo, github, env, "Reply. Please.")

    results = run.results()
    assert results["result"] == "pass", run.stdout + run.stderr
    [sequential] = [e["sequential"] for e in results["evals"] if e["side"] == "head"]
    calls = {f["fixture"]: f for f in sequential["fixtures"]}
    assert calls[BROKEN]["verdict"] == "noise"
    base_runs = [f for f in results["fixtures"] if f["side"] == "base"]
    head_runs = [f for f in results["fixtures"] if f["side"] == "head"]
    broken = [f for f in base_runs if f["fixture"] == BROKEN]
    others = [f for f in base_runs if f["fixture"] != BROKEN]
    assert broken and {f["fixture"] for f in others} == set(calls) - {BROKEN}
    assert all(not judge_of(f)["deferred"] and f["status"] == "pass" for f in broken)
    assert all(judge_of(f)["deferred"] and f["status"] == "skipped" for f in others)
    assert calls[BROKEN]["base_runs"] == len(broken)
    for name, call in calls.items():
        ran = sum(f["fixture"] == name for f in others)
        if name != BROKEN:
            assert call["base_runs"] is None and call["base_not_judged"] == ran
    asked = sum(rubric_ask(body) for body in model.requests)
    assert asked == len(head_runs) + len(broken)
    [base_eval] = [e for e in results["evals"] if e["side"] == "base"]
    assert base_eval["not_judged"] == len(others)
    [comment] = github.comments_on(3)
    heads = calls["question-1"]["head_runs"]
    assert f"| question-1 | stable | {heads}/{heads} | not judged |" in comment["body"]
    assert "| helper | not judged → **" in comment["body"]


def test_fixed_reps_keep_the_base_judge_on_a_base_left_unjudged_before(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The same base commit, first beside a head judged pairwise under adaptive reps (its base
    runs unjudged), then beside a head that gates at fixed reps without the pairwise judge
    (`gate-config: head`): fixed reps compare the sides' scores, so every base run is judged
    and its score shown."""
    script(model, head_prompt="never said", base_fails=False)
    repo.commit("start", {".gitignore": ".evalward/\n"})
    base = repo.commit("base", {"helper.yaml": suite("Reply.", pairwise=True)})
    repo.branch("adaptive")
    first = repo.commit("reworded", {"helper.yaml": suite("Reply. Please.", pairwise=True)})
    github.add_pull(FakePull(number=4, head_sha=first, base_sha=base))
    event = pull_request_event(github.repository, 4, base, first)
    ran = run_action(repo.path, github, event, env=env)
    assert ran.results()["result"] == "pass", ran.stdout + ran.stderr
    [stored] = [e for e in ran.results()["evals"] if e["side"] == "base"]
    assert stored["not_judged"] == FIXTURES

    repo.checkout("main")
    repo.branch("fixed")
    fixed = suite("Reply. Kindly.", pairwise=False).replace(
        "execution: { reps: { min: 1, max: 8 } }",
        "execution: { repsPerFixture: 1 }\n  scoring: { gate: { failOnRegression: any } }",
    )
    second = repo.commit("fixed reps", {"helper.yaml": fixed})
    github.add_pull(FakePull(number=5, head_sha=second, base_sha=base))
    before = len(model.requests)
    event = pull_request_event(github.repository, 5, base, second)
    # the head's definitions gate: fixed reps, no pairwise judge, the base's judge read
    again = run_action(repo.path, github, event, env=env, inputs={"gate-config": "head"})

    results = again.results()
    assert results["result"] == "pass", again.stdout + again.stderr
    asked = model.requests[before:]
    assert sum(rubric_ask(body) for body in asked) == 2 * FIXTURES  # both sides judged
    [base_eval] = [e for e in results["evals"] if e["side"] == "base"]
    assert base_eval["not_judged"] == 0
    assert base_eval["score"] == 1.0
    base_runs = [f for f in results["fixtures"] if f["side"] == "base"]
    assert len(base_runs) == FIXTURES
    assert not any(f["cached"] for f in base_runs)
    assert all(f["status"] == "pass" and not judge_of(f)["deferred"] for f in base_runs)
    [comment] = github.comments_on(5)
    assert "not judged" not in comment["body"]


def test_a_cached_base_run_judged_now_counts_its_judge_once_in_attribution_s_budget(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A pull request beside which no fixture broke leaves the base's runs in the result
    cache unjudged; the next, on the same base, breaks question 0, so the base runs it reads
    from the cache are judged now. Attribution's budget is a share of the run's calls as if
    none were reused: those judge calls count once (they are in what the run spent, and in
    the result's `judge_calls`), so a rerun, every run read from the cache, gets the same
    budget."""
    script(model, head_prompt="Reply. Please.")
    repo.commit("start", {".gitignore": ".evalward/\n"})
    base = repo.commit("base", {"helper.yaml": suite("Reply.", pairwise=True)})
    repo.branch("kindly")
    kindly = repo.commit("reworded", {"helper.yaml": suite("Reply. Kindly.", pairwise=True)})
    github.add_pull(FakePull(number=4, head_sha=kindly, base_sha=base))
    first = run_action(
        repo.path, github, pull_request_event(github.repository, 4, base, kindly), env=env
    )
    assert first.results()["result"] == "pass", first.stdout + first.stderr
    repo.checkout("main")
    repo.branch("please")
    please = repo.commit("reworded", {"helper.yaml": suite("Reply. Please.", pairwise=True)})
    github.add_pull(FakePull(number=5, head_sha=please, base_sha=base))
    event = pull_request_event(github.repository, 5, base, please)

    broke = run_action(repo.path, github, event, env=env).results()
    again = run_action(repo.path, github, event, env=env).results()

    assert broke["result"] == again["result"] == "fail"
    judged_now = [
        f for f in broke["fixtures"] if f["side"] == "base" and f["cached"] and f["judge_calls"]
    ]
    assert judged_now  # read from the cache unjudged, then judged
    assert all(f["cached"] for f in again["fixtures"])
    budget = broke["attribution"]["budgetModelCalls"]
    assert budget == again["attribution"]["budgetModelCalls"] > 0
