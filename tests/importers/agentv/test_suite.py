"""AgentV's current suite format (`importers/agentv/suite.py`): told from the old by its keys,
its providers and its one prompt read, datasets expanded in order, and what evalward cannot
run as one suite said at its key."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.importers.agentv.suite import expand_tests, is_current, suite_shape

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("data", "current"),
    [
        ({"providers": ["a"], "tests": []}, True),
        ({"tests": [{"vars": {"q": "x"}}]}, True),
        ({"tests": [{"assert": [{"type": "contains", "value": "x"}]}]}, True),
        ({"tests": [{"input": "x", "criteria": "y"}]}, False),
        ({"evalcases": []}, False),
    ],
)
def test_the_current_format_is_told_by_its_keys(data: dict[str, Any], current: bool) -> None:
    assert is_current(data) is current


def test_providers_and_the_one_prompt_are_read() -> None:
    problems: list[Any] = []
    shape = suite_shape(
        {
            "providers": ["bot", {"id": "other"}, {"name": " third "}],
            "prompts": ["Answer: {{question}}"],
        },
        problems,
    )
    assert (shape.providers, shape.prompt, problems) == (
        ["bot", "other", "third"],
        "Answer: {{question}}",
        [],
    )
    assert suite_shape({"targets": ["t"]}, problems).providers == ["t"]


@pytest.mark.parametrize(
    ("data", "where", "message"),
    [
        ({"providers": [""]}, ("providers", 0), "expected a provider's name"),
        ({"providers": "bot"}, ("providers",), "expected a list of provider names"),
        ({"prompts": ["a", "b"]}, ("prompts", 1), "evalward runs one prompt per suite"),
        ({"prompts": "a"}, ("prompts",), "expected a list of prompt templates"),
    ],
)
def test_what_is_not_one_suite_is_said_at_its_key(
    data: dict[str, Any], where: tuple[Any, ...], message: str
) -> None:
    problems: list[Any] = []
    suite_shape(data, problems)
    assert [(p.path, message in p.message) for p in problems] == [(where, True)]


def test_datasets_are_expanded_in_order_and_others_refused() -> None:
    loaded: list[str] = []

    def load(reference: str, path: tuple[Any, ...]) -> list[Any]:
        loaded.append(reference)
        return [{"from": reference, "n": n} for n in range(2)]

    cases, problems = expand_tests(
        [{"inline": 1}, "file://cases.jsonl", "file://notes.txt", "more.csv"], "tests", load
    )
    assert [case for case, _ in cases] == [
        {"inline": 1},
        {"from": "cases.jsonl", "n": 0},
        {"from": "cases.jsonl", "n": 1},
        {"from": "more.csv", "n": 0},
        {"from": "more.csv", "n": 1},
    ]
    assert [path for _, path in cases] == [
        ("tests", 0),
        ("tests", 1),
        ("tests", 1),
        ("tests", 3),
        ("tests", 3),
    ]
    assert loaded == ["cases.jsonl", "more.csv"]
    ((problem),) = problems
    assert problem.path == ("tests", 2)
    assert "evalward reads YAML, JSONL and CSV datasets, not this" in problem.message
