"""Every broken repository of the corpus: exit code 2 and one located message per problem,
through `evalward validate` and through the action entry, never a traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evalward.__main__ import main
from hostile.corpus import CORPUS, EXTRA, Case, write_repo

LOCATED = re.compile(r"^[\w./-]+(:\d+(:\d+)?)?: ")


def problems(stderr: str, prefix: str) -> list[str]:
    """The problem lines of the one message evalward printed (after its count line)."""
    lines = [line.removeprefix(prefix) for line in stderr.splitlines()]
    assert lines, "no message"
    assert re.fullmatch(r"\d+ problems? in evalward resources:", lines[0]), lines
    return [line.strip() for line in lines[1:]]


def check(case: Case, stderr: str, prefix: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    found = problems(stderr, prefix)
    assert len(found) == len(case.expected), found
    for line, expected in zip(found, case.expected, strict=True):
        assert LOCATED.match(line), line
        assert line.startswith(expected), f"{line!r} does not start with {expected!r}"


def test_the_corpus_is_large_and_covers_every_category() -> None:
    assert len(CORPUS) >= 50
    assert len({c.id for c in CORPUS}) == len(CORPUS)
    assert {c.category for c in CORPUS} >= {
        "YAML syntax",
        "types and fields",
        "references",
        "cron",
        "regex",
        "file references",
        "paths",
        "encodings",
        "empty files",
        "huge files and limits",
    }


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_validate(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_repo(tmp_path / "repo", case.files)
    code = main(["validate", str(tmp_path / "repo")])
    captured = capsys.readouterr()
    assert code == 2, captured
    check(case, captured.err, "evalward: ")
