"""`evalward plan` in-process (`cli/plan.py`): what a change would run and why, its runs and
their estimated calls and cost, as text and as JSON, with nothing run; and a --base that names
no commit, refused."""

from __future__ import annotations

import json
import re

import pytest

from evalward.cli import plan
from support.clirun import evalward, in_process, initialised, quiet_host, refused
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


@pytest.fixture
def changed(repo: GitRepo) -> GitRepo:
    """`evalward init`'s repository with a branch that rewords the agent's prompt."""
    initialised(repo)
    repo.branch("feature")
    prompt = repo.path / "prompts" / "assistant.md"
    prompt.write_text(prompt.read_text().rstrip("\n") + " Be brief.\n")
    repo.commit("a briefer assistant")
    return repo


def test_the_plan_names_the_changed_file_the_agent_and_the_eval_it_runs(changed: GitRepo) -> None:
    code, said = in_process(
        plan.main, "plan", str(changed.path), "--base", "main", host=quiet_host(changed.path)
    )
    assert code == 0
    lines = said.splitlines()
    assert lines[:5] == [
        "Compared with main:",
        "  M prompts/assistant.md",
        "Changed agents:",
        "  assistant: prompts/assistant.md changed",
        "Evals to run:",
    ]
    assert lines[5] == "  assistant-eval (agent assistant): agent assistant changed"
    assert lines[6].startswith("    2 fixtures, 2 head runs; ~")
    assert any(line.startswith("    adaptive reps: ") for line in lines)
    assert lines[-2].startswith("Estimate: ~")
    assert lines[-1].startswith("Attribution (on-block): if the gate blocks, at most ~")
    assert not (changed.path / ".evalward").exists()  # nothing ran


@pytest.mark.hostile
def test_a_changed_file_s_name_neither_drives_the_terminal_nor_forges_a_line(
    changed: GitRepo,
) -> None:
    """A pull request's file names reach the plan's first lines: one holding an escape
    sequence (a window title, a cleared screen) or newlines (a plan of its own) is quoted as
    git quotes it, one line, nothing sent to the terminal as a control."""
    forged = "notes/y\nEvals to run:\n  none\nEstimate: ~0 model calls, ~$0.0000\n.md"
    changed.commit("odd names", {"notes/x\x1b]0;owned\x07\x1b[2J.md": "a\n", forged: "b\n"})

    code, said = in_process(
        plan.main, "plan", str(changed.path), "--base", "main", host=quiet_host(changed.path)
    )

    assert code == 0
    assert "\x1b" not in said and "\x07" not in said
    lines = said.splitlines()
    heads = [line.split(":")[0] for line in lines if line.startswith(("Evals to", "Estimate"))]
    assert heads == ["Evals to run", "Estimate"], lines
    assert '  A "notes/x\\x1b]0;owned\\x07\\x1b[2J.md"' in lines, lines
    assert (
        '  A "notes/y\\nEvals to run:\\n  none\\nEstimate: ~0 model calls, ~$0.0000\\n.md"' in lines
    )


def test_the_plan_shows_what_attribution_may_spend_as_the_base_sets_it(repo: GitRepo) -> None:
    """The base branch's `evalward.yaml` sets attribution's budget: the plan says it would
    run after the decision and at most what, apart from the estimate; the head's own
    `evalward.yaml` (turning it off) changes nothing. The base's `mode: off` says so."""
    initialised(repo)
    (repo.path / "evalward.yaml").write_text("attribution: { mode: on-block, budget: 0.5 }\n")
    repo.commit("attribution on")
    repo.branch("feature")
    prompt = repo.path / "prompts" / "assistant.md"
    prompt.write_text(prompt.read_text().rstrip("\n") + " Be brief.\n")
    (repo.path / "evalward.yaml").write_text("attribution: { mode: off }\n")
    repo.commit("a briefer assistant, attribution off")
    host = quiet_host(repo.path)

    code, said = in_process(plan.main, "plan", str(repo.path), "--base", "main", host=host)
    assert code == 0, said
    code, given = in_process(
        plan.main, "plan", str(repo.path), "--base", "main", "--json", host=host
    )
    assert code == 0, given

    document = json.loads(given)
    (entry,) = document["evals"]
    most = entry["atMost"]["modelCalls"]
    assert document["attribution"] == {
        "mode": "on-block",
        "budget": 0.5,
        "atMostModelCalls": most // 2,
        "maxMinutes": 30,
    }
    assert said.splitlines()[-1] == (
        f"Attribution (on-block): if the gate blocks, at most ~{most // 2} more model calls "
        "after the decision (0.5 × the run's) and 30 minutes, apart from the estimate above"
    )

    repo.checkout("main")
    (repo.path / "evalward.yaml").write_text("attribution: { mode: off }\n")
    repo.commit("attribution off")
    repo.checkout("feature")
    code, said = in_process(plan.main, "plan", str(repo.path), "--base", "main", host=host)
    assert code == 0, said
    assert said.splitlines()[-1] == (
        "Attribution: off (the base branch's evalward.yaml, `attribution.mode`)"
    )


def test_the_json_plan_adds_up_its_evals_and_an_unchanged_tree_runs_nothing(
    changed: GitRepo,
) -> None:
    host = quiet_host(changed.path)
    code, said = in_process(
        plan.main, "plan", str(changed.path), "--base", "main", "--json", host=host
    )
    assert code == 0
    document = json.loads(said)
    assert document["changedAgents"] == {"assistant": ["prompts/assistant.md changed"]}
    (entry,) = document["evals"]
    assert (entry["name"], entry["fixtures"], entry["headRuns"]) == ("assistant-eval", 2, 2)
    # the base runs the pairwise judge pairs with the head's are asked for whatever the head
    # says: they are in the estimate
    assert entry["pairedBaseRuns"] == 2 and entry["pairedModelCalls"] > 0
    assert document["modelCalls"] == entry["modelCalls"] + entry["pairedModelCalls"]
    assert entry["modelCalls"] > 0 and document["costComplete"]
    assert document["costUsd"] == pytest.approx(entry["costUsd"] + entry["pairedCostUsd"])
    assert entry["atMost"]["headRuns"] == 16  # adaptive reps: up to 8 for each fixture

    code, said = in_process(
        plan.main, "plan", str(changed.path), "--base", "HEAD", "--json", host=host
    )
    assert code == 0
    untouched = json.loads(said)
    assert untouched["evals"] == [] and untouched["modelCalls"] == 0


def test_a_base_that_names_no_commit_is_refused(
    changed: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    said = refused(
        capsys, "plan", str(changed.path), "--base", "nope", host=quiet_host(changed.path)
    )
    assert said.startswith(f"--base nope: no branch, tag or commit 'nope' in {changed.path}; ")


def test_the_plan_s_estimate_is_the_run_s(changed: GitRepo) -> None:
    """What `plan` says a change will cost is what `run` estimates when it runs every planned
    run (no cache): the head's runs and the base runs the pairwise judge pairs with them."""
    code, said = in_process(
        plan.main, "plan", str(changed.path), "--base", "main", host=quiet_host(changed.path)
    )
    assert code == 0
    (planned,) = re.findall(r"^Estimate: ~(\d+) model calls.*, (~\$[\d.]+)$", said, re.M)
    ran = evalward(
        *("run", "--base", "main", "--no-cache", "--no-history"),
        *("--mock-script", "evals/mock-replies.yaml", "--output-dir", "../out"),
        cwd=changed.path,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "2 more runs that the pairwise judge's open tests ask for, 4 in all" in ran.stderr
    (estimated,) = re.findall(
        r"estimated (\d+) model calls, ~[\d,]+ tokens, (~\$[\d.]+)", ran.stderr
    )
    assert planned == estimated, (said, ran.stderr)
    # what was spent, split by whose calls they were: the pairwise judge's apart
    (total, split) = re.findall(r"actual (\d+) model calls \(([^)]*)\)", ran.stderr)[0]
    parts = dict(part.split(" · ")[0].rsplit(" ", 1) for part in split.split(", "))
    assert "pairwise judge" in parts and sum(map(int, parts.values())) == int(total), split
