"""promptfoo assertions as evalward's (`importers/promptfoo/asserts.py`), each with the same
pass or fail on the same output: the regex a case-insensitive, any-of, all-of, prefix or
negated check becomes is searched here against outputs promptfoo passes and fails; what needs
another grading model is refused with what to write instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import regex

from evalward.errors import Refused
from evalward.importers.promptfoo.asserts import Converter, js_string, split_values
from evalward.importers.promptfoo.source import Files, Node, Source
from evalward.resources.checks.assertions import DEFAULT_EMBEDDING_MODEL
from evalward.resources.reading.yamlsource import parse_documents

pytestmark = pytest.mark.unit


def _convert(tmp_path: Path, assertion: str) -> list[dict[str, Any]]:
    (document,) = parse_documents(f"assert:\n  - {assertion}\n")
    node = Node(document.data["assert"][0], Source("promptfooconfig.yaml", document), ("assert", 0))
    files = Files(tmp_path, tmp_path, tmp_path)
    return Converter(files, [], lambda _: DEFAULT_EMBEDDING_MODEL).convert(node, {})


@pytest.mark.parametrize(
    ("assertion", "passes", "fails"),
    [
        (
            "{type: icontains-any, value: [Refund, help]}",
            ["I can HELP.", "refund sent"],
            ["no luck"],
        ),
        ("{type: not-regex, value: 'sorry'}", ["Done.", "Sorr y"], ["I am sorry", "\nsorry"]),
        ("{type: starts-with, value: 'Hi'}", ["Hi there"], ["Oh, Hi", "hi"]),
        ("{type: contains-all, value: 'a, \"b, c\"'}", ["a then b, c"], ["a then b c", "b, c"]),
        ("{type: not-icontains, value: 'SECRET'}", ["public"], ["the Secret is"]),
    ],
)
def test_a_check_becomes_a_regex_with_promptfoo_s_pass_and_fail(
    tmp_path: Path, assertion: str, passes: list[str], fails: list[str]
) -> None:
    ((converted),) = _convert(tmp_path, assertion)
    assert converted["type"] == "regex"
    pattern = regex.compile(converted["pattern"])
    assert [bool(pattern.search(text)) for text in passes] == [True] * len(passes)
    assert [bool(pattern.search(text)) for text in fails] == [False] * len(fails)


def test_equals_compares_exactly_as_javascript_s_string_of_the_value(tmp_path: Path) -> None:
    assert _convert(tmp_path, "{type: equals, value: 42}") == [
        {"type": "equals", "value": "42", "exact": True}
    ]
    assert [js_string(v) for v in (True, 2.0, 2.5, "x")] == ["true", "2", "2.5", "x"]


def test_a_rubric_becomes_a_judge_of_the_final_answer(tmp_path: Path) -> None:
    ((judge),) = _convert(tmp_path, "{type: llm-rubric, value: 'is kind'}")
    assert judge["type"] == "judge"
    assert judge["rubric"].endswith(": is kind")


@pytest.mark.parametrize(
    ("assertion", "message"),
    [
        ("{type: factuality, value: x}", "write what it checks as an `llm-rubric`"),
        ("{type: ruby, value: x}", "`ruby` runs code evalward cannot run; write the check as"),
        ("{value: x}", "an assertion needs a `type`"),
        ("{type: contains, value: x, rubricPrompt: y}", "a custom grading prompt"),
    ],
)
def test_what_evalward_cannot_check_alike_is_refused(
    tmp_path: Path, assertion: str, message: str
) -> None:
    with pytest.raises(Refused) as raised:
        _convert(tmp_path, assertion)
    assert message in raised.value.problem.message
    assert raised.value.problem.line == 2


def test_comma_separated_values_keep_quoted_commas_and_quotes() -> None:
    assert split_values('a, "b, c", d') == ["a", "b, c", "d"]
    assert split_values('"say ""hi""", "x\\"y"') == ['say "hi"', 'x"y']
    assert split_values(" , ,") == []
