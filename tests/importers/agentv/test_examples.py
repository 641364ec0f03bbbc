"""AgentV's example folders in the shapes AgentV writes them (tests/data/agentv), read by
`evalward run` with no import step: a CSV dataset read as AgentV reads it, assert-sets that
pass on a share of their members, and cases that name no target, run by the Eval that selects
them."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from evalward.definitions.loader import load_resources
from support.clirun import REPO_ROOT, evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

EXAMPLES = REPO_ROOT / "tests" / "data" / "agentv"

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: {agent} }}
spec:
  models: [openai/gpt-test]
  system: Help.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: {agent}-eval }}
spec:
  targetAgent: {agent}
  fixtureSelector: {{ matchLabels: {{ agent: {label} }} }}
  judge: {{ model: openai/judge-test }}
  scoring: {{ passThreshold: 0.1 }}
"""

JUDGE = """\
  - match: { purpose: judge }
    turns:
      - content: '{"score": 0.9, "confidence": 0.9, "summary": "Says so.", "violations": []}'
"""


def with_example(repo: GitRepo, name: str, agent: str, label: str, replies: str) -> None:
    shutil.copytree(EXAMPLES / name, repo.path / name)
    repo.commit(
        f"AgentV's {name} example",
        {
            "agents.yaml": AGENT.format(agent=agent, label=label),
            "mock.yaml": "replies:\n" + JUDGE + replies,
        },
    )


def run(repo: GitRepo) -> dict[str, Any]:
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    results: dict[str, Any] = json.loads(done.stdout)
    return {f["fixture"]: f for f in results["fixtures"]}


def reply(fixture: str, text: str) -> str:
    return f"  - match: {{ fixture: {fixture} }}\n    turns: [{{ content: {json.dumps(text)} }}]\n"


def test_a_csv_dataset_is_read_as_agentv_reads_it(repo: GitRepo) -> None:
    replies = (
        reply("csv-magic-greeting", "HELLO there")
        + reply("csv-quoted", "ahoy!")
        + reply("csv-two-lines", "first\nsecond, and a third")
        + reply("regression-capital", "Paris.")
    )
    with_example(repo, "external-datasets", "llm", "llm", replies)

    fixtures = load_resources(repo.path).fixtures
    greeting = fixtures["csv-magic-greeting"].resource
    assert greeting.spec.input is not None
    assert greeting.spec.input.payload == {"prompt": "Reply with a short greeting"}
    assert greeting.spec.pass_threshold == 0.8  # the row's __threshold
    assert greeting.spec.vars == {"locale": "en-US"}
    assert greeting.spec.sidecar == {"source": "csv"}  # __metadata:source
    (check,) = greeting.spec.assertions
    assert check.model_dump(exclude_defaults=True) == {
        "type": "regex",
        "pattern": "(?i)hello",
        "axis": "greeting",
    }
    quoted = fixtures["csv-quoted"].resource.spec.input
    assert quoted is not None
    assert quoted.payload == {"prompt": 'Say "ahoy", then a comma, please'}
    two_lines = fixtures["csv-two-lines"].resource.spec.input
    assert two_lines is not None
    assert two_lines.payload == {"prompt": "Reply with two lines:\r\nfirst, then second"}

    verdicts = {name: f["status"] for name, f in run(repo).items()}
    assert verdicts == {
        "accuracy-basic-math": "pass",
        "regression-capital": "pass",
        "csv-magic-greeting": "pass",
        "csv-quoted": "pass",
        "csv-two-lines": "fail",  # it names a third
        "inline-test": "pass",
    }


def test_an_assert_set_passes_on_its_members_weighted_score(repo: GitRepo) -> None:
    replies = (
        reply("partial-credit-local", "Paris is in France.")
        + reply("too-little-credit", "The Eiffel tower and the Seine.")
        + reply("nested-assert-set", "supervised learning uses labels.")
    )
    with_example(repo, "assert-set", "llm", "llm", replies)

    results = run(repo)
    sets = {
        name: next(a for a in f["assertions"] if a["type"] == "assertSet")
        for name, f in results.items()
    }
    # one of two members: 0.5, at the threshold of 0.5
    assert (sets["partial-credit-local"]["status"], sets["partial-credit-local"]["score"]) == (
        "pass",
        0.5,
    )
    assert sets["partial-credit-local"]["axis"] == "location_terms"
    # two of four: 0.5, under 0.75
    assert sets["too-little-credit"]["status"] == "fail"
    assert sets["too-little-credit"]["score"] == 0.5
    assert "2/4 members passed" in sets["too-little-credit"]["message"]
    # the inner set scores 0.6 (passing at 0.5), the judge 0.9: 0.7 × 0.6 + 0.3 × 0.9 = 0.69
    nested = sets["nested-assert-set"]
    assert nested["status"] == "fail"
    assert abs(nested["score"] - 0.69) < 1e-9
    assert {n: f["status"] for n, f in results.items()} == {
        "partial-credit-local": "pass",
        "too-little-credit": "fail",
        "nested-assert-set": "fail",
    }


def test_cases_that_name_no_target_run_on_the_eval_that_selects_them(repo: GitRepo) -> None:
    replies = reply("addition", "It is 4.") + reply("subtraction", "It is 2.")
    with_example(repo, "no-target", "math-bot", "default", replies)

    fixtures = load_resources(repo.path).fixtures
    assert fixtures["addition"].resource.metadata.labels["agent"] == "default"
    validated = evalward("validate", ".", cwd=repo.path)
    assert validated.returncode == 0, validated.stdout + validated.stderr

    results = run(repo)
    assert {n: f["status"] for n, f in results.items()} == {
        "addition": "pass",
        "subtraction": "pass",  # judged by its expected outcome: the mock judge says so
    }
    assert all(f["eval"] == "math-bot-eval" for f in results.values())


def test_a_csv_row_agentv_refuses_is_refused_at_its_dataset(repo: GitRepo) -> None:
    with_example(repo, "external-datasets", "llm", "llm", "")
    csv = repo.path / "external-datasets" / "evals" / "cases" / "magic.csv"
    csv.write_text("id,input,__expected\nbad,hi,similar(0.8):a greeting\n")
    repo.commit("a CSV assertion AgentV does not read")

    done = evalward("validate", ".", cwd=repo.path)

    assert done.returncode == 2
    said = done.stdout + done.stderr
    assert "suite.yaml:10:5: tests[2]: cases/magic.csv, row 1:" in said, said
    assert "'similar' is not a CSV assertion AgentV reads" in said
    assert "Traceback" not in said


def test_a_jsonl_suite_reads_the_files_it_names_from_a_folder_above_it(repo: GitRepo) -> None:
    # basic-jsonl/evals/cases.jsonl names `../basic/evals/javascript.instructions.md`: not
    # beside it, but (as AgentV searches) from basic-jsonl/, the folder above its suite
    shutil.copytree(EXAMPLES / "basic", repo.path / "basic")
    with_example(repo, "basic-jsonl", "llm", "llm", "")

    fixtures = load_resources(repo.path).fixtures
    review = fixtures["code-review-javascript"].resource.spec.input
    assert review is not None and review.messages is not None
    said = json.dumps([m.model_dump(mode="json") for m in review.messages])
    assert "SUPERSECRET_INSTRUCTION_MARKER_JAVASCRIPT" in said
    assert "calculateTotal" in said

    results = run(repo)
    assert {n: f["status"] for n, f in results.items()} == {
        "code-review-javascript": "pass",
        "code-gen-python": "pass",
        "feature-proposal-brainstorm": "pass",
        "multiturn-debug-session": "pass",
        "shorthand-string-example": "pass",
        "shorthand-structured-output": "pass",
        "shorthand-array-syntax": "pass",
    }


def test_a_missing_file_reference_names_where_it_was_looked_for(repo: GitRepo) -> None:
    with_example(repo, "basic-jsonl", "llm", "llm", "")  # without the basic folder

    done = evalward("validate", ".", cwd=repo.path)

    assert done.returncode == 2
    said = done.stdout + done.stderr
    assert (
        "tests[0].input[1].content[1].value: file reference "
        "'../basic/evals/javascript.instructions.md' not found (no file "
        "basic-jsonl/basic/evals/javascript.instructions.md nor from a folder above it)"
    ) in said, said
    assert "Traceback" not in said


DETERMINISTIC = {
    "contains-basic": "Hello there!",
    "regex-email": "Write to support@example.com.",
    "equals-exact": "4\n",  # AgentV compares the trimmed answer
    "starts-with-prefix": "Dear User, thank you for contacting support.",
    "is-json-valid": '{"status": "ok", "code": 200}',
    "multi-assertion": '{"result": 42}',
    "required-gate": '{"message": "success"}',
}


def test_deterministic_graders_decide_as_agentv_decides(repo: GitRepo) -> None:
    replies = "".join(reply(name, text) for name, text in DETERMINISTIC.items())
    with_example(repo, "deterministic-graders", "llm", "llm", replies)

    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert {f["fixture"]: f["status"] for f in json.loads(done.stdout)["fixtures"]} == {
        name: "pass" for name in DETERMINISTIC
    }


def test_agentv_s_contains_counts_case(repo: GitRepo) -> None:
    wrong = {
        **DETERMINISTIC,
        "contains-basic": "hello there!",  # AgentV: "hello" does not contain "Hello"
        "multi-assertion": '{"Result": 42}',  # nor '"Result"' '"result"'
        "required-gate": '{"message": "Success"}',
    }
    with_example(
        repo, "deterministic-graders", "llm", "llm", "".join(reply(n, t) for n, t in wrong.items())
    )

    results = run(repo)

    assert {n: f["status"] for n, f in results.items() if f["status"] != "pass"} == {
        "contains-basic": "fail",
        "multi-assertion": "fail",
        "required-gate": "fail",
    }


TOOLS = ["Read", "fetchData", "validateSchema", "transformData", "saveResults"]
TOOLS += ["checkCredentials", "generateToken", "auditLog", "search", "get_weather"]
TOOL_AGENT = (
    "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: mock_latency_agent }\nspec:\n"
    "  models: [openai/gpt-test]\n  system: Use the tools.\n  tools:\n"
    + "".join(
        f"    - {{ name: {t}, description: {t}., parameters: {{ type: object }}, "
        "mock: { output: ok } }\n"
        for t in TOOLS
    )
    + "---\napiVersion: evalward.dev/v1\nkind: Eval\nmetadata: { name: latency-eval }\nspec:\n"
    "  targetAgent: mock_latency_agent\n"
    "  fixtureSelector: { matchLabels: { agent: LABEL } }\n"
    "  judge: { model: openai/judge-test }\n"
)


def calls(fixture: str, *steps: tuple[str, dict[str, str]]) -> str:
    turns = "".join(
        f"      - toolCalls: [{{ name: {name}, arguments: {json.dumps(args)} }}]\n"
        for name, args in steps
    )
    return f"  - match: {{ fixture: {fixture} }}\n    turns:\n{turns}      - content: Done.\n"


TOOL_REPLIES = (
    calls("latency-pass", ("Read", {"path": "config.json"}))
    + reply("latency-fail", "I did not read it.")
    + calls(
        "mixed-latency",
        *[(t, {}) for t in ("fetchData", "validateSchema", "transformData", "saveResults")],
    )
    # out of order: an exact sequence fails
    + calls(
        "exact-with-latency", *[(t, {}) for t in ("checkCredentials", "auditLog", "generateToken")]
    )
    + calls(
        "latency-with-args",
        ("search", {"query": "weather Paris"}),
        ("get_weather", {"location": "Paris", "unit": "c"}),
    )
)
TOOL_VERDICTS = {
    "latency-pass": "pass",
    "latency-fail": "fail",  # it reads nothing
    "mixed-latency": "pass",
    "exact-with-latency": "fail",
    "latency-with-args": "pass",
}


def with_tool_agent(repo: GitRepo, name: str, label: str) -> None:
    shutil.copytree(EXAMPLES / name, repo.path / name)
    agents = TOOL_AGENT.replace("LABEL", label)
    repo.commit(
        f"AgentV's {name} example",
        {"agents.yaml": agents, "mock.yaml": "replies:\n" + JUDGE + TOOL_REPLIES},
    )


def test_trajectory_checks_run_on_the_agent_the_suite_names(repo: GitRepo) -> None:
    # `providers: [mock_latency_agent]`: the Agent of that name runs the suite
    with_tool_agent(repo, "latency-assertions", "mock_latency_agent")

    results = run(repo)

    assert {n: f["status"] for n, f in results.items()} == TOOL_VERDICTS
    args = [a for a in results["latency-with-args"]["assertions"] if a["type"] == "toolArgs"]
    assert [a["status"] for a in args] == ["pass", "pass"]
    (exact,) = [a for a in results["exact-with-latency"]["assertions"] if a["type"] == "trajectory"]
    assert exact["status"] == "fail"


def test_the_older_tool_trajectory_keeps_its_order_arguments_and_budgets(repo: GitRepo) -> None:
    # the same suite as AgentV wrote it before `tests`: `evalcases`, `tool_trajectory` with
    # `mode: exact`, each call's `args` and `max_duration_ms`
    with_tool_agent(repo, "latency-evalcases", "default")

    results = run(repo)

    assert {n: f["status"] for n, f in results.items()} == TOOL_VERDICTS
    budgets = {
        name: [
            (a["status"], a["message"].split(" took")[0])
            for a in f["assertions"]
            if a["type"] == "latency"
        ]
        for name, f in results.items()
    }
    assert budgets["mixed-latency"] == [
        ("pass", "slowest call of fetchData (step #3)"),
        ("pass", "slowest call of transformData (step #7)"),
        ("pass", "slowest call of saveResults (step #9)"),
    ]
    assert budgets["latency-fail"] == [
        ("fail", "tool 'Read' was not called, so no call of it was in time")
    ]
    args = [a for a in results["latency-with-args"]["assertions"] if a["type"] == "toolArgs"]
    assert [a["status"] for a in args] == ["pass", "pass"]
