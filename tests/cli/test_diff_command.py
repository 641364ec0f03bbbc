"""`evalward diff A B` in-process (`cli/diff.py`): two runs' results compared as the comment
compares a base with a head, the gate's exit code on the later one; a file that is not a
results document, refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalward.cli import diff, run
from evalward.text.numbers import seconds_text
from support.clirun import evalward, in_process, initialised, quiet_host, refused
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


@pytest.fixture
def two_runs(repo: GitRepo) -> tuple[Path, Path]:
    """results.json of a passing run of `evalward init`'s suite, then of one whose agent no
    longer says the order has shipped."""
    initialised(repo)
    script = repo.path / "evals" / "mock-replies.yaml"
    made = []
    for name in ("before", "after"):
        out = repo.path / name
        argv = ("run", str(repo.path), "--mock-script", str(script), "--output-dir", str(out))
        in_process(run.main, *argv, "--no-history", "--no-cache", host=quiet_host(repo.path))
        made.append(out / "results.json")
        script.write_text(script.read_text().replace("Order 12345 has shipped.", "On its way."))
    return made[0], made[1]


def test_a_fixture_that_stops_passing_fails_the_later_run(
    two_runs: tuple[Path, Path],
) -> None:
    before, after = two_runs
    host = quiet_host(before.parent)
    code, said = in_process(diff.main, "diff", str(before), str(after), host=host)
    assert code == 1
    assert said.startswith("<!-- evalward-comment:diff -->\n## ❌ evalward: Blocked: ")
    assert "| assistant-eval | assistant | 1.00 → **0.33** | -0.67 | — | 1/2 | ❌ Fail |" in said
    assert "contains: 'shipped' not found in the final message" in said
    # the figures line sums the two files' runs, as a run's sums its two sides'
    took = sum(
        f["duration_ms"]
        for path in (before, after)
        for f in json.loads(path.read_text())["fixtures"]
        if f["side"] == "head"
    )
    assert took > 0
    (summed,) = [line for line in said.splitlines() if line.startswith("runs summed ")]
    assert summed == f"runs summed {seconds_text(took / 1000)}"

    code, said = in_process(diff.main, "diff", str(before), str(after), "--json", host=host)
    assert code == 1
    document = json.loads(said)
    assert document["result"] == "fail"
    (entry,) = document["evals"]
    assert entry["eval"] == "assistant-eval" and entry["before"] == 1.0 > entry["after"]
    assert {"fixture": "assistant-order-status", "change": "failing"} in entry["fixtures"]


def test_a_run_compared_with_itself_passes(two_runs: tuple[Path, Path]) -> None:
    before, _ = two_runs
    code, said = in_process(
        diff.main, "diff", str(before), str(before), "--json", host=quiet_host(before.parent)
    )
    assert code == 0
    (entry,) = json.loads(said)["evals"]
    assert entry["before"] == entry["after"] == 1.0 and entry["passed"]


def test_a_file_that_is_not_results_json_is_refused(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, after = two_runs
    script = after.parents[1] / "evals" / "mock-replies.yaml"
    said = refused(capsys, "diff", str(script), str(after), host=quiet_host(after.parent))
    assert said.startswith(f"{script}: not JSON")


def test_verdicts_diff_cannot_settle_again_are_said_to_be_the_later_run_s(
    two_runs: tuple[Path, Path],
) -> None:
    """The later run ran with no base, so its sequential tests read "base not run" and
    counted no regression, under a table that compares it with the earlier file: said so,
    in the comment and in --json, rather than left to contradict the table."""
    before, _ = two_runs
    top = before.parents[1]
    named = ("diff", "before/results.json", "after/results.json")

    done = evalward(*named, cwd=top)

    assert done.returncode == 1, done.stderr
    assert "| assistant-eval | assistant | 1.00 → **0.33** |" in done.stdout
    note = (
        "assistant-eval: its verdict is after/results.json's own, settled when it ran "
        "(sequential tests, a pairwise judge: diff cannot run them again); Base → Head "
        "compares the two files, the verdict lines do not: run `evalward run --base REF` for "
        "the change's"
    )
    (said,) = [line for line in done.stdout.splitlines() if line.startswith("> ")]
    assert said.startswith("> assistant-eval: its verdict is after/results.json's own"), said
    as_json = evalward(*named, "--json", cwd=top)
    assert json.loads(as_json.stdout)["notes"] == [note]


def test_many_verdicts_diff_cannot_settle_again_are_one_note_naming_a_few(
    two_runs: tuple[Path, Path],
) -> None:
    """A note is one line of the comment: a suite of adaptive Evals gets one, naming five of
    them and counting the rest, not a full-length note each."""
    before, after = two_runs
    top = before.parents[1]
    document = json.loads(after.read_text())
    (entry,) = document["evals"]
    runs = [f for f in document["fixtures"] if f["eval"] == "assistant-eval"]
    for n in range(1, 7):
        name = f"suite-{n}-eval"
        document["evals"].append({**entry, "eval": name})
        document["fixtures"] += [{**f, "eval": name} for f in runs]
    (top / "many.json").write_text(json.dumps(document))

    done = evalward("diff", "before/results.json", "many.json", "--json", cwd=top)

    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["notes"] == [
        "assistant-eval, suite-1-eval, suite-2-eval, suite-3-eval, suite-4-eval and 2 more: "
        "their verdicts are many.json's own, settled when it ran (sequential tests, a pairwise "
        "judge: diff cannot run them again); Base → Head compares the two files, the verdict "
        "lines do not: run `evalward run --base REF` for the change's"
    ]
    shown = evalward("diff", "before/results.json", "many.json", cwd=top)
    notes = [line for line in shown.stdout.splitlines() if "their verdicts are" in line]
    assert notes == [notes[0]] and "suite-4-eval and 2 more" in notes[0], shown.stdout


def test_the_earlier_file_s_evals_the_later_lacks_are_named(
    two_runs: tuple[Path, Path],
) -> None:
    before, _ = two_runs
    top = before.parents[1]
    other = top / "other.json"
    other.write_text(before.read_text().replace("assistant-eval", "billing-eval"))

    done = evalward("diff", "other.json", "after/results.json", "--json", cwd=top)

    assert done.returncode == 1, done.stderr
    notes = json.loads(done.stdout)["notes"]
    assert notes[0] == (
        "after/results.json has no results of 1 Eval of other.json: billing-eval; they are not "
        "compared; the two files share no Eval: give two runs of the same suite"
    )
    shown = evalward("diff", "other.json", "after/results.json", cwd=top)
    assert "has no results of 1 Eval of other.json: billing" in shown.stdout
