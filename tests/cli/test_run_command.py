"""`evalward run` in-process (`cli/run.py`): the comment or the results document, the run's
files, the gate's exit code, the local status and history it records, a shard's part; and a
selection naming nothing the repository defines, refused before anything runs."""

from __future__ import annotations

import json

import pytest

from evalward.cli import run
from support.clirun import evalward, in_process, initialised, quiet_host, refused
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


@pytest.fixture
def started(repo: GitRepo) -> GitRepo:
    return initialised(repo)


def mock(repo: GitRepo) -> str:
    return str(repo.path / "evals" / "mock-replies.yaml")


def test_a_passing_run_prints_the_comment_writes_its_files_and_records_its_status(
    started: GitRepo,
) -> None:
    out = started.path / "out"
    code, said = in_process(
        run.main,
        *("run", str(started.path), "--mock-script", mock(started), "--output-dir", str(out)),
        host=quiet_host(started.path),
    )
    assert code == 0, said
    assert "evalward: every affected Eval passes" in said
    assert "| assistant-eval | assistant | **1.00** |" in said
    assert sorted(p.name for p in out.iterdir()) == [
        "comment.md",
        "junit.xml",
        "report.html",
        "results.json",
    ]
    results = json.loads((out / "results.json").read_text())
    assert {(f["fixture"], f["status"]) for f in results["fixtures"]} == {
        ("assistant-asks-for-the-order", "pass"),
        ("assistant-order-status", "pass"),
    }
    assert (started.path / ".evalward" / "status").is_dir()  # `evalward status --local` reads it


def test_a_fixture_that_fails_fails_the_gate_and_json_says_so(started: GitRepo) -> None:
    script = started.path / "evals" / "mock-replies.yaml"
    script.write_text(script.read_text().replace("Order 12345 has shipped.", "It is on its way."))
    code, said = in_process(
        run.main,
        *("run", str(started.path), "--mock-script", str(script), "--json", "--no-history"),
        host=quiet_host(started.path),
    )
    assert code == 1
    document = json.loads(said)
    assert document["result"] == "fail"
    failed = {f["fixture"] for f in document["fixtures"] if f["status"] != "pass"}
    assert failed == {"assistant-order-status"}  # each of its reps
    assert document["history"] == []  # --no-history: nothing recorded
    assert not (started.path / ".evalward" / "status").exists()


def test_shards_write_their_parts_of_the_plan_and_do_not_gate(started: GitRepo) -> None:
    parts = started.path / "parts"
    runs: list[set[tuple[str, int]]] = []
    for index in (1, 2):
        code, said = in_process(
            run.main,
            *("run", str(started.path), "--mock-script", mock(started), "--shard", f"{index}/2"),
            *("--output-dir", str(parts)),
            host=quiet_host(started.path),
        )
        assert code == 0
        assert said.startswith("evalward: ") and f"shard-{index}-of-2.json" in said
        part = json.loads((parts / f"shard-{index}-of-2.json").read_text())
        runs.append({(f["fixture"], f["rep"]) for f in part["fixtures"]})
    # the plan's runs (2 fixtures, each up to 8 adaptive reps) split between the parts
    assert runs[0] and runs[1] and not runs[0] & runs[1]
    assert len(runs[0] | runs[1]) == 16


def test_an_eval_the_repository_does_not_define_is_refused_with_the_nearest(
    started: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    said = refused(
        capsys,
        *("run", str(started.path), "--mock-script", mock(started), "--eval", "assistant-evl"),
        host=quiet_host(started.path),
    )
    assert said == (
        "--eval assistant-evl: no such resource in the repository (did you mean 'assistant-eval'?)"
    )
    assert not (started.path / ".evalward" / "status").exists()


def test_a_run_with_no_base_replays_no_pairwise_calibration(started: GitRepo) -> None:
    """init's Eval judges in pairs, and a run with no base has no pair to judge: it pays
    none of the calibration's replay (28 calls at init's, 3.5 times the run's own) for a
    cache only the action's default branch runs keep for pull requests."""
    done = evalward("run", ".", "--mock-script", mock(started), "--no-history", cwd=started.path)

    assert done.returncode == 0, done.stdout + done.stderr
    (spent,) = [line for line in done.stderr.splitlines() if "actual" in line]
    assert "pairwise" not in spent, spent
    assert "actual 4 model calls," in spent, spent


def test_a_model_no_provider_knows_is_a_warning_of_the_run_as_of_validate(
    started: GitRepo,
) -> None:
    """A mock script answers any model's name, so a misspelt one passed a dry run with no word
    but "cost unknown"; `validate` warned of it. The run says it too, at its line."""
    agent = started.path / "agents" / "assistant.yaml"
    agent.write_text(agent.read_text().replace("openai/gpt-4.1-mini", "openai/gpt-4.1-mnii"))

    done = evalward("run", ".", "--mock-script", mock(started), "--no-history", cwd=started.path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "> warning: agents/assistant.yaml:7:12: spec.models[0]: no provider knows the model "
        "'openai/gpt-4.1-mnii': it is not among the openai models evalward knows. Did you mean "
        "'openai/gpt-4.1-mini'?"
    ) in done.stdout, done.stdout


def test_a_run_of_one_fixture_announces_one_run(started: GitRepo) -> None:
    # it said "evalward: 1 runs planned"
    done = evalward(
        *("run", str(started.path), "--mock-script", mock(started), "--no-history"),
        *("--fixture", "assistant-asks-for-the-order"),
        cwd=started.path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == "evalward: 1 run planned", done.stderr
