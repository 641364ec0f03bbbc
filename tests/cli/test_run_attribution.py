"""`evalward run --base main` says where the agent regressed, as the action does: with the
change committed or still in the working tree, the hunk proven to cause it (`path:line` in
the comment printed, the `attribution` section of results.json), its calls apart from the
run's own; with a file git does not track beside it, why it cannot (variants are commits). The
exit code is the decision's either way, and Ctrl-C while it runs keeps the decision. The
clerk is the action's (support/clerk.py): the scripted model refuses refunds where the
prompt says NEVER REFUND."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Rule, ScriptedModelServer, error, text
from support.byoagent import one_agent_suite
from support.clerk import (
    AGENT,
    BASE_PROMPT,
    HEAD_PROMPT,
    NEVER,
    SUITE,
    git_on_commit_tree,
    script,
)
from support.clirun import SOURCE, evalward, run_for_results
from support.gitrepo import GitRepo
from support.limits import subprocess_limit
from support.suite import provider_env

pytestmark = pytest.mark.e2e

ROOMY = "attribution: { mode: on-block, budget: 4 }\n"


def _clerk(
    path: Path,
    config: str | None = ROOMY,
    prompt: str = HEAD_PROMPT,
    suite: str = SUITE,
    ignored: str = ".evalward/\nout/\n",
) -> GitRepo:
    """main: the clerk (`config` its evalward.yaml, None for none; `suite` its Eval and
    fixtures; `ignored` its .gitignore); then a branch `stricter` with `prompt` committed, by
    default the three-hunk one."""
    repo = GitRepo(path)
    repo.commit(
        "the clerk",
        {
            "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-mini"),
            "prompts/clerk.md": BASE_PROMPT,
            "evals/suite.yaml": suite,
            ".gitignore": ignored,
            **({"evalward.yaml": config} if config is not None else {}),
        },
    )
    repo.git("branch", "-M", "main")
    repo.branch("stricter")
    repo.commit("a stricter clerk", {"prompts/clerk.md": prompt})
    return repo


def _run(repo: GitRepo, model: ScriptedModelServer) -> tuple[int, str, str, dict[str, Any]]:
    done = evalward(
        "run",
        ".",
        "--base",
        "main",
        "--no-cache",
        "--no-history",
        "--output-dir",
        "out",
        cwd=repo.path,
        **provider_env(model),
    )
    assert "Traceback" not in done.stderr, done.stderr
    results = json.loads((repo.path / "out" / "results.json").read_text())
    return done.returncode, done.stdout, done.stderr, results


def test_a_committed_change_is_traced_to_its_hunk_on_the_command_line(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    script(model)
    repo = _clerk(tmp_path / "repo")

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr  # blocked, as without attribution
    assert results["result"] == "fail"
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"], culprit["last"]) == ("prompts/clerk.md", 5, 5)
    assert "Where it regressed" in stdout
    assert "prompts/clerk.md:5" in stdout
    # its calls apart: the run's spending line and `run.spent` are the run's own
    spent = results["run"]["spent"]["model_calls"]
    attribution = results["run"]["attribution_spent"]["model_calls"]
    assert attribution == results["attribution"]["spentModelCalls"] > 0
    said = re.search(r"evalward: attribution: 1 of 1 regressions traced to their hunks", stderr)
    assert said and said.start() > stderr.index("[6/6]"), stderr  # after the run's lines
    (line,) = [x for x in stderr.splitlines() if "actual" in x]
    assert f"actual {spent} model calls" in line, line
    assert len(model.requests) == spent + attribution


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_a_change_of_one_hunk_is_proven_by_the_gate_s_own_runs_at_the_default_budget(
    tmp_path: Path, model: ScriptedModelServer, cache: bool
) -> None:
    """The pull request adds NEVER REFUND and nothing else, and the base sets no budget (half
    the run's calls: 3 here, a variant's runs of both regressed fixtures need about 2). Its
    two trials are the base's agent again, whose runs the result cache holds from the gate's
    own, and the head itself, which the gate's own runs answer: they cost nothing, and the
    line is proven without a call, on both. Without the cache the base's agent runs again, a
    call a fixture, which fits: the head is still the gate's runs, never run again."""
    script(model)
    never = BASE_PROMPT.replace("Say approved", f"{NEVER}Say approved")
    repo = _clerk(tmp_path / "repo", config=None, prompt=never)

    done = evalward(
        "run", ".", "--base", "main", "--no-history", "--output-dir", "out",
        *([] if cache else ["--no-cache"]), cwd=repo.path, **provider_env(model),
    )  # fmt: skip

    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    results = json.loads((repo.path / "out" / "results.json").read_text())
    found = results["attribution"]
    (regression,) = found["regressions"]
    assert found["budgetModelCalls"] == 3
    assert regression["result"] == "attributed", regression
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/clerk.md", 5)
    assert [t["way"] for t in regression["trials"]] == ["reverted", "applied"]
    assert [t["gateRuns"] for t in regression["trials"]] == [False, True]
    ran = [[s["fixture"] for s in t["scores"]] for t in regression["trials"]]
    assert regression["triedOn"] == ["refund-a", "refund-b"]
    assert ran == [["refund-a", "refund-b"]] * 2
    assert "alone" not in done.stdout
    assert "taken back, refund-a 1/1, refund-b 1/1, as on the base" in done.stdout, done.stdout
    head = (
        "the base with only it: refund-a 0/1, refund-b 0/1 — this head itself, as the gate ran it."
    )
    assert head in done.stdout, done.stdout
    if cache:
        assert found["spentModelCalls"] == 0
        assert len(model.requests) == results["run"]["spent"]["model_calls"]
    else:  # the base's agent again, a call a fixture; the head's runs are the gate's
        assert found["spentModelCalls"] == 2


def _inline(prompt: str) -> str:
    """The clerk with its prompt written in its YAML as a block, as most agents keep it."""
    block = "".join(f"    {line}" if line.strip() else line for line in prompt.splitlines(True))
    return AGENT.format(model="openai/gpt-4.1-mini").replace(
        "  systemFile: prompts/clerk.md\n", f"  system: |\n{block}"
    )


def test_under_adaptive_reps_a_variant_that_passes_counts_the_runs_it_made(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The Eval runs each fixture once and up to 8 times while its outcome is open (as
    `evalward init` writes it): the head's refunds fail three times before their tests
    settle, the base's pass once, 9 calls in all, and the base allows 0.8 of them, 7. The
    variants run refund-a alone, each hunk applied alone to the base first (one that fails
    costs three times one that passes): the base with line 1 passes at its first run, 1
    call, and counts for that, not for the head's 3; the base with line 5 fails, 3 calls;
    so the third variant, the head without line 5, fits, and the line is proven in 5 calls
    (counted at the head's 3 each, the third would not fit)."""
    script(model)
    adaptive = SUITE.replace(
        "  fixtures: [refund-a, refund-b, greet]\n",
        "  fixtures: [refund-a, refund-b, greet]\n  execution: { reps: { min: 1, max: 8 } }\n",
    )
    config = "attribution: { mode: on-block, budget: 0.8 }\n"
    repo = _clerk(tmp_path / "repo", config=config, suite=adaptive)

    code, results, said = run_for_results(
        repo.path, "--base", "main", cache=True, **provider_env(model)
    )

    assert code == 1, said
    found = results["attribution"]
    assert (found["budgetModelCalls"], results["run"]["spent"]["model_calls"]) == (7, 9)
    (regression,) = found["regressions"]
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    assert regression["triedOn"] == ["refund-a"]
    runs = [(t["way"], t["regressed"], t["scores"][0]["runs"]) for t in regression["trials"]]
    assert runs == [("applied", False, 1), ("applied", True, 3), ("reverted", False, 1)]
    assert found["spentModelCalls"] == 5
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/clerk.md", 5)


def test_a_cause_proven_on_one_fixture_is_proven_on_the_others_where_the_budget_has_room(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """Three hunks, two fixtures that regress, a call a run, and a budget of 5 of the run's
    6 calls: four variants of both fixtures would not fit, so the search runs refund-a alone
    (3 variants, 3 calls) and proves line 5. Two calls are left, as many as the head without
    line 5 and the base with only it take on refund-b: both run, line 5 is proven the cause
    of both, and the comment says so without naming one fixture alone."""
    script(model)
    repo = _clerk(tmp_path / "repo", config="attribution: { mode: on-block, budget: 0.9 }\n")

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    found = results["attribution"]
    assert (found["budgetModelCalls"], found["spentModelCalls"]) == (5, 5)
    (regression,) = found["regressions"]
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    assert regression["triedOn"] == ["refund-a", "refund-b"]
    ran = [(t["way"], [s["fixture"] for s in t["scores"]]) for t in regression["trials"]]
    assert ran == [
        ("reverted", ["refund-a"]),
        ("reverted", ["refund-a"]),
        ("applied", ["refund-a"]),
        ("reverted", ["refund-b"]),
        ("applied", ["refund-b"]),
    ]
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/clerk.md", 5)
    said = "taken back, refund-a 1/1, refund-b 1/1, as on the base; the base with only it: "
    assert said + "refund-a 0/1, refund-b 0/1." in stdout, stdout
    assert "alone" not in stdout


def test_a_second_eval_that_regresses_tries_the_first_one_s_cause_first(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """Two Evals of the clerk, refund-a in one and refund-b in the other, both broken by the
    three-hunk change's line 5. The first is searched a hunk at a time (line 1 taken back,
    then line 5, then the base with line 5: three variants); the second tries line 5 first
    and is proven in two."""
    script(model)
    two = SUITE.replace(
        "metadata: { name: clerk-eval }\nspec:\n  targetAgent: clerk\n"
        "  fixtures: [refund-a, refund-b, greet]\n",
        "metadata: { name: clerk-a }\nspec:\n  targetAgent: clerk\n"
        "  fixtures: [refund-a, greet]\n---\napiVersion: evalward.dev/v1\nkind: Eval\n"
        "metadata: { name: clerk-b }\nspec:\n  targetAgent: clerk\n  fixtures: [refund-b]\n",
    )
    assert "clerk-b" in two
    repo = _clerk(tmp_path / "repo", suite=two)

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    first, second = results["attribution"]["regressions"]
    assert (first["eval"], second["eval"]) == ("clerk-a", "clerk-b")
    for regression in (first, second):
        assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
        (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
        assert (culprit["path"], culprit["first"]) == ("prompts/clerk.md", 5)
    assert [t["way"] for t in first["trials"]] == ["reverted", "reverted", "applied"]
    assert [t["way"] for t in second["trials"]] == ["reverted", "applied"]


INIT_PROMPT = """\
You are the support agent of an online shop.
Look an order up before you say where it is.

Never invent a delivery date.
Ask for the order number when you do not have it.

Be brief.
"""


def _init_project_regressing(
    tmp_path: Path, promised: str, config: str = ""
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`evalward init`'s project (`config` added to its evalward.yaml), its mock script
    answering the order's status with `promised` where the prompt promises a delivery on
    Tuesday, and a pull request that rewords the prompt in three places, line 5 making that
    promise; `evalward run --base main` on it, blocked: what it printed and its
    results.json."""
    repo = GitRepo(tmp_path / "repo")
    assert evalward("init", cwd=repo.path).returncode == 0
    settings = repo.path / "evalward.yaml"
    settings.write_text(settings.read_text() + config)
    mock = repo.path / "evals" / "mock-replies.yaml"
    reply = f"""\
  - match: {{ agent: assistant, fixture: assistant-order-status, system: "promise Tuesday" }}
    turns:
      - toolCalls: [{{ name: lookup_order, arguments: {{ order_id: "12345" }} }}]
      - content: {promised}
"""
    at = mock.read_text().index("  - match: { agent: assistant, fixture: assistant-order-status")
    mock.write_text(mock.read_text()[:at] + reply + mock.read_text()[at:])
    repo.commit("the assistant", {"prompts/assistant.md": INIT_PROMPT})
    repo.git("branch", "-M", "main")
    repo.branch("friendlier")
    head = INIT_PROMPT.replace("You are the", "You are the friendly")
    head = head.replace("date.\n", "date.\nAlways promise Tuesday for a delivery.\n")
    repo.commit("friendlier", {"prompts/assistant.md": head.replace("brief.", "brief and kind.")})

    done = evalward(
        "run", "--base", "main", "--mock-script", "evals/mock-replies.yaml",
        "--output-dir", str(tmp_path / "out"), cwd=repo.path,
    )  # fmt: skip

    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    results: dict[str, Any] = json.loads((tmp_path / "out" / "results.json").read_text())
    return done, results


def test_the_eval_init_writes_traces_a_change_of_three_hunks_with_every_default(
    tmp_path: Path,
) -> None:
    """`evalward init`'s project as it writes it (adaptive reps, a rubric judge and a
    calibrated pairwise judge), its mock script answering the order's status with a delivery
    date where the prompt promises one (`system`), and a pull request that rewords the prompt
    in three places, one of which makes that promise. Every default: attribution, on block,
    may spend half the run's 51 calls. The variants ask the pairwise judge nothing (it decides
    the Eval, not the fixture whose verdict a variant reads), so three variants fit, and the
    promise is proven the cause."""
    done, results = _init_project_regressing(tmp_path, "Order 12345 will arrive on Tuesday.")

    found = results["attribution"]
    (regression,) = found["regressions"]
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/assistant.md", 5)
    assert "`prompts/assistant.md:5` — taken back" in done.stdout
    assert found["budgetModelCalls"] == results["run"]["spent"]["model_calls"] // 2
    assert results["run"]["spent"]["calls_by_purpose"]["pairwise"] > 0  # the gate's judge
    spent = results["run"]["attribution_spent"]
    assert spent["model_calls"] == found["spentModelCalls"] <= found["budgetModelCalls"]
    assert spent["calls_by_purpose"].get("pairwise", 0) == 0, spent


@pytest.mark.parametrize("budget", ["default", "1"])
def test_a_reply_only_init_s_pairwise_judge_finds_worse_is_traced_to_its_line(
    tmp_path: Path, budget: str
) -> None:
    """The same project and pull request, but the promise is said beside the status ("...;
    it has shipped."): every check of the order-status fixture passes (it says shipped, its
    rubric judge scores it), and init's pairwise judge prefers the base's reply in every
    pair. The gate blocks on the judge alone; attribution judges each variant's runs in
    pairs with the base's (read from the result cache), each hunk applied alone to the base
    first: line 1 costs 3 calls (a run, its rubric judge, a tie asked of no one), line 5 32
    (eight runs lose their pairs before the test settles worse; a run whose pairs lean worse
    asks no rubric judge), the head without line 5 3 more. The default budget, half the
    run's 86 calls, holds them (it held 3 calls too few while every run asked its rubric
    judge), and so does `attribution.budget: 1`: line 5 is proven."""
    config = f"attribution: {{ budget: {budget} }}\n" if budget != "default" else ""
    done, results = _init_project_regressing(
        tmp_path, '"Order 12345 will arrive on Tuesday; it has shipped."', config
    )

    head = [f for f in results["fixtures"] if f["side"] == "head"]
    assert len(head) > 2 and all(f["status"] == "pass" for f in head)  # the judge alone saw it
    found = results["attribution"]
    (regression,) = found["regressions"]
    assert (regression["fixtures"], regression["inPairs"]) == (["assistant-order-status"], True)
    assert "(`assistant-order-status`, worse by the pairwise judge)" in done.stdout
    spent = results["run"]["attribution_spent"]
    assert spent["model_calls"] == found["spentModelCalls"] <= found["budgetModelCalls"]
    assert spent["calls_by_purpose"]["pairwise"] > 0  # its variants are judged in pairs
    ways = [(t["way"], t["hunks"], t["regressed"]) for t in regression["trials"]]
    assert ways == [("applied", [0], False), ("applied", [1], True), ("reverted", [1], False)]
    if budget == "default":
        assert found["budgetModelCalls"] == results["run"]["spent"]["model_calls"] // 2
    # the rubric judge is asked of the two variants no worse in pairs, once each
    assert spent["calls_by_purpose"]["judge"] == 2, spent
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/assistant.md", 5)
    assert "`prompts/assistant.md:5` — taken back" in done.stdout


def test_a_prompt_made_executable_beside_its_change_is_still_traced_to_its_line(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The three-hunk change with `chmod +x prompts/clerk.md` beside it: the file was taken
    back whole, mode and all, and named on no line, so a review comment had nowhere to go.
    Its mode is a hunk of its own, and the rule's line is still the cause."""
    script(model)
    repo = _clerk(tmp_path / "repo")
    (repo.path / "prompts" / "clerk.md").chmod(0o755)
    repo.commit("the prompt, executable")

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    kinds = [(h["kind"], h["first"]) for h in regression["hunks"]]
    assert kinds[0] == ("mode", 0) and len(kinds) == 4, kinds
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["kind"], culprit["first"]) == ("prompts/clerk.md", "text", 5)
    assert "prompts/clerk.md:5" in stdout


def test_a_prompt_written_in_the_yaml_is_traced_to_its_line_there(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The same three-hunk change with the prompt in the agent's YAML (`system: |`): the
    rule that breaks the refunds is named on its own line of the YAML, not as the whole
    field."""
    script(model)
    repo = GitRepo(tmp_path / "repo")
    repo.commit(
        "the clerk",
        {
            "agents/clerk.yaml": _inline(BASE_PROMPT),
            "evals/suite.yaml": SUITE,
            ".gitignore": ".evalward/\nout/\n",
            "evalward.yaml": ROOMY,
        },
    )
    repo.git("branch", "-M", "main")
    repo.branch("stricter")
    head = _inline(HEAD_PROMPT)
    repo.commit("a stricter clerk", {"agents/clerk.yaml": head})

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    # every hunk of the change, its three lines, though its trials took back only the first
    # line's, then the rule's, which proved it
    assert [(h["kind"], h["field"]) for h in regression["hunks"]] == [("text", "spec.system")] * 3
    assert len({i for t in regression["trials"] for i in t["hunks"]}) == 2
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    line = head.splitlines().index("    NEVER REFUND anything.") + 1
    assert (culprit["path"], culprit["first"], culprit["last"]) == ("agents/clerk.yaml", line, line)
    assert f"agents/clerk.yaml:{line}" in stdout and "spec.system" in stdout


def _checkout(repo: GitRepo) -> dict[str, object]:
    """What a user's checkout is: its status, HEAD, index, refs and the prompt's text."""
    return {
        "status": repo.git("status", "--porcelain=v2"),
        "head": repo.git("rev-parse", "HEAD"),
        "index": (repo.path / ".git" / "index").read_bytes(),
        "refs": repo.git("for-each-ref"),
        "prompt": (repo.path / "prompts" / "clerk.md").read_text(),
    }


def test_a_change_not_yet_committed_is_traced_and_the_checkout_left_as_it_was(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The change as a user has it while working: half staged, half not. The variants are
    made from a commit of the working tree's files, written through a copy of the index:
    the index, the working tree, HEAD and the stash stay as they were."""
    script(model)
    repo = _clerk(tmp_path / "repo")
    repo.git("reset", "-q", "--soft", "main")  # the change staged, not committed
    prompt = repo.path / "prompts" / "clerk.md"
    prompt.write_text(prompt.read_text().replace("End politely.", "End very politely."))
    before = _checkout(repo)

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"], culprit["last"]) == ("prompts/clerk.md", 5, 5)
    assert "prompts/clerk.md:5" in stdout
    assert _checkout(repo) == before


def test_a_file_git_does_not_track_says_why_it_is_not_traced(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    script(model)
    repo = _clerk(tmp_path / "repo")
    (repo.path / "notes.txt").write_text("an untracked file the runs could have read\n")

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "not attributable"
    assert "the working tree has files git does not track (notes.txt)" in regression["reason"]
    # said in the comment's "Where it regressed"
    assert "add them (or move them out of the repository)" in stdout
    assert results["attribution"]["spentModelCalls"] == 0
    assert len(model.requests) == results["run"]["spent"]["model_calls"]


def test_an_earlier_run_s_output_folder_in_the_checkout_does_not_stop_attribution(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """`--output-dir out` in a checkout that does not ignore it: the second run finds the
    first's files there, untracked. They are the command's own (no agent is given them), as
    is a mock script, and attribution traces the regression as it did the first time."""
    script(model)
    repo = _clerk(tmp_path / "repo", ignored=".evalward/\n")

    for _ in range(2):
        code, stdout, stderr, results = _run(repo, model)
        assert code == 1, stdout + stderr
        (regression,) = results["attribution"]["regressions"]
        assert regression["result"] == "attributed", regression
    assert "out/" in repo.git("status", "--porcelain")  # untracked, as the user left it


def test_untracked_names_that_break_lines_or_are_not_utf8_are_said_inert(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """An untracked file's name is anyone's bytes: a line break that would start a line of
    the comment of its own (a heading, a mention), markup, a byte that is not UTF-8. The
    reason names them as a message names a file (`printable`: quoted as git quotes one),
    on its one line of the comment, inert there, and results.json stays UTF-8."""
    script(model)
    repo = _clerk(tmp_path / "repo")
    hostile = [b"a\n## Approved @octocat.txt", b"<img src=x onerror=alert(1)>.md", b"caf\xff.txt"]
    for name in hostile:
        (repo.path / os.fsdecode(name)).write_bytes(b"read by the run\n")

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "not attributable"
    reason = regression["reason"]
    for said in (
        '"a\\n## Approved @octocat.txt"',  # quoted as git quotes it: one token, one line
        "<img src=x onerror=alert(1)>.md",
        '"caf\\xff.txt"',
    ):
        assert said in reason, reason
    # the comment: on the reason's one line, no heading, no mention, no markup
    (line,) = [x for x in stdout.splitlines() if "not attributable" in x]
    assert '"a\\\\n## Approved @\u200boctocat.txt"' in line, line  # \\ escaped for markdown
    assert "&lt;img src=x onerror=alert(1)&gt;.md" in line, line
    assert not any(x.startswith("## Approved") for x in stdout.splitlines())
    assert "<img" not in stdout
    raw = (repo.path / "out" / "results.json").read_bytes()
    raw.decode("utf-8")  # strictly UTF-8: no lone surrogate written
    assert b"\\udc" not in raw
    assert results["attribution"]["spentModelCalls"] == 0


def test_the_base_turning_it_off_runs_none_on_the_command_line(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    script(model)
    repo = _clerk(tmp_path / "repo", config="attribution: { mode: off }\n")

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    assert results.get("attribution") is None
    assert "Where it regressed" not in stdout
    assert "attribution:" not in stderr
    assert len(model.requests) == results["run"]["spent"]["model_calls"]


def test_ctrl_c_while_attribution_runs_keeps_the_decision_and_exits_130(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    repo = _clerk(tmp_path / "repo")
    started: list[subprocess.Popen[str]] = []

    def first_variant(body: dict[str, Any]) -> bool:
        sent = json.dumps(body)
        if "You are a refund clerk." in sent and "NEVER REFUND" in sent:
            started[0].send_signal(signal.SIGINT)
        return False  # never answers: the clerk's script does

    model.rules.append(Rule(first_variant, [text("unused")]))
    script(model)
    started.append(
        subprocess.Popen(
            [sys.executable, "-m", "evalward", "run", ".", "--base", "main", "--no-cache",
             "--no-history", "--output-dir", "out"],
            cwd=repo.path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1",
                 "PYTHONPATH": SOURCE, **provider_env(model)},
        )
    )  # fmt: skip
    stdout, stderr = started[0].communicate(timeout=subprocess_limit())

    assert started[0].returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
    assert "evalward: attribution stopped: the job was cancelled" in stderr
    results = json.loads((repo.path / "out" / "results.json").read_text())
    assert results["result"] == "fail"  # decided before attribution began
    assert results.get("attribution") is None
    assert "Blocked" in stdout and "Where it regressed" not in stdout


def test_attribution_that_cannot_run_is_a_warning_and_the_decision_stands(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """git refuses to write a variant's commit (a `git` first on PATH fails `commit-tree`):
    attribution is said not to have finished, and why, as a warning and where its findings
    would be (results.json, the comment printed, report.html); the decision and its exit
    code are the run's."""
    script(model)
    repo = _clerk(tmp_path / "repo")
    path = git_on_commit_tree(tmp_path / "bin", '    echo "fatal: the disk is full" >&2; exit 128')

    done = evalward(
        "run", ".", "--base", "main", "--no-cache", "--no-history", "--output-dir", "out",
        cwd=repo.path, PATH=path, **provider_env(model),
    )  # fmt: skip

    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    results = json.loads((repo.path / "out" / "results.json").read_text())
    assert results["result"] == "fail"
    (warning,) = [line for line in done.stderr.splitlines() if "did not finish" in line]
    assert warning.startswith("evalward: warning: attribution did not finish: ")
    assert "the disk is full" in warning, warning
    attribution = results["attribution"]
    assert attribution["mode"] == "on-block" and attribution["regressions"] == []
    assert "fatal: the disk is full" in attribution["unfinished"], attribution
    section = done.stdout.split("Where it regressed", 1)[-1]
    assert "attribution did not finish: cannot make a commit" in section, done.stdout
    assert "the disk is full; the decision stands without it" in section, done.stdout
    page = (repo.path / "out" / "report.html").read_text()
    assert "<li>attribution did not finish: cannot make a commit" in page


PROGRAM = """\
import json, os, sys, urllib.request
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rules import RULES
json.loads(sys.stdin.readline())
messages = [{"role": "system", "content": RULES}, {"role": "user", "content": "refund order 1"}]
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
    data=json.dumps({"model": "gpt-4.1-mini", "messages": messages}).encode(),
    headers={"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "content-type": "application/json"},
)
reply = json.load(urllib.request.urlopen(request))
print(json.dumps({"type": "final", "content": reply["choices"][0]["message"]["content"]}))
"""
RULES = 'RULES = """\\\nYou are a refund clerk.\nRefunds are approved for orders.\n"""\n'
"""The module the clerk's program imports: a file it does not name, which its `watch` does."""
PROGRAM_SUITE = one_agent_suite(
    "clerk",
    "refund-a",
    command=f"{{ run: [{sys.executable}, agent/main.py] }}",
    prompt="refund order 1",
    assertion="{ type: contains, value: approved }",
)
"""The clerk as that program, watching agent/*.py, and its one refund fixture."""


@pytest.mark.parametrize("helpers", [0, 30])
def test_a_change_in_a_module_the_program_imports_is_traced_to_its_line(
    tmp_path: Path, model: ScriptedModelServer, helpers: int
) -> None:
    """The clerk is a program of its own, `agent/main.py`, which imports its rules from
    `agent/rules.py`: a file its definition does not name but its `watch` does (as a
    framework agent's graph, nodes and prompts are). The pull request adds NEVER REFUND to
    the rules: the hunk proven to cause the regression is that line of `agent/rules.py`.
    Python writes `agent/__pycache__/` in the working tree as the runs import the rules,
    which git does not track: a file the runs left, not one they read, so the variants
    (commits) lack nothing the head's runs had. With thirty other modules changed beside
    it, the rules are the last of 32 hunks, more than the search's 24 variants could take
    back one at a time: it bisects the change, and finds them all the same."""
    script(model)
    repo = GitRepo(tmp_path / "repo")
    repo.commit(
        "the clerk, a program",
        {
            "agents.yaml": PROGRAM_SUITE,
            "agent/main.py": PROGRAM,
            "agent/rules.py": RULES,
            ".gitignore": ".evalward/\nout/\n",  # not __pycache__/: the runs write it
            "evalward.yaml": "attribution: { mode: on-block, budget: 10 }\n",
            **{f"agent/helper_{n:02}.py": "VERSION = 1\n" for n in range(helpers)},
        },
    )
    repo.git("branch", "-M", "main")
    repo.branch("stricter")
    never = RULES.replace("orders.\n", "orders.\nNEVER REFUND anything.\n")
    bumped = {f"agent/helper_{n:02}.py": "VERSION = 2\n" for n in range(helpers)}
    repo.commit("a stricter clerk", {"agent/rules.py": never, **bumped})

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["kind"], culprit["first"]) == ("agent/rules.py", "text", 4)
    assert len(regression["hunks"]) == helpers + 1  # every hunk in some variant
    assert "agent/rules.py:4" in stdout
    assert (repo.path / "agent" / "__pycache__").is_dir()


READS_EVERY_RULE = PROGRAM.replace(
    "from rules import RULES\n",
    "folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'rules')\n"
    "RULES = ''.join(open(os.path.join(folder, n), encoding='latin-1').read()\n"
    "                for n in sorted(os.listdir(folder)))\n",
)
"""The program clerk reading its rules from every file of `agent/rules/`, whatever their
names."""


def test_a_hunk_in_a_file_whose_name_is_not_utf8_is_named_in_results_json_as_utf8(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The program clerk reads every file of `agent/rules/`, which its `watch` covers; the
    pull request rewords `a.txt` and adds NEVER REFUND to `r\\xe9gles.txt`, a name that is
    not UTF-8 (git names files by their bytes). The rule's line is proven the cause, and
    results.json names its file as the comment does, quoted as git quotes a name: it wrote
    the name's byte as a lone surrogate (`\\udce9`), which is no UTF-8 and which a strict
    reader of JSON refuses."""
    script(model)
    repo = GitRepo(tmp_path / "repo")
    suite = PROGRAM_SUITE.replace("watch: [agent/*.py]", "watch: ['agent/**']")
    rules = os.fsencode(repo.path / "agent" / "rules")
    os.makedirs(rules)
    (repo.path / "agent" / "rules" / "a.txt").write_text("You are a refund clerk.\n")
    with open(rules + b"/r\xe9gles.txt", "wb") as latin:
        latin.write(b"Refunds are approved for orders.\n")
    repo.commit(
        "the clerk, its rules in files",
        {
            "agents.yaml": suite,
            "agent/main.py": READS_EVERY_RULE,
            ".gitignore": ".evalward/\nout/\n__pycache__/\n",
            "evalward.yaml": ROOMY,
        },
    )
    repo.git("branch", "-M", "main")
    repo.branch("stricter")
    (repo.path / "agent" / "rules" / "a.txt").write_text("You are a kind refund clerk.\n")
    with open(rules + b"/r\xe9gles.txt", "ab") as latin:
        latin.write(NEVER.encode())
    repo.commit("a stricter clerk")

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ('"agent/rules/r\\xe9gles.txt"', 2)
    assert '`"agent/rules/r\\xe9gles.txt":2`' in stdout, stdout
    raw = (repo.path / "out" / "results.json").read_bytes()
    raw.decode("utf-8")
    assert b"\\udc" not in raw


def test_a_helper_made_not_executable_is_said_to_be_its_mode_not_the_file(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The program clerk takes its rules from `agent/rules.sh`, a helper it runs; the pull
    request rewords the clerk's rules file and makes the helper not executable (`chmod -x`),
    so the clerk runs without its rules and refunds nothing. The helper's mode is proven the
    cause: the comment and report.html named the helper alone, on no line, which reads as
    the file taken back whole, though its text did not change; they say it is its mode."""
    script(model)
    helper = READS_EVERY_RULE.replace(
        "RULES = ''.join(",
        "import subprocess\n"
        "RULES = subprocess.run([os.path.join(folder, '..', 'rules.sh')],"
        " capture_output=True, text=True).stdout\n"
        "RULES += ''.join(",
    )
    repo = GitRepo(tmp_path / "repo")
    repo.write({"agent/rules.sh": "#!/bin/sh\necho 'Refunds are approved for orders.'\n"})
    (repo.path / "agent" / "rules.sh").chmod(0o755)
    repo.commit(
        "the clerk, its rules from a helper",
        {
            "agents.yaml": PROGRAM_SUITE.replace("watch: [agent/*.py]", "watch: ['agent/**']"),
            "agent/main.py": helper,
            "agent/rules/clerk.txt": "You are a refund clerk.\n",
            ".gitignore": ".evalward/\nout/\n__pycache__/\n",
            "evalward.yaml": ROOMY,
        },
    )
    repo.git("branch", "-M", "main")
    repo.branch("reworded")
    (repo.path / "agent" / "rules.sh").chmod(0o644)
    repo.commit("reworded", {"agent/rules/clerk.txt": "You are a kind refund clerk.\n"})

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["kind"], culprit["first"]) == ("agent/rules.sh", "mode", 0)
    assert "`agent/rules.sh` (its mode: whether it may be run) — taken back" in stdout, stdout
    page = (repo.path / "out" / "report.html").read_text()
    assert "<code>agent/rules.sh</code> (its mode: whether it may be run) — taken back" in page


def test_a_file_git_ignores_beside_the_program_says_why_it_is_not_traced(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The program clerk also reads `agent/local.txt` where there is one, a setting git
    ignores, which says NEVER REFUND on this laptop; the branch only reworded its rules. The
    run regresses by the setting, which no variant (a commit) holds: taken back, the rewording
    "removed" the regression, and the gate's own runs "brought it back", so the line of the
    rules was named as the cause. It is not attributable now, naming the setting; neither
    Python's `__pycache__` beside the program nor an ignored folder outside what it watches
    (a local `venv/`) is named."""
    script(model)
    repo = GitRepo(tmp_path / "repo")
    reads_local = PROGRAM.replace(
        "from rules import RULES\n",
        "from rules import RULES\n"
        "local = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'local.txt')\n"
        "RULES += open(local).read() if os.path.exists(local) else ''\n",
    )
    repo.commit(
        "the clerk, a program",
        {
            "agents.yaml": PROGRAM_SUITE,
            "agent/main.py": reads_local,
            "agent/rules.py": RULES,
            ".gitignore": ".evalward/\nout/\n__pycache__/\nlocal.txt\nvenv/\n",
        },
    )
    repo.git("branch", "-M", "main")
    repo.branch("reworded")
    repo.commit("reworded", {"agent/rules.py": RULES.replace("for orders", "for any order")})
    (repo.path / "agent" / "local.txt").write_text(NEVER)
    (repo.path / "agent" / "__pycache__").mkdir()
    (repo.path / "agent" / "__pycache__" / "rules.cpython-311.pyc").write_bytes(b"")
    (repo.path / "venv" / "bin").mkdir(parents=True)
    (repo.path / "venv" / "bin" / "python").write_text("")

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "not attributable", regression
    reason = regression["reason"]
    assert "files git ignores among agent clerk's (agent/local.txt)" in reason, reason
    assert "trace the change in a clean clone" in reason
    assert "agent/local.txt" in stdout and "agent/rules.py:" not in stdout
    assert results["attribution"]["spentModelCalls"] == 0


def test_a_change_at_the_target_of_a_link_the_agent_s_watch_covers_is_traced_to_its_line(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The clerk's program imports its rules from `agent/rules.py`, which its `watch` covers:
    a symbolic link to `shared/rules.py`, outside the watched folder, which other agents may
    share. The pull request adds NEVER REFUND there, and changes nothing under `agent/`: the
    hunk proven to cause the regression is that line of `shared/rules.py`, the file the
    change touched."""
    script(model)
    repo = GitRepo(tmp_path / "repo")
    (repo.path / "agent").mkdir(parents=True)
    (repo.path / "agent" / "rules.py").symlink_to("../shared/rules.py")
    repo.commit(
        "the clerk, its rules shared",
        {
            "agents.yaml": PROGRAM_SUITE,
            "agent/main.py": PROGRAM,
            "shared/rules.py": RULES,
            ".gitignore": ".evalward/\nout/\n",
            "evalward.yaml": ROOMY,
        },
    )
    repo.git("branch", "-M", "main")
    repo.branch("stricter")
    never = RULES.replace("orders.\n", "orders.\nNEVER REFUND anything.\n")
    repo.commit("stricter shared rules", {"shared/rules.py": never})

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["kind"], culprit["first"]) == ("shared/rules.py", "text", 4)
    assert "shared/rules.py:4" in stdout


def test_an_eval_changed_beside_the_agent_is_no_hunk_of_an_agent_that_watches_everything(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The clerk watches every file (`watch: ['**']`), and the pull request edits its Evals'
    file beside its prompt: the Eval's change is no part of the agent (the base's Evals gate,
    and an Eval's change is not where an agent regressed), so it is no hunk and no variant
    takes it back; a module the clerk reads is one. The prompt's line is found as ever."""
    script(model)
    repo = GitRepo(tmp_path / "repo")
    repo.commit(
        "the clerk, watching everything",
        {
            "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-mini") + "  watch: ['**']\n",
            "prompts/clerk.md": BASE_PROMPT,
            "lib/rules.txt": "refunds: yes\n",
            "evals/suite.yaml": SUITE,
            ".gitignore": ".evalward/\nout/\n",
            "evalward.yaml": ROOMY,
        },
    )
    repo.git("branch", "-M", "main")
    repo.branch("stricter")
    edited_suite = "# the clerk's Evals, reviewed\n" + SUITE
    repo.commit(
        "a stricter clerk, its Evals reviewed",
        {
            "prompts/clerk.md": HEAD_PROMPT,
            "lib/rules.txt": "refunds: rarely\n",
            "evals/suite.yaml": edited_suite,
        },
    )

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert {hunk["path"] for hunk in regression["hunks"]} == {"prompts/clerk.md", "lib/rules.txt"}
    assert regression["result"] == "attributed", regression
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/clerk.md", 5)


POLITE = "{ type: judge, rubric: Was the clerk polite? }"
JUDGED = (
    SUITE.replace("value: approved }]", f"value: approved }}, {POLITE}]")
    .replace("value: hello }]", f"value: hello }}, {POLITE}]")
    .replace("greet]\n", "greet]\n  judge: { model: openai/judge-model }\n")
)
"""The clerk's suite with a judge on every fixture: as many calls of the judge as of the agent."""


def test_a_rerun_read_from_the_result_cache_gets_the_budget_the_first_run_had(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """Attribution's budget is a share of the run's own calls, as if none had been reused:
    a rerun whose results come from the result cache counts what they made when they ran,
    their judges' calls too (each result keeps its own), so the same change gets the same
    budget, however warm the cache, and the same answer."""
    verdict = json.dumps({"score": 1.0, "confidence": 0.9, "summary": "polite", "violations": []})
    model.script(lambda body: body.get("model") == "judge-model", text(verdict))
    script(model)
    repo = _clerk(tmp_path / "repo", "attribution: { mode: on-block, budget: 2 }\n")
    repo.commit("a judge on every fixture", {"evals/suite.yaml": JUDGED})
    repo.git("checkout", "-q", "main")
    repo.commit("a judge on every fixture", {"evals/suite.yaml": JUDGED})
    repo.git("checkout", "-q", "stricter")

    def run() -> tuple[dict[str, Any], int]:
        before = len(model.requests)
        done = evalward(
            "run",
            ".",
            "--base",
            "main",
            "--no-history",
            "--output-dir",
            "out",
            cwd=repo.path,
            **provider_env(model),
        )
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
        results = json.loads((repo.path / "out" / "results.json").read_text())
        return results, len(model.requests) - before

    cold, cold_calls = run()
    warm, warm_calls = run()

    assert cold_calls > 0 and warm_calls == 0  # every run, and every variant's, reused
    assert all(f["cached"] for f in warm["fixtures"])
    assert warm["attribution"]["budgetModelCalls"] == cold["attribution"]["budgetModelCalls"]
    made = sum(f["trace"]["model_calls"] + f.get("judge_calls", 0) for f in cold["fixtures"])
    assert cold["attribution"]["budgetModelCalls"] == 2 * made
    head = [f for f in cold["fixtures"] if f["side"] == "head"]
    assert [f["judge_calls"] for f in head] == [1, 1, 1], head
    (found,) = warm["attribution"]["regressions"]
    assert found["result"] == "attributed", found
    assert found == cold["attribution"]["regressions"][0]


def test_a_variant_whose_runs_decide_nothing_proves_nothing(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """The clerk refuses refunds only where it is both careful (line 1) and told NEVER REFUND
    (line 5), and the provider is down for every request with line 5 alone (HTTP 503, after
    its retries). The head with line 5 taken back passes, and the base with line 5 alone
    reaches no model: its runs decide nothing, so line 5 is not proven the cause on its own
    (read as a regression, it was); the two lines, taken back and applied together, are."""

    def sent(body: dict[str, object]) -> str:
        return json.dumps(body)

    model.script(lambda b: "NEVER REFUND" in sent(b) and "careful" in sent(b), text("hello"))
    down = error(503, headers={"Retry-After": "0"})
    model.script(lambda b: "NEVER REFUND" in sent(b), down)
    model.script(lambda body: True, text("approved, hello"))
    repo = _clerk(tmp_path / "repo")

    code, stdout, stderr, results = _run(repo, model)

    assert code == 1, stdout + stderr
    (regression,) = results["attribution"]["regressions"]
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    culprit = [regression["hunks"][i] for i in regression["culprit"]]
    assert [(h["path"], h["first"]) for h in culprit] == [
        ("prompts/clerk.md", 1),
        ("prompts/clerk.md", 5),
    ]
    undecided = [t for t in regression["trials"] if t["notBuilt"]]
    assert undecided and all("decided nothing" in t["notBuilt"] for t in undecided), undecided
    assert "prompts/clerk.md:1" in stdout and "prompts/clerk.md:5" in stdout
