"""The mock script through `evalward run --mock-script`: replies per rep (a flaky agent with
no model), a reply for one rep, judges per rep, and mistakes located as resources' are."""

from __future__ import annotations

import json
from typing import Any

import pytest

from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture

pytestmark = pytest.mark.integration

SUITE = documents(
    greeter_agent("openai/gpt-test"),
    greeter_eval("judge: { model: anthropic/judge }", "execution: { repsPerFixture: 4 }"),
    greeting_fixture("{ type: contains, value: help }"),
)
JUDGED = SUITE + "    - { type: judge, rubric: Was it polite?, minScore: 0.5 }\n"
POLITE = '{"score": 0.9, "confidence": 0.9, "summary": "Polite.", "violations": []}'
RUDE = '{"score": 0.1, "confidence": 0.9, "summary": "Rude.", "violations": []}'


def run(repo: GitRepo, script: str, *args: str) -> tuple[int, dict[str, Any]]:
    repo.commit("suite", {"mock.yaml": script})
    done = evalward(
        "run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", *args, cwd=repo.path
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def by_rep(results: dict[str, Any]) -> list[tuple[int, str, str]]:
    return sorted((f["rep"], f["status"], f["output"]) for f in results["fixtures"])


def test_replies_per_rep_make_a_flaky_fixture_without_a_model(repo: GitRepo) -> None:
    repo.write({"suite.yaml": SUITE})
    code, results = run(
        repo,
        """\
replies:
  - match: { fixture: greeting }
    reps:
      - turns: [{ content: "Hello! How can I help?" }]
      - turns: [{ content: "What?" }]
""",
    )
    assert by_rep(results) == [
        (0, "pass", "Hello! How can I help?"),
        (1, "fail", "What?"),
        (2, "pass", "Hello! How can I help?"),
        (3, "fail", "What?"),
    ]
    (outcome,) = results["evals"][0]["fixture_results"]
    assert (outcome["reps"], outcome["passes"], outcome["pass_rate"]) == (4, 2, 0.5)
    assert outcome["message"].startswith("2/4 reps passed")
    # 2 of 4 is below the default minRepPassRate (0.6): the fixture and the gate fail
    assert outcome["result"] == "fail" and code == 1


def test_the_list_repeats_past_its_end_and_follows_the_reps_option(repo: GitRepo) -> None:
    repo.write({"suite.yaml": SUITE})
    code, results = run(
        repo,
        """\
replies:
  - match: { agent: greeter }
    reps:
      - turns: [{ content: "How can I help?" }]
      - turns: [{ content: "How can I help?" }]
      - turns: [{ content: "No." }]
""",
        "--reps",
        "5",
    )
    statuses = [status for _, status, _ in by_rep(results)]
    assert statuses == ["pass", "pass", "fail", "pass", "pass"]
    assert code == 0  # 4 of 5 reps pass


def test_a_match_on_rep_answers_that_rep_alone(repo: GitRepo) -> None:
    repo.write({"suite.yaml": SUITE})
    _, results = run(
        repo,
        """\
replies:
  - match: { fixture: greeting, rep: 2 }
    turns: [{ content: "Go away." }]
  - match: { fixture: greeting }
    turns: [{ content: "How can I help?" }]
""",
    )
    assert [status for _, status, _ in by_rep(results)] == ["pass", "pass", "fail", "pass"]


def test_a_judge_can_answer_per_rep_too(repo: GitRepo) -> None:
    repo.write({"suite.yaml": JUDGED})
    _, results = run(
        repo,
        f"""\
replies:
  - match: {{ purpose: judge }}
    reps:
      - turns: [{{ content: '{POLITE}' }}]
      - turns: [{{ content: '{RUDE}' }}]
  - match: {{ agent: greeter }}
    turns: [{{ content: "How can I help?" }}]
""",
    )
    scores = [
        next(a["score"] for a in f["assertions"] if a["type"] == "judge")
        for f in sorted(results["fixtures"], key=lambda f: f["rep"])
    ]
    assert scores == [0.9, 0.1, 0.9, 0.1]


BROKEN = """\
replies:
  - match: { fixture: greeting }
    turns: [{ content: "Hi" }]
    reps:
      - turns: [{ content: "Hi" }]
  - match: { fixtures: greeting }
    turns: [{ content: "Hi" }]
"""


def test_a_mistake_in_a_script_is_located_and_validate_and_run_say_the_same(
    repo: GitRepo,
) -> None:
    repo.commit("suite", {"suite.yaml": SUITE, "mock.yaml": BROKEN})
    validated = evalward("validate", ".", "--mock-script", "mock.yaml", cwd=repo.path)
    ran = evalward("run", ".", "--mock-script", "mock.yaml", cwd=repo.path)
    assert validated.returncode == ran.returncode == 2
    expected = [
        "evalward: 2 problems in evalward resources:",
        "evalward:   mock.yaml:2:5: replies[0]: give a reply one of `turns`, `reps` "
        "(a list of `{turns: ...}`) or `always`",
        "evalward:   mock.yaml:6:14: replies[1].match.fixtures: unknown field 'fixtures' "
        "(did you mean 'fixture'?)",
    ]
    assert validated.stderr.splitlines() == expected
    assert ran.stderr.splitlines() == expected


def test_validate_with_a_script_lets_mock_models_through_and_checks_the_rest(
    repo: GitRepo,
) -> None:
    suite = SUITE.replace("openai/gpt-test", "mock/greeter").replace(
        "anthropic/judge", "gemini/judge"
    )
    repo.commit(
        "suite", {"suite.yaml": suite, "mock.yaml": "replies: [{always: {content: Hi.}}]\n"}
    )
    without = evalward("validate", ".", cwd=repo.path)
    assert without.returncode == 2
    assert "model 'mock/greeter' uses the mock provider, but no mock script is set" in (
        without.stderr
    )
    with_script = evalward("validate", ".", "--mock-script", "mock.yaml", cwd=repo.path)
    assert with_script.returncode == 2
    assert "mock/greeter" not in with_script.stderr
    assert (
        "suite.yaml:14:12: spec.judge.model: model 'gemini/judge': unknown provider 'gemini'"
        in with_script.stderr
    )
    ran = evalward("run", ".", "--mock-script", "mock.yaml", cwd=repo.path)
    assert ran.returncode == 2
    assert ran.stderr == with_script.stderr
