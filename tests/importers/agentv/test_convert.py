"""AgentV graders mapped onto evalward assertions: the checks keep AgentV's meaning."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalward.files.committed import RepoFiles
from evalward.importers.agentv import convert as agentv

pytestmark = pytest.mark.unit


def convert(tmp_path: Path, text: str, file: str = "suite.yaml") -> agentv.AgentVConversion:
    data = yaml.safe_load(text)
    assert agentv.is_agentv(data, file)
    return agentv.convert(data, file, tmp_path, "bot", RepoFiles.working_tree(tmp_path))


def assertions_of(tmp_path: Path, graders: str, extra: str = "") -> list[dict[str, Any]]:
    text = f"tests:\n  - id: t\n    input: hi\n{extra}    assertions:\n{graders}"
    conversion = convert(tmp_path, text)
    assert conversion.problems == []
    ((fixture, _),) = conversion.fixtures
    assertions: list[dict[str, Any]] = fixture["spec"]["assertions"]
    return assertions


def matches(assertion: dict[str, Any], output: str) -> bool:
    assert assertion["type"] == "regex"
    return re.search(assertion["pattern"], output) is not None


def test_contains_counts_case_as_agentv_does(tmp_path: Path) -> None:
    # AgentV's `contains` is `output.includes(value)`: "hello" does not contain "Hello"
    (check,) = assertions_of(tmp_path, "      - {type: contains, value: 'A.B'}\n")
    assert check == {"weight": 1.0, "type": "contains", "value": "A.B"}
    (anycase,) = assertions_of(tmp_path, "      - {type: icontains, value: 'A.B'}\n")
    assert matches(anycase, "see a.b here")
    assert not matches(anycase, "see aXb here")


@pytest.mark.parametrize(
    ("grader", "passing", "failing"),
    [
        ("{type: contains-any, value: [cat, dog]}", "a dog", "a DOG"),
        ("{type: icontains-any, value: [cat, dog]}", "a DOG", "a bird"),
        ("{type: contains-all, value: [cat, dog]}", "dog\nthen cat", "dog then Cat"),
        ("{type: starts-with, value: 'Hello'}", "\n  Hello there", "Oh, Hello"),
        ("{type: starts-with, value: ' Hello '}", "Hello there", "hello there"),
        ("{type: ends-with, value: 'bye.'}", "ok, bye.\n", "bye. ok"),
        ("{type: icontains, value: secret, negate: true}", "nothing here", "the SECRET is"),
        ("{type: regex, value: '^\\d+$', negate: true}", "abc", "123"),
    ],
)
def test_text_checks_keep_their_meaning(
    tmp_path: Path, grader: str, passing: str, failing: str
) -> None:
    (check,) = assertions_of(tmp_path, f"      - {grader}\n")
    assert matches(check, passing)
    assert not matches(check, failing)


def test_metric_and_tool_graders(tmp_path: Path) -> None:
    checks = assertions_of(
        tmp_path,
        "      - {type: latency, threshold: 5000}\n"
        "      - {type: token_usage, max_total: 4000, weight: 2}\n"
        "      - type: tool-trajectory\n"
        "        mode: in_order\n"
        "        expected: [{tool: search}, {tool: summarize, args: any}]\n"
        "      - {type: tool_trajectory, mode: any_order, minimums: {search: 1}}\n",
    )
    assert checks == [
        {"weight": 1.0, "type": "latency", "maxMs": 5000},
        {"weight": 2.0, "type": "cost", "maxTokens": 4000},
        {"weight": 1.0, "type": "toolSequence", "tools": ["search", "summarize"]},
        {"weight": 1.0, "type": "toolCalled", "tool": "search"},
    ]


def test_llm_grader_prompt_template_and_legacy_rubrics(tmp_path: Path) -> None:
    text = (
        "evalcases:\n  - id: t\n    expected_outcome: names the capital\n    input: hi\n"
        "    expected_output: Paris\n"
        "    rubrics:\n      - {id: a, description: says Paris, weight: 3}\n      - is short\n"
        "    execution:\n      evaluators:\n"
        "        - type: llm_judge\n"
        "          prompt: 'Check {{ criteria }} against {{expected_output}}.'\n"
        "          threshold: 0.7\n"
    )
    ((fixture, _),) = convert(tmp_path, text).fixtures
    assert fixture["spec"]["reference"] == "Paris"
    assert fixture["spec"]["assertions"] == [
        {
            "weight": 1.0,
            "type": "judge",
            "kind": "rubric",
            "rubric": "Check names the capital against Paris.",
            "minScore": 0.7,
        },
        {"type": "judge", "kind": "rubric", "rubric": "says Paris", "weight": 3.0},
        {"type": "judge", "kind": "rubric", "rubric": "is short", "weight": 1.0},
    ]


def test_suite_assertions_follow_each_test_and_jsonl_cases(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "one", "criteria": "ok", "input": "a"}\n'
        '{"id": "two", "criteria": "ok", "input": "b"}\n'
    )
    conversion = convert(
        tmp_path,
        "tests: ./cases.jsonl\nassertions:\n  - {type: equals, value: done}\n",
        file="suite.eval.yaml",
    )
    assert conversion.problems == []
    assert [f["metadata"]["name"] for f, _ in conversion.fixtures] == ["one", "two"]
    for fixture, _ in conversion.fixtures:
        assert [a["type"] for a in fixture["spec"]["assertions"]] == ["judge", "equals"]


@pytest.mark.parametrize(
    ("grader", "message"),
    [
        (
            "{type: tool-trajectory, mode: unordered, expected: [{tool: a}]}",
            "expected mode any_order, in_order or exact; found 'unordered'",
        ),
        (
            "{type: tool-trajectory, expected: [{tool: a, args: [q]}]}",
            "expected a mapping or any; found ['q']",
        ),
        (
            "{type: tool-trajectory, expected: [{tool: a, max_duration_ms: fast}]}",
            "expected milliseconds above 0; found 'fast'",
        ),
        (
            "{type: tool-trajectory, expected: [{tool: a, min_calls: 2}]}",
            "`min_calls` of an expected tool call is not read",
        ),
        ("{type: field-accuracy}", "AgentV assertion type 'field-accuracy' is not supported"),
        ("{type: equals}", "an `equals` check needs `value` or `expected_output`"),
        ("{type: llm-grader, negate: true}", "`negate` is not supported on 'llm-grader'"),
    ],
)
def test_unsupported_graders_are_errors(tmp_path: Path, grader: str, message: str) -> None:
    conversion = convert(
        tmp_path, f"tests:\n  - id: t\n    input: hi\n    assertions:\n      - {grader}\n"
    )
    assert conversion.fixtures == []
    (problem,) = conversion.problems
    assert problem.message.startswith(message)


def test_the_older_tool_trajectory_maps_order_arguments_and_budgets(tmp_path: Path) -> None:
    checks = assertions_of(
        tmp_path,
        "      - type: tool_trajectory\n"
        "        mode: exact\n"
        "        expected:\n"
        "          - { tool: search, args: { query: weather Paris }, max_duration_ms: 500 }\n"
        "          - { tool: get_weather, args: any }\n"
        "      - { type: tool_trajectory, mode: any_order, minimums: { search: 2, log: 1 } }\n",
    )
    assert checks == [
        {"weight": 1.0, "type": "trajectory", "tools": ["search", "get_weather"], "mode": "strict"},
        {"weight": 1.0, "type": "toolArgs", "tool": "search", "args": {"query": "weather Paris"},
         "mode": "partial"},
        {"weight": 1.0, "type": "latency", "tool": "search", "maxMs": 500},
        {"weight": 1.0, "type": "toolSequence", "tools": ["search", "search"]},
        {"weight": 1.0, "type": "toolCalled", "tool": "log"},
    ]  # fmt: skip


def test_documents_that_are_not_agentv_are_not_taken() -> None:
    assert not agentv.is_agentv({"tests": [{"name": "x"}]}, "ci.yaml")
    assert not agentv.is_agentv({"tests": "./x.yaml"}, "ci.yaml")
    assert agentv.is_agentv({"tests": "./x.yaml"}, "dir/suite.eval.yaml")
    assert not agentv.is_agentv(["evalcases"], "x.yaml")


def test_an_evalcases_item_that_is_no_case_is_told_not_the_file_left_out(tmp_path: Path) -> None:
    # one stray item made the whole file not AgentV's: every case in it was silently dropped
    conversion = convert(
        tmp_path,
        "evalcases:\n  - {id: a, input: hi, expected_outcome: greets}\n  - just a line\n",
        "math.evalcases.yaml",
    )
    assert [path for _, path in conversion.fixtures] == [("evalcases", 0)]
    (problem,) = conversion.problems
    assert problem.path == ("evalcases", 1)
    assert "'just a line'" in problem.message


def test_an_assert_set_with_a_threshold_is_a_group_and_similar_keeps_agentv_s_rule(
    tmp_path: Path,
) -> None:
    graders = (
        "      - metric: gate\n"
        "        type: assert-set\n"
        "        threshold: 0.5\n"
        "        config: { embedding_provider: { model: text-embedding-3-small } }\n"
        "        assert:\n"
        "          - { type: contains, value: Paris, case_sensitive: true }\n"
        "          - { type: similar, value: the capital of France, threshold: 0.9 }\n"
    )
    (group,) = assertions_of(tmp_path, graders)

    assert group == {
        "weight": 1.0,
        "axis": "gate",
        "type": "assertSet",
        "threshold": 0.5,
        "assertions": [
            {"weight": 1.0, "type": "contains", "value": "Paris"},
            {
                "weight": 1.0,
                "type": "similar",
                "value": "the capital of France",
                # AgentV passes at (cosine + 1) / 2 >= 0.9: a cosine of at least 0.8
                "threshold": pytest.approx(0.8),
                "model": "openai/text-embedding-3-small",  # the set's config is its members'
            },
        ],
    }


def test_a_key_in_an_agentv_similar_is_refused(tmp_path: Path) -> None:
    text = (
        "tests:\n  - id: t\n    input: hi\n    assertions:\n"
        "      - type: similar\n        value: hello\n"
        "        config: { embedding_provider: { model: m, api_key: sk-live } }\n"
    )
    conversion = convert(tmp_path, text)
    (problem,) = conversion.problems
    assert "evalward holds the provider keys" in str(problem)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("evalcases:\n  - {id: t, input: hi, rubrics: 5}\n", ("evalcases", 0, "rubrics")),
        ("evalcases:\n  - {id: t, input: hi, rubrics: be kind}\n", ("evalcases", 0, "rubrics")),
        ("evalcases:\n  - {id: t, input: hi, assert: 5}\n", ("evalcases", 0, "assert")),
        (
            "evalcases:\n  - {id: t, input: hi, threshold: 0.5, evaluators: {a: 1}}\n",
            ("evalcases", 0, "evaluators"),
        ),
        (
            "evalcases:\n  - {id: t, input: hi, execution: {evaluators: 7}}\n",
            ("evalcases", 0, "execution", "evaluators"),
        ),
        (
            "evalcases:\n  - {id: t, input: hi,"
            " assertions: [{type: llm_judge, prompt: p, rubrics: 5}]}\n",
            ("evalcases", 0, "assertions", 0, "rubrics"),
        ),
        ("assertions: true\nevalcases:\n  - {id: t, input: hi, rubrics: [x]}\n", ("assertions",)),
    ],
)
def test_a_list_given_as_something_else_is_refused_at_its_path(
    tmp_path: Path, text: str, where: tuple[str | int, ...]
) -> None:
    # A number there could not be read at all (a TypeError, an internal error), a text was
    # read as one rubric per character and a mapping as its keys.
    conversion = convert(tmp_path, text)
    assert conversion.fixtures == []
    (problem,) = conversion.problems
    assert problem.path == where
    assert problem.message.startswith("expected a list of ")


def test_a_tool_sequence_mode_that_is_not_a_word_is_refused(tmp_path: Path) -> None:
    conversion = convert(
        tmp_path,
        "tests:\n  - id: t\n    input: hi\n    assertions:\n"
        "      - {type: 'trajectory:tool-sequence', value: {mode: [in_order], steps: [a]}}\n",
    )
    (problem,) = conversion.problems
    assert problem.path[-1] == "mode"
