"""The command line through its real entry point: the README demo and config errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from action.test_secrets_and_injection import outside_code
from support.clirun import DEMO_PATH, evalward, initialised
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_readme_demo_runs_examples_with_the_mock_provider() -> None:
    done = evalward(
        "run", ".", "--mock-script", "examples/mock-replies.yaml", "--no-cache", PATH=DEMO_PATH
    )
    assert done.returncode == 0, done.stderr
    assert "every affected Eval passes" in done.stdout
    assert "| support-bot-eval | support-bot | **1.00** |" in done.stdout


def test_validate_reports_every_problem_with_its_location(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(
        "apiVersion: evalward.dev/v1\n"
        "kind: Agent\n"
        "metadata: { name: bot }\n"
        "spec:\n"
        "  models: [openai/gpt-test]\n"
        "  sytem: hello\n"
    )
    (tmp_path / "broken.yaml").write_text("apiVersion: evalward.dev/v1\nkind: [unclosed\n")
    done = evalward("validate", str(tmp_path))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert (
        "agent.yaml:6:3: spec.sytem: unknown field 'sytem' (did you mean 'system'?)" in done.stderr
    )
    assert "broken.yaml:3:1:" in done.stderr
    assert "2 problems" in done.stderr


def test_a_misspelt_setting_of_a_provider_or_a_price_is_named_with_the_one_it_meant(
    repo: GitRepo,
) -> None:
    # below a name the file chooses (a provider, a model's price) no field was suggested
    initialised(repo)
    config = (repo.path / "evalward.yaml").read_text()
    repo.commit(
        "misspelt settings",
        {
            "evalward.yaml": config
            + "providers:\n  openai: { baseUrll: 'http://127.0.0.1:9/v1' }\n"
            + "pricing:\n  openai/gpt-4.1-mini: { inptu: 1, output: 2 }\n"
        },
    )
    done = evalward("run", ".", "--mock-script", "evals/mock-replies.yaml", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert (
        "evalward.yaml:4:13: providers.openai.baseUrll: unknown field 'baseUrll' "
        "(did you mean 'baseUrl'?)"
    ) in done.stderr, done.stderr
    assert (
        "evalward.yaml:6:26: pricing.openai/gpt-4.1-mini.inptu: unknown field 'inptu' "
        "(did you mean 'input'?)"
    ) in done.stderr, done.stderr


@pytest.mark.parametrize("section", ["attribution: always", "cache: read-write"])
def test_a_section_written_as_its_mode_alone_is_told_how_to_write_it(
    repo: GitRepo, section: str
) -> None:
    # "expected a mapping; found 'always'" said what was wrong, not how to write it
    initialised(repo)
    config = (repo.path / "evalward.yaml").read_text()
    repo.commit("a mode alone", {"evalward.yaml": f"{config}{section}\n"})
    done = evalward("run", ".", "--mock-script", "evals/mock-replies.yaml", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    name, mode = section.split(": ")
    assert (
        f"evalward.yaml:3:1: {name}: expected a mapping; found {mode!r}: write the mode under "
        f"`mode` (`{name}: {{mode: {mode}}}`)"
    ) in done.stderr, done.stderr


def test_a_list_written_as_one_string_is_told_as_a_list(repo: GitRepo) -> None:
    # "expected a valid list; found 'prompts/**'" said what was wrong, not how to write it
    initialised(repo)
    agent = (repo.path / "agents/assistant.yaml").read_text()
    written = agent.replace("  systemFile:", "  watch: prompts/**\n  systemFile:")
    repo.commit("a watch as a string", {"agents/assistant.yaml": written})
    done = evalward("run", ".", "--mock-script", "evals/mock-replies.yaml", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert (
        "agents/assistant.yaml:8:3: spec.watch: expected a valid list; found 'prompts/**'; "
        "write it as a list: [prompts/**]"
    ) in done.stderr, done.stderr


def test_a_price_for_no_provider_is_refused_and_one_for_a_misspelt_model_warned_of(
    repo: GitRepo,
) -> None:
    """Neither is ever charged: the model meant keeps its built-in price, and a `cost`
    budget is judged at a price nobody chose."""
    initialised(repo)
    config = (repo.path / "evalward.yaml").read_text()
    misspelt = config + "pricing:\n  openai/gpt-4.1-mnii: { input: 100, output: 400 }\n"
    repo.commit("a price for a misspelt model", {"evalward.yaml": misspelt})
    checked = evalward("validate", "--mock-script", "evals/mock-replies.yaml", cwd=repo.path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        "pricing.openai/gpt-4.1-mnii: no definition names the model 'openai/gpt-4.1-mnii', so "
        "this price is used by nothing; did you mean 'openai/gpt-4.1-mini'"
    ) in checked.stdout, checked.stdout
    nobody = config + "pricing:\n  olama/llama3.2: { input: 0, output: 0 }\n"
    repo.commit("a price for a provider nobody declared", {"evalward.yaml": nobody})
    for command in ("validate", "run"):
        done = evalward(command, "--mock-script", "evals/mock-replies.yaml", cwd=repo.path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert (
            "pricing.olama/llama3.2: no provider 'olama' is built in or declared under "
            "`providers`, so no model is ever charged at this price"
        ) in done.stderr, done.stderr


def test_an_eval_of_fixed_reps_the_budget_runs_none_of_is_incomplete_not_failed(
    repo: GitRepo,
) -> None:
    """With no run it has no score: scored 0.00 it was blocked below its threshold, where
    the same Eval with adaptive reps was incomplete, and `--allow-incomplete` let neither
    pass though the budget cannot hold its runs even alone."""
    initialised(repo)
    evals = (repo.path / "evals/assistant.yaml").read_text()
    fixed = evals.replace(
        "  execution: { reps: { min: 1, max: 8 } }",
        "  execution: { repsPerFixture: 1 }\n  scoring: { passThreshold: 0.9 }",
    )
    assert fixed != evals
    repo.commit("fixed reps", {"evals/assistant.yaml": fixed})
    budget = ["--mock-script", "evals/mock-replies.yaml", "--max-cost-usd", "0.0001", "--json"]
    done = evalward("run", *budget, cwd=repo.path)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["result"] == "incomplete"
    allowed = evalward("run", *budget, "--allow-incomplete", cwd=repo.path)
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["result"] == "pass"


def test_results_name_the_commits_a_local_run_compared(repo: GitRepo, tmp_path: Path) -> None:
    initialised(repo)
    base = repo.git("rev-parse", "HEAD").strip()
    repo.branch("change")
    head = repo.commit("a change", {"prompts/assistant.md": "Be brief.\n"})
    done = evalward(
        "run", "--base", "main", "--mock-script", "evals/mock-replies.yaml",
        "--output-dir", str(tmp_path / "out"), cwd=repo.path,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    run = json.loads((tmp_path / "out" / "results.json").read_text())["run"]
    assert (run["head_sha"], run["base_sha"], run["event"]) == (head, base, "")


def test_missing_api_key_is_a_config_error_naming_the_setting(tmp_path: Path) -> None:
    done = evalward("run", ".", "--no-cache")
    assert done.returncode == 2
    assert re.search(r"needs (OPENAI|ANTHROPIC)_API_KEY, which is not set", done.stderr)
    assert "Traceback" not in done.stderr


LINKER = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: linker }
spec:
  models: [openai/gpt-test]
  system: Answer with a tracking link.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: linker-eval }
spec:
  targetAgent: linker
  fixtureSelector: { matchLabels: { agent: linker } }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: track, labels: { agent: linker } }
spec:
  targetAgent: linker
  input: { type: prompt, payload: { prompt: "Where can I track my parcel?" } }
  assertions:
    - { type: equals, value: "no link" }
"""


def test_run_prints_urls_and_mentions_intact_and_comment_md_neutralises_them(
    repo: GitRepo,
) -> None:
    reply = "Track it at https://example.com/x or ask @octocat"
    repo.commit(
        "a linker",
        {"linker.yaml": LINKER, "mock.yaml": f'replies: []\ndefault: "{reply}"\n'},
    )

    done = evalward(
        "run", ".", "--mock-script", "mock.yaml", "--no-cache", "--output-dir", "out", cwd=repo.path
    )

    assert done.returncode == 1, done.stderr
    assert "https://example.com/x" in done.stdout and "@octocat" in done.stdout
    assert "\u200b" not in done.stdout
    # comment.md is what GitHub renders: a bare URL outside code would be a live link there
    markup = outside_code((repo.path / "out" / "comment.md").read_text())
    assert "https:/\u200b/example.com/x" in markup and "https://" not in markup
    assert "@\u200boctocat" in markup and "@octocat" not in markup


def _with_the_reader_gone(
    args: list[str], cwd: Path, home: Path, stderr_too: bool = False
) -> subprocess.CompletedProcess[bytes]:
    """`evalward ARGS` started afresh (standard output must be the pipe itself) with its
    standard output, and its standard error where `stderr_too`, a pipe whose reader left
    before anything was written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "evalward", *args],
            cwd=cwd,
            stdout=write_end,
            stderr=write_end if stderr_too else subprocess.PIPE,
            timeout=120,
            env={"PATH": DEMO_PATH, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
                 "PYTHONPATH": str(REPO_ROOT / "src")},
        )  # fmt: skip
    finally:
        os.close(write_end)


@pytest.mark.parametrize("stderr_too", [False, True], ids=["stdout", "stdout and stderr"])
def test_a_reader_that_leaves_early_ends_the_run_quietly_with_its_files_written(
    repo: GitRepo, tmp_path: Path, stderr_too: bool
) -> None:
    """`evalward run | head` (or `2>&1 | head`): the reader is gone before the comment, or
    the first progress line, is written. No traceback, the shell's code for a closed pipe,
    and results.json still on disk."""
    repo.commit(
        "a linker", {"linker.yaml": LINKER, "mock.yaml": 'replies: []\ndefault: "no link"\n'}
    )
    out = tmp_path / "out"
    run = ["run", ".", "--no-cache", "--output-dir", str(out), "--mock-script", "mock.yaml"]

    done = _with_the_reader_gone(run, repo.path, tmp_path, stderr_too)

    assert done.returncode == 141, done.stderr
    if not stderr_too:
        assert b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr
    assert json.loads((out / "results.json").read_text())["result"] == "pass"


def test_a_reader_that_leaves_during_a_long_output_ends_the_command_quietly(
    tmp_path: Path,
) -> None:
    """`evalward schema | head`: its output is longer than a pipe holds, so the write that
    finds the reader gone comes while the command runs, not at its last flush. No traceback,
    the shell's code for a closed pipe."""
    done = _with_the_reader_gone(["schema"], tmp_path, tmp_path)

    assert done.returncode == 141, done.stderr
    assert b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr
