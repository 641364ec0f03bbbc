"""The YAML layer: fast path and marked path agree; YAML 1.2 scalars; duplicate keys refused."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from evalward.errors import YamlSyntaxError
from evalward.resources.reading.yamlsource import Document, decode, load_documents, parse_documents

pytestmark = pytest.mark.unit

TEXTS = [
    "# c\n---\na: 1\n---\n# comment\n\nb: 2\n--- {c: 3}\n",
    "a: 1\n---\nb: 2\n",
    "%YAML 1.2\n---\na: 1\n",
    "",
    "# only a comment\n",
    "- a\n- b\n",
    "---\n- a\n",
    "a: 1\n---\n",
    "a: 1\n--- # c\n\n\nb: 2\n",
    "a: |\n  ---not a marker\n  text\nb: 2\n",
    "base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n",
    "\ufeffa: 1\n---\nb: 2\n",  # a byte-order mark, then a key
    "\ufeff# The agent\n# more\na: {b: '{{ c }}'}\n",  # a byte-order mark, then a comment
]


@pytest.mark.parametrize("text", TEXTS)
def test_fast_path_and_marked_path_agree(text: str) -> None:
    """Same data, same start lines (an empty document has no line worth reporting)."""

    def seen(documents: list[Document]) -> list[tuple[object, int | None]]:
        return [(d.data, d.start_line if d.data is not None else None) for d in documents]

    assert seen(load_documents(text)) == seen(parse_documents(text))


def test_a_byte_order_mark_at_the_start_is_no_character_of_the_text() -> None:
    # yaml-rs and libyaml read it as the first key's first character: '\ufeffapiVersion'
    assert decode(b"\xef\xbb\xbfa: 1\n") == "a: 1\n"
    for text in ("\ufeffa: 1\n", "\ufeff# c\na: 1\n"):
        assert [d.data for d in load_documents(text)] == [{"a": 1}]
        (document,) = parse_documents(text)
        assert document.data == {"a": 1}
        assert document.marks[("a",)] == (text.count("\n"), 1)


def test_quoted_scalars_stay_strings_and_yaml_1_2_scalars() -> None:
    (document,) = load_documents('eta: "2026-11-25"\nday: 2026-11-25\nflag: yes\nn: "1"\n')
    assert document.data == {"eta": "2026-11-25", "day": "2026-11-25", "flag": "yes", "n": "1"}


def test_duplicate_keys_are_refused_with_both_lines() -> None:
    with pytest.raises(YamlSyntaxError) as caught:
        load_documents("spec:\n  assertions: []\n  assertions: [x]\n")
    assert str(caught.value) == "invalid YAML: duplicate key 'assertions' (first at line 2)"
    assert (caught.value.line, caught.value.column) == (3, 3)


def test_marks_point_at_keys_and_items() -> None:
    (document,) = parse_documents("spec:\n  items:\n    - {a: 1}\n    - b\n")
    assert document.locate(("spec", "items")) == (2, 3)
    assert document.locate(("spec", "items", 1)) == (4, 7)
    assert document.locate(("spec", "items", 0, "a")) == (3, 8)
    assert document.locate(("spec", "missing")) == (1, 1)


_CHILD_SEES = """
import os, subprocess, sys
import evalward.resources.reading.yamlsource
print(os.environ.get("MIMALLOC_ARENA_EAGER_COMMIT", "-"))
child = "import os; print(os.environ.get('MIMALLOC_ARENA_EAGER_COMMIT', '-'))"
print(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True).stdout.strip())
"""


@pytest.mark.parametrize(("given", "seen"), [(None, "-"), ("1", "1")])
def test_the_parsers_allocator_setting_reaches_no_program_evalward_starts(
    given: str | None, seen: str
) -> None:
    """The YAML parser's allocator is told to commit memory as used while its wheel loads;
    the setting is gone from evalward's environment (an agent, a scorer, git) afterwards, and
    a value the user set is left as it was."""
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_ARENA_EAGER_COMMIT"}
    if given is not None:
        env["MIMALLOC_ARENA_EAGER_COMMIT"] = given
    done = subprocess.run(
        [sys.executable, "-c", _CHILD_SEES], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == [seen, seen]


@pytest.mark.parametrize(
    ("text", "line"),
    [("a:\n\tb: 1\n", 2), ("a:\n  b: 1\n\t  c: 2\n", 3)],
)
def test_a_tab_where_an_indent_goes_is_named(text: str, line: int) -> None:
    """The parser says it found "a character that cannot start any token": which one, and
    what to do, was left to the reader."""
    with pytest.raises(YamlSyntaxError) as caught:
        load_documents(text)
    assert str(caught.value).endswith(
        "(a tab: YAML indents with spaces, never tabs; replace it with spaces)"
    ), str(caught.value)
    assert (caught.value.line, caught.value.column) == (line, 1)


def test_other_invalid_yaml_says_nothing_of_tabs() -> None:
    with pytest.raises(YamlSyntaxError) as caught:
        load_documents("a: [1\n")
    assert "tab" not in str(caught.value)
