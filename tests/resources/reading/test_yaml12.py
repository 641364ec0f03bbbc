"""PyYAML read by YAML 1.2's core schema (`resources/reading/yaml12.py`): the strings YAML 1.1 turns
into booleans, octals, numbers and dates stay strings; merge keys merge; a duplicate key is
refused at its line."""

from __future__ import annotations

import math

import pytest
import yaml

from evalward.resources.reading.yaml12 import load

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("scalar", "value"),
    [
        ("no", "no"),
        ("on", "on"),
        ("Yes", "Yes"),
        ("012", 12),
        ("1_000", "1_000"),
        ("2024-01-02", "2024-01-02"),
        ("true", True),
        ("FALSE", False),
        ("~", None),
        ("null", None),
        ("0o17", 15),
        ("0x1F", 31),
        ("-7", -7),
        ("1.5e3", 1500.0),
        ("-.inf", -math.inf),
        ("3:20", "3:20"),
    ],
)
def test_plain_scalars_resolve_by_the_core_schema(scalar: str, value: object) -> None:
    assert load(f"key: {scalar}\n") == {"key": value}


def test_not_a_number_is_read_as_one() -> None:
    assert math.isnan(load("key: .NaN\n")["key"])


def test_merge_keys_merge_the_mapping_they_name() -> None:
    text = "base: &base {model: a, reps: 3}\nagent:\n  <<: *base\n  timeout: 5\n"
    assert load(text)["agent"] == {"model": "a", "reps": 3, "timeout": 5}


def test_a_key_beside_a_merge_overrides_the_merged_one_and_twice_is_still_refused() -> None:
    text = "base: &base {model: a, reps: 3}\nagent:\n  <<: *base\n  reps: 5\n"
    assert load(text)["agent"] == {"model": "a", "reps": 5}
    with pytest.raises(yaml.constructor.ConstructorError, match="duplicate key 'reps'"):
        load(text + "  reps: 6\n")


def test_a_key_given_twice_is_refused_at_its_line() -> None:
    with pytest.raises(yaml.constructor.ConstructorError) as raised:
        load("name: a\nother: b\nname: c\n")
    assert "duplicate key 'name'" in str(raised.value)
    assert raised.value.problem_mark is not None
    assert raised.value.problem_mark.line == 2  # 0-based: the third line


def test_an_empty_text_is_none_and_a_tag_of_code_is_refused() -> None:
    assert load("") is None
    with pytest.raises(yaml.YAMLError):
        load("!!python/object/apply:os.system ['true']\n")
