"""The YAML layer: fast path and marked path agree; YAML 1.2 scalars; duplicate keys refused."""

from __future__ import annotations

import pytest

from evalward.resources.yamlsource import YamlSyntaxError, load_documents, parse_documents

TEXTS = [
    "# c\n---\na: 1\n---\n# comment\n\nb: 2\n--- {c: 3}\n",
    "a: 1\n---\nb: 2\n",
    "%YAML 1.2\n---\na: 1\n",
    "",
    "# only a comment\n",
    "- a\n- b\n",
    "---\n- a\n",
    "a: 1\n---\n",
    "a: |\n  ---not a marker\n  text\nb: 2\n",
    "base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n",
]


@pytest.mark.parametrize("text", TEXTS)
def test_fast_path_and_marked_path_agree(text: str) -> None:
    fast = [(d.data, d.start_line) for d in load_documents(text)]
    slow = [(d.data, d.start_line) for d in parse_documents(text)]
    assert fast == slow


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
