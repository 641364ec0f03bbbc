"""promptfoo's tests as promptfoo runs them (`importers/promptfoo/test_cases.py`): compact
assertions read as promptfoo reads them, CSV rows as tests, `defaultTest` merged under each
test, and what has no equivalent refused at its line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalward.errors import Refused
from evalward.importers.promptfoo import test_cases
from evalward.importers.promptfoo.source import Files, Node, Source
from evalward.importers.promptfoo.test_cases import compact, merged
from evalward.resources.reading.yamlsource import parse_documents

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("icontains:paris", {"type": "icontains", "value": "paris"}),
        ("not-contains:x", {"type": "not-contains", "value": "x"}),
        ('contains-any:a, "b, c"', {"type": "contains-any", "value": ["a", "b, c"]}),
        ("similar(0.9):hello", {"type": "similar", "value": "hello", "threshold": 0.9}),
        ("grade:be kind", {"type": "llm-rubric", "value": "be kind"}),
        ("javascript: output.length>3", {"type": "javascript", "value": "output.length>3"}),
        ("python:check.py", {"type": "python", "value": "check.py"}),
        ("is-json", {"type": "is-json"}),
        ("plain text", {"type": "equals", "value": "plain text"}),
    ],
)
def test_a_compact_assertion_is_read_as_promptfoo_reads_it(
    written: str, read: dict[str, Any]
) -> None:
    assert compact(written) == read


def _config(tmp_path: Path, yaml: str) -> tuple[Node, Files]:
    (document,) = parse_documents(yaml)
    source = Source("promptfooconfig.yaml", document)
    return Node(document.data, source, ()), Files(tmp_path, tmp_path, tmp_path)


def test_csv_rows_are_tests_with_their_expected_columns_as_assertions(tmp_path: Path) -> None:
    (tmp_path / "cases.csv").write_text(
        "question,__expected,__description\nWhere is Paris?,icontains:france,geo\n",
        encoding="utf-8",
    )
    config, files = _config(tmp_path, "tests: [file://cases.csv, {vars: {q: x}}]\n")
    tests = config.get("tests")
    assert tests is not None
    found = [node.value for node in test_cases.test_nodes(tests, files)]
    assert found == [
        {
            "vars": {"question": "Where is Paris?"},
            "description": "geo",
            "assert": [{"type": "icontains", "value": "france"}],
        },
        {"vars": {"q": "x"}},
    ]


def test_default_test_is_merged_under_each_test(tmp_path: Path) -> None:
    config, _ = _config(
        tmp_path,
        "defaultTest: {vars: {lang: en, q: default}, assert: [{type: is-json}],"
        " threshold: 0.5}\n"
        "tests:\n  - {description: own, vars: {q: mine}, assert: [{type: contains, value: x}]}\n"
        "  - {options: {disableDefaultAsserts: true}}\n",
    )
    default, tests = config.get("defaultTest"), config.get("tests")
    assert tests is not None
    first, second = (merged(node, i, default) for i, node in enumerate(tests.elements()))
    assert first.description == "own"
    assert {k: v.value for k, v in first.defaults.items()} == {"lang": "en", "q": "default"}
    assert first.variables is not None and first.variables.value == {"q": "mine"}
    assert [a.value["type"] for a in first.asserts] == ["is-json", "contains"]
    assert first.rule["threshold"].value == 0.5
    assert second.asserts == []  # the default's assertions turned off


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("tests: [{vars: {q: x}, colour: red}]\n", "`colour` of a test has no equivalent"),
        ("tests: [{options: {transformVars: 'x'}}]\n", "`options.transformVars` has no"),
        ("tests: [just text]\n", "expected a test, or `file://` naming a file of tests"),
    ],
)
def test_what_has_no_equivalent_is_refused_at_its_line(
    tmp_path: Path, yaml: str, message: str
) -> None:
    config, files = _config(tmp_path, yaml)
    tests = config.get("tests")
    assert tests is not None
    with pytest.raises(Refused) as raised:
        for index, node in enumerate(test_cases.test_nodes(tests, files)):
            merged(node, index, None)
    assert message in raised.value.problem.message
    assert raised.value.problem.line == 1
