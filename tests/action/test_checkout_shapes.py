"""A pull request that puts a file where evalward needs a folder, or a folder where it reads a
file: the gate says so and fails, or goes on without what it cannot use; it never crashes. So
too for what an earlier step of the job left where the output goes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from action.test_gate_evasion import assert_fails_below_threshold, gate
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo
from support.suite import make_pr, script_model

pytestmark = pytest.mark.hostile


@pytest.mark.parametrize("committed", [".evalward", ".evalward/out"])
def test_a_committed_file_where_the_output_folder_goes_fails_the_gate_with_the_reason(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    committed: str,
) -> None:
    base, _ = make_pr(repo, github)
    head = repo.commit("a file in the way", {committed: "not a folder\n"})
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)
    # the comment an earlier head's gate wrote, a pass: it must not stand over this head
    earlier = github.add_comment(
        7, "<!-- evalward-comment:evals/gate -->\n## ✅ evalward: passed", author=github.login
    )

    run = gate(repo, github, base, head, env, **{"output-dir": ".evalward/out"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert f"action input `output-dir`: {committed} is a file in the checkout" in run.stderr
    assert run.outputs.get("result") != "pass"
    assert "internal error" not in run.stderr
    (comment,) = github.comments_on(7)
    assert comment["id"] == earlier["id"], comment  # the same comment, said again
    body = comment["body"]
    assert "## ⏹️ evalward: stopped before a decision" in body and "✅" not in body, body
    assert f"{committed} is a file in the checkout" in body and f"head `{head[:12]}`" in body

    # a run of this head after another was pushed leaves that one's comment to it
    github.comments[earlier["id"]]["body"] = "<!-- evalward-comment:evals/gate -->\n## newer"
    github.pulls[7].head_sha = base
    late = gate(repo, github, base, head, env, **{"output-dir": ".evalward/out"})
    assert late.returncode == 2, late.stdout + late.stderr
    assert github.comments_on(7)[0]["body"].endswith("## newer")


def test_an_output_folder_evalward_cannot_write_fails_before_any_run(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A workflow whose `output-dir` no one may write (under /proc): said at its setting, and
    no run is started whose results would be lost."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env, **{"output-dir": "/proc/evalward-out"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert "action input `output-dir`: evalward cannot write in /proc" in run.stderr
    assert "internal error" not in run.stderr
    assert model.requests == []


@pytest.mark.parametrize(
    "case",
    [
        (
            "{outside}/out",
            "{outside}/out",
            "{outside}/out is a file, where evalward needs a folder",
        ),
        (
            "{outside}/out/run",
            "{outside}/out",
            "{outside}/out is a file, where evalward needs a folder",
        ),
        (
            "{outside}/out",
            "{outside}/out/results.json/",
            "{outside}/out/results.json is not a file, and evalward writes the run's "
            "results.json there, after the runs",
        ),
        (
            ".evalward/out",
            "{workspace}/.evalward/out/report.html/",
            ".evalward/out/report.html is not a file, and evalward writes the run's report.html",
        ),
        (
            "{outside}/out",
            "{outside}/out/audit.jsonl/",
            "{outside}/out/audit.jsonl is not a file, and evalward writes the run's audit.jsonl",
        ),
    ],
    ids=[
        "a file as the folder",
        "a file on the way",
        "a folder as results.json",
        "a folder as report.html in the workspace",
        "a folder as audit.jsonl",
    ],
)
def test_what_an_earlier_step_left_where_the_results_go_fails_before_any_run(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
    case: tuple[str, str, str],
) -> None:
    """Not committed, so no check of the commit finds it: it is found before the runs, whose
    results, comment and check it would otherwise take with it as the files are written.
    `case`: the `output-dir` given, what the earlier step left (a folder if it ends in `/`)
    and what the error says."""
    folder, left, said = case
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    places = {"outside": str(tmp_path / "elsewhere"), "workspace": str(repo.path)}
    made = Path(left.format(**places))
    made.parent.mkdir(parents=True, exist_ok=True)
    if left.endswith("/"):
        made.mkdir()
    else:
        made.write_text("left by an earlier step\n")

    run = gate(repo, github, base, head, env, **{"output-dir": folder.format(**places)})

    assert run.returncode == 2, run.stdout + run.stderr
    assert f"::error::action input `output-dir`: {said.format(**places)}" in run.stderr
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    assert run.outputs["result"] == "incomplete"
    assert model.requests == []


@pytest.mark.parametrize(
    "committed",
    [".evalward/out/results.json/x.yaml", ".evalward/out/audit.jsonl"],
    ids=["a folder where results.json goes", "a forged audit record"],
)
def test_files_committed_into_the_output_folder_fail_the_gate_with_the_reason(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    committed: str,
) -> None:
    base, _ = make_pr(repo, github)
    forged = '{"event": "bypass", "actor": "maintainer"}\n'
    head = repo.commit("results of its own", {committed: forged})
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env, **{"output-dir": ".evalward/out"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert "1 file(s) under .evalward/out are committed in the repository" in run.stderr
    assert f"(e.g. {committed})" in run.stderr
    assert run.outputs.get("result") != "pass"


def test_a_committed_file_where_the_cache_goes_only_turns_the_cache_off(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, _ = make_pr(repo, github)
    head = repo.commit("a file in the way", {".evalward": "not a folder\n"})
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env, **{"cache-dir": ".evalward/cache"})

    assert "::warning::result cache not used: .evalward is a file in the checkout" in run.stdout
    assert_fails_below_threshold(run, github)


def test_a_folder_named_evalward_yaml_is_a_problem_not_a_crash(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, _ = make_pr(repo, github)
    head = repo.commit("a folder in the way", {"evalward.yaml/notes.md": "hi\n"})
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert_fails_below_threshold(run, github)


def test_a_folder_named_evalward_yaml_on_the_base_is_no_configuration(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    repo.commit("a folder in the way", {"evalward.yaml/notes.md": "hi\n"})
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert_fails_below_threshold(run, github)


@pytest.mark.parametrize("link", ["evals/loop.yaml", "evals/fixtures/greeting.yaml"])
def test_a_link_that_loops_where_a_resource_is_read_is_a_problem_not_a_crash(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str], link: str
) -> None:
    base, _ = make_pr(repo, github)
    (repo.path / link).unlink(missing_ok=True)
    os.symlink(os.path.basename(link), repo.path / link)
    head = repo.commit("a link to itself")
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    assert f"{link}: not a regular file (a FIFO, a device, or a link to one or that loops)" in (
        run.stderr
    )
