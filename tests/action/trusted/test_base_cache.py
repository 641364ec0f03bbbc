"""action/trusted/base_cache.py's words and bounds, beside the gate's own tests of it
(test_base_cache_artifact.py): which entries of an archive are never unpacked, and a
setting's name shown as printable text wherever it is said."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from evalward.action.trusted.base_cache import BaseCacheAsk, kept_out

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("name", "out"),
    [
        ("environments/abc/bin/python", True),
        ("environments", True),
        ("results/results.sqlite", False),
        ("scores/environments.json", False),
        ("status/greeting.json", False),
    ],
)
def test_only_the_kept_environments_are_left_out_of_an_archive(name: str, out: bool) -> None:
    assert kept_out(PurePosixPath(name)) is out


def test_what_is_expected_names_the_artifact_branch_and_repository_printably() -> None:
    ask = BaseCacheAsk("https://api.github.com", "t0ken", "o/r", "cache\x1b[31m", "main", "c" * 40)
    said = ask.expected
    assert "\x1b" not in said and "t0ken" not in said
    assert "`push` run on main in o/r" in said
