"""promptfoo's `javascript` and `python` assertions, a test's `threshold` and
`assertScoringFunction`, and `transform` as evalward's code (`importers/promptfoo/code_asserts.py`):
files named from the repository with their function, inline code kept, and what evalward
cannot run refused at its line with what to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.errors import Refused
from evalward.importers.promptfoo.code_asserts import code_assertion, rule, transform_of
from evalward.importers.promptfoo.source import Files, Node, Source
from evalward.resources.reading.yamlsource import parse_documents

pytestmark = pytest.mark.unit


def _node(yaml: str, repo: Path) -> tuple[Node, Files]:
    (document,) = parse_documents(yaml)
    node = Node(document.data["item"], Source("promptfooconfig.yaml", document), ("item",))
    return node, Files(base=repo / "suite", root=repo, shown_from=repo)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "suite" / "scorers").mkdir(parents=True)
    for name in ("check.js", "check.py", "check.ts", "rules.txt"):
        (tmp_path / "suite" / "scorers" / name).write_text("x", encoding="utf-8")
    return tmp_path


def test_a_file_is_named_from_the_repository_with_its_function(repo: Path) -> None:
    node, files = _node(
        "item: {type: javascript, value: 'file://scorers/check.js:polite', threshold: 0.5}\n",
        repo,
    )
    assert code_assertion(node, "javascript", False, files) == {
        "type": "code",
        "file": "suite/scorers/check.js:polite",
        "threshold": 0.5,
    }
    node, files = _node("item: {type: python, value: 'file://scorers/rules.txt'}\n", repo)
    assert code_assertion(node, "python", False, files) == {
        "type": "code",
        "file": "suite/scorers/rules.txt",
        "language": "python",  # not told by its name
    }


def test_inline_code_is_kept_as_written_with_its_config(repo: Path) -> None:
    node, files = _node("item: {value: 'output.length < 50', config: {max: 50}}\n", repo)
    assert code_assertion(node, "javascript", False, files) == {
        "type": "code",
        "language": "javascript",
        "source": "output.length < 50",
        "config": {"max": 50},
    }


@pytest.mark.parametrize(
    ("item", "negated", "message"),
    [
        ("{value: 'x'}", True, "`not-javascript` inverts a scorer"),
        ("{value: ''}", False, "needs its code or a file:// value"),
        ("{value: 'file://scorers/check.ts'}", False, "is TypeScript"),
        ("{value: 'x', threshold: yes}", False, "`threshold` must be a number"),
        ("{value: 'file://../../etc/passwd'}", False, "is outside the repository"),
    ],
)
def test_what_cannot_run_is_refused_with_what_to_write(
    repo: Path, item: str, negated: bool, message: str
) -> None:
    node, files = _node(f"item: {item}\n", repo)
    with pytest.raises(Refused) as raised:
        code_assertion(node, "javascript", negated, files)
    assert message in raised.value.problem.message
    assert raised.value.problem.line == 1


def test_a_test_s_threshold_and_scoring_function_are_its_fixture_s_rule(repo: Path) -> None:
    (document,) = parse_documents(
        "threshold: '0.8'\nassertScoringFunction: 'file://scorers/check.py:score'\n"
    )
    source = Source("promptfooconfig.yaml", document)
    found = {key: Node(value, source, (key,)) for key, value in document.data.items()}
    files = Files(base=repo / "suite", root=repo, shown_from=repo)
    assert rule(found, files) == {
        "passThreshold": 0.8,
        "scoringFunction": {"file": "suite/scorers/check.py:score"},
    }
    with pytest.raises(Refused, match="a test's `threshold` is a number from 0 to 1"):
        rule({"threshold": Node(1.5, source, ("threshold",))}, files)
    with pytest.raises(Refused, match="`assertScoringFunction` names a file"):
        rule({"assertScoringFunction": Node("output", source, ("x",))}, files)


def test_a_transform_is_inline_javascript_or_a_code_file(repo: Path) -> None:
    node, files = _node("item: 'output.trim()'\n", repo)
    assert transform_of(node, files) == {"language": "javascript", "source": "output.trim()"}
    node, files = _node("item: 'file://scorers/check.py'\n", repo)
    assert transform_of(node, files) == {"file": "suite/scorers/check.py"}
    node, files = _node("item: 'file://scorers/rules.txt'\n", repo)
    with pytest.raises(Refused, match=r"a transform file is a \.js or \.py file"):
        transform_of(node, files)
