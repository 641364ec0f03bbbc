"""`evalward merge PARTS…` in-process (`cli/merge.py`): the parts `run --shard` wrote, merged
into the report and gate of the whole run; a part left out, refused as never a partial pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalward.cli import merge, run
from support.clirun import in_process, initialised, quiet_host, refused
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


@pytest.fixture
def parts(repo: GitRepo) -> list[Path]:
    """Both parts of a two-way split of `evalward init`'s suite, run with its mock script."""
    initialised(repo)
    script = str(repo.path / "evals" / "mock-replies.yaml")
    for index in (1, 2):
        code, _ = in_process(
            run.main,
            *("run", str(repo.path), "--mock-script", script, "--shard", f"{index}/2"),
            *("--output-dir", str(repo.path / "parts")),
            host=quiet_host(repo.path),
        )
        assert code == 0
    return [repo.path / "parts" / f"shard-{index}-of-2.json" for index in (1, 2)]


def test_the_parts_merge_into_one_report_and_gate(parts: list[Path]) -> None:
    root = parts[0].parents[1]
    out = root / "merged"
    code, said = in_process(
        merge.main,
        *("merge", *map(str, parts), "--repo", str(root), "--output-dir", str(out), "--json"),
        host=quiet_host(root),
    )
    assert code == 0
    document = json.loads(said)
    assert document["result"] == "pass"
    assert {f["fixture"] for f in document["fixtures"]} == {
        "assistant-asks-for-the-order",
        "assistant-order-status",
    }
    assert json.loads((out / "results.json").read_text())["result"] == "pass"
    assert (out / "comment.md").read_text().startswith("<!-- evalward-comment:local -->")


def test_a_part_left_out_is_refused(parts: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    root = parts[0].parents[1]
    said = refused(capsys, "merge", str(parts[0]), "--repo", str(root), host=quiet_host(root))
    assert "shard 2/2 missing: got 1 of 2 parts" in said
