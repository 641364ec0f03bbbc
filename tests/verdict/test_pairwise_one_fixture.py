"""One fixture the pull request makes consistently worse blocks, run as GitHub runs the action
at `evalward init`'s defaults (adaptive reps 1 to 8, falseBlockRate 0.02, margin 0.2) over ten
fixtures, its pairwise judge scripted on the model server to prefer the better answer in
either order and call equal answers a tie: the worse fixture loses every pair it is given, and
that alone blocks, naming the fixture; a pull request that changes nothing does not block."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalward.scoring.judges.judge import CLOSE, OPEN
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import ActionRun, pull_request_event, run_action
from support.documents import by_label, documents, eval_for
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

FIXTURES = 10
WORSE = 3
RUBRIC = "Which reply answers the question correctly?"
GOOD = "The right answer."
BAD = "A wrong answer."


def agent(system: str) -> str:
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: helper }}
spec:
  models: [openai/gpt-4.1-mini]
  system: {system}
"""


def fixture(index: int) -> str:
    return f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: question-{index}, labels: {{ agent: helper }} }}
spec:
  targetAgent: helper
  input: {{ type: prompt, payload: {{ prompt: "Question {index}?" }} }}
  assertions:
    - {{ type: contains, value: answer }}
"""


CALIBRATION = f"""\
apiVersion: evalward.dev/v1
kind: JudgeCalibration
metadata: {{ name: answer-pairs }}
spec:
  rubric: {RUBRIC}
  judgeModels: [openai/gpt-4.1-mini]
  pairs:
    - {{ input: "Question?", outputA: "{GOOD}", outputB: "{GOOD}", humanPreference: tie }}
""" + "".join(
    f'    - {{ input: "Question {i}?", outputA: "{GOOD}", outputB: "{BAD}", humanPreference: A }}\n'
    f'    - {{ input: "Question {i}?", outputA: "{BAD}", outputB: "{GOOD}", humanPreference: B }}\n'
    for i in range(7)
)


def suite(system: str) -> str:
    """init's adaptive defaults: reps 1 to 8, the default rates and margin."""
    pairwise = f"{{ rubric: {RUBRIC}, calibration: answer-pairs }}"
    return documents(
        agent(system),
        *(fixture(index) for index in range(FIXTURES)),
        eval_for(
            "helper",
            by_label("helper"),
            f"judge: {{ model: openai/gpt-4.1-mini, pairwise: {pairwise} }}",
            "execution: { reps: { min: 1, max: 8 } }",
        ),
        CALIBRATION,
    )


def finals(body: dict[str, Any]) -> tuple[str, str] | None:
    """The final outputs a pairwise ask shows as A and B (None for any other request)."""
    user = body["messages"][-1]["content"] if body.get("messages") else ""
    if "Compare run A and run B" not in user:
        return None
    data = json.loads(user.split(OPEN + "\n", 1)[1].rsplit("\n" + CLOSE, 1)[0])
    return data["A_final"], data["B_final"]


def choice(a_final: str, b_final: str) -> str:
    """A perfect judge: the right answer wins in either order, equal answers tie."""
    if (GOOD in a_final) == (GOOD in b_final):
        return "tie"
    return "A" if GOOD in a_final else "B"


def answer(preference: str) -> str:
    cited = [{"run": run, "step": 2, "quote": "answer"} for run in ("A", "B")]
    return json.dumps({"preference": preference, "reason": "correctness", "evidence": cited})


def script(model: ScriptedModelServer, head_system: str, worse: int | None) -> None:
    for preference in ("A", "B", "tie"):

        def asks(body: dict[str, Any], preference: str = preference) -> bool:
            shown = finals(body)
            return shown is not None and choice(*shown) == preference

        model.script(asks, text(answer(preference)))
    if worse is not None:

        def worse_asked(body: dict[str, Any]) -> bool:
            said = json.dumps(body)
            return head_system in said and f"Question {worse}?" in said

        model.script(worse_asked, text(BAD))
    model.script("Answer", text(GOOD))


def gate(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    *,
    worse: int | None,
) -> ActionRun:
    script(model, "Answer again.", worse)
    base = repo.commit("a helper", {"helper.yaml": suite("Answer."), ".gitignore": ".evalward/\n"})
    repo.branch("feature")
    head = repo.commit("a new prompt", {"helper.yaml": suite("Answer again.")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 7, base, head)
    return run_action(repo.path, github, event, env=env, inputs={"check-run": "true"})


def head_eval(run: ActionRun) -> dict[str, Any]:
    return next(e for e in run.results()["evals"] if e["side"] == "head")


def test_one_consistently_worse_fixture_blocks_at_inits_defaults(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    run = gate(repo, github, model, env, worse=WORSE)

    assert run.returncode == 1, run.stdout + run.stderr
    results = run.results()
    assert results["result"] == "fail"
    record = head_eval(run)["pairwise"]
    assert record["blocks"]
    (blocking,) = [v for v in record["fixtures"] if v["blocks"]]
    assert blocking["fixture"] == f"question-{WORSE}"
    assert blocking["counts"]["head"] == 0 and blocking["counts"]["base"] >= 2
    # every other fixture's answers are the same on both sides: ties, and no more pairs
    others = [v for v in record["fixtures"] if v["fixture"] != blocking["fixture"]]
    assert all(v["counts"]["ties"] == v["counts"]["pairs"] == 1 for v in others)
    (check,) = github.check_runs
    assert check["conclusion"] == "failure"
    body = github.comments_on(7)[0]["body"]
    why = body.split("### Why it is blocked")[1]
    assert f"question-{WORSE} worse by the pairwise judge" in why
    # beside the pairwise judge the pass-rate tests keep a quarter of falseBlockRate 0.02,
    # and both surfaces say so, not "0 %"
    assert "false blocks at most 0.5 %, misses at most 10 % per fixture" in body
    page = (run.output_dir / "report.html").read_text()
    assert "called broken at most 0.5 % of the time over the whole Eval" in page
    # every assertion passed on both sides: only the pairwise judge saw it
    assert all(f["status"] == "pass" for f in results["fixtures"])


def test_an_unchanged_pull_request_over_ten_fixtures_does_not_block(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    run = gate(repo, github, model, env, worse=None)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.results()["result"] == "pass"
    record = head_eval(run)["pairwise"]
    assert not record["blocks"]
    counts = record["pooled_counts"]
    assert counts["ties"] == counts["pairs"] == FIXTURES
    (check,) = github.check_runs
    assert check["conclusion"] == "success"
