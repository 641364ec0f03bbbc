"""A pull request's gate says where its agent regressed: the action, run as a workflow runs
it, against the fake GitHub and the scripted model server, which answers by what the agent is
really sent. The prompt change is three hunks; the one that says NEVER REFUND makes two
fixtures regress. Attribution runs after the decision, names that hunk on its lines (the
review) and as `path:line` in the comment, writes it in results.json, and changes nothing of
the decision. The base branch's `evalward.yaml` decides whether it runs: a pull request's own
cannot switch it off, nor on where the base turns it off."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from evalward.action.attributed import UNRETIRED
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import Rule, ScriptedModelServer, error, mentions, text, tool_call
from support.actionrun import (
    ActionRun,
    gate_pull_request,
    prepare,
    pull_request_event,
    run_action,
    start_action,
)
from support.agentenv import needs_root
from support.byoagent import agent_python, one_agent_suite
from support.clerk import (
    AGENT,
    BASE_PROMPT,
    HEAD_PROMPT,
    NEVER,
    SUITE,
    git_on_commit_tree,
    script,
)
from support.gitrepo import GitRepo
from support.limits import subprocess_limit
from support.suite import PROVIDER_KEY, provider_env

pytestmark = pytest.mark.e2e

PATCH = "\n".join(
    [
        "@@ -1,8 +1,9 @@",
        "-You are a refund clerk.",
        "+You are a careful refund clerk.",
        " Be brief.",
        " ",
        " Refunds are approved for orders.",
        "+NEVER REFUND anything.",
        " Say approved when you approve one.",
        " ",
        "-Greet people with hello.",
        "+Greet people with hello there.",
        " End politely.",
    ]
)
"""GitHub's diff of the prompt: what a review comment may sit on."""
ROOMY = "attribution: { mode: on-block, budget: 4 }\n"
"""Room for the search on this small suite: four times the run's own calls."""


CLERK = AGENT.format(model="openai/gpt-4.1-mini")


def _clerk_base(repo: GitRepo, agent: str = CLERK, config: str = "") -> str:
    """The clerk committed on the base branch (`agent` its YAML, `config` its evalward.yaml
    when given), and the pull request's branch made from it: the base commit."""
    files = {
        "agents/clerk.yaml": agent,
        "prompts/clerk.md": BASE_PROMPT,
        "evals/suite.yaml": SUITE,
        ".gitignore": ".evalward/\n",
        **({"evalward.yaml": config} if config else {}),
    }
    base = repo.commit("the clerk", files)
    repo.branch("feature")
    return base


def _pull(
    repo: GitRepo, github: FakeGitHub, config: str = "", head_config: str = "", **pull: Any
) -> tuple[str, str]:
    base = _clerk_base(repo, config=config)
    changed = {"prompts/clerk.md": HEAD_PROMPT}
    if head_config:
        changed["evalward.yaml"] = head_config
    head = repo.commit("a stricter clerk", changed)
    diff = [{"filename": "prompts/clerk.md", "status": "modified", "patch": PATCH}]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=diff, **pull))
    return base, head


def _gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, cache: str = "off"
) -> ActionRun:
    base_sha, head_sha = (github.pulls[7].base_sha, github.pulls[7].head_sha)
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base_sha, head_sha),
        inputs={"cache": cache, "output-dir": ".evalward/out"},
        env=provider_env(model),
    )


def _one_culprit(repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer) -> dict[str, Any]:
    """The gate run on the pull request, blocked, and the one hunk its attribution proved."""
    run = _gate(repo, github, model)
    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    culprit_hunk: dict[str, Any] = culprit
    return culprit_hunk


def _results(repo: GitRepo) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo.path / ".evalward/out/results.json").read_text())
    return document


def test_the_hunk_that_broke_two_fixtures_is_named_on_its_line_and_the_gate_still_fails(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    script(model)
    _, head = _pull(repo, github, config=ROOMY)

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr  # the decision, as without attribution
    assert run.outputs["result"] == "fail"
    section = _results(repo)["attribution"]
    assert section["version"] == 1 and section["mode"] == "on-block"
    (regression,) = section["regressions"]
    assert regression["fixtures"] == ["refund-a", "refund-b"]
    assert regression["result"] == "attributed"
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"], culprit["last"]) == ("prompts/clerk.md", 5, 5)
    assert 0 < section["spentModelCalls"] <= section["budgetModelCalls"]
    (comment,) = github.comments_on(7)
    assert "Where it regressed" in comment["body"]
    assert f"/blob/{head}/prompts/clerk.md" + "#L5)" in comment["body"]
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("prompts/clerk.md", 5)
    assert review_comment["side"] == "RIGHT"
    assert "refund-a, refund-b" in review_comment["body"]
    # each fixture's evidence as the comment gives it: the assertion, the statistics
    evidence = [line for line in review_comment["body"].splitlines() if "> refund-" in line]
    assert len(evidence) == 2 and all("approved" in line for line in evidence), evidence
    # report.html says the same as the comment
    page = (repo.path / ".evalward/out/report.html").read_text()
    assert "Where it regressed" in page and "<code>prompts/clerk.md:5</code>" in page

    # a second push takes the hunk back: the gate passes, and the comment on it says it no
    # longer applies (no second review, no comment left standing)
    fixed = repo.commit("refunds again", {"prompts/clerk.md": HEAD_PROMPT.replace(NEVER, "")})
    github.pulls[7].head_sha = fixed
    again = _gate(repo, github, model)

    assert again.returncode == 0, again.stdout + again.stderr
    (retired,) = github.review_comments_on(7)
    assert retired["id"] == review_comment["id"]
    assert "No longer applies" in retired["body"] and fixed[:12] in retired["body"]
    assert len(github.reviews_on(7)) == 1


def test_a_review_comment_the_token_may_not_mark_is_said_in_the_log_when_its_hunk_is_gone(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    script(model)
    _pull(repo, github, config=ROOMY)
    assert _gate(repo, github, model).returncode == 1
    (review_comment,) = github.review_comments_on(7)

    fixed = repo.commit("refunds again", {"prompts/clerk.md": HEAD_PROMPT.replace(NEVER, "")})
    github.pulls[7].head_sha = fixed
    github.fail("PATCH", r"/pulls/comments/\d+$", 403, "Resource not accessible by integration")
    run = _gate(repo, github, model)

    assert run.returncode == 0, run.stdout + run.stderr
    (warning,) = [line for line in run.stdout.splitlines() if "earlier review comments" in line]
    assert warning.startswith("::warning::") and "HTTP 403" in warning
    assert "resolve them on the pull request, or the next run asks again" in warning
    assert github.review_comments_on(7) == [review_comment]

    # the comment no longer has findings, but says some are left to mark: the next run
    # (a rerun, a push) marks it once GitHub lets it
    github.failures.clear()
    rerun = _gate(repo, github, model)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "earlier review comments" not in rerun.stdout
    (retired,) = github.review_comments_on(7)
    assert "No longer applies" in retired["body"] and fixed[:12] in retired["body"]
    assert "not yet marked" not in github.comments_on(7)[0]["body"]


@pytest.mark.usefixtures("head_strays_read")
def test_attributions_cost_is_shown_apart_and_a_rerun_reuses_its_variant_runs(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """With the result cache on (the default), the figures line of the comment says what
    attribution spent after the gate's own calls, and results.json keeps the two apart. A
    rerun of the same head reads the gate's runs and every variant's from the cache: the same
    hunk is found for no model call, and no second review is posted."""
    script(model)
    _pull(repo, github, config=ROOMY)

    first = _gate(repo, github, model, cache="read-write")
    assert first.returncode == 1, first.stdout + first.stderr
    run = _results(repo)["run"]
    section = _results(repo)["attribution"]
    assert run["attribution_spent"]["model_calls"] == section["spentModelCalls"] > 0
    assert run["spent"]["model_calls"] > 0  # the gate's own, apart
    body = github.comments_on(7)[0]["body"]
    assert f"attribution: {section['spentModelCalls']} model calls" in body
    asked = len(model.requests)

    again = _gate(repo, github, model, cache="read-write")

    assert again.returncode == 1, again.stdout + again.stderr
    assert len(model.requests) == asked, "the rerun asked the model again"
    rerun = _results(repo)
    assert rerun["attribution"]["spentModelCalls"] == 0
    (regression,) = rerun["attribution"]["regressions"]
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/clerk.md", 5)
    assert len(github.reviews_on(7)) == 1 and len(github.review_comments_on(7)) == 1


def test_a_model_field_that_regresses_is_named_on_its_yaml_line_not_the_prompt_beside_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The pull request moves the clerk to a cheaper model and rewords its prompt: the model
    field is the cause, said on its line of the agent's YAML."""
    script(model)
    base = _clerk_base(repo, config=ROOMY)
    head = repo.commit(
        "a cheaper model, a briefer clerk",
        {
            "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-nano"),
            "prompts/clerk.md": BASE_PROMPT.replace("Be brief.", "Be very brief."),
        },
    )
    agent_patch = "\n".join(
        [
            "@@ -4,3 +4,3 @@",
            " spec:",
            "-  models: [openai/gpt-4.1-mini]",
            "+  models: [openai/gpt-4.1-nano]",
            "   systemFile: prompts/clerk.md",
        ]
    )
    prompt_patch = "\n".join(
        ["@@ -1,3 +1,3 @@", " You are a refund clerk.", "-Be brief.", "+Be very brief.", " "]
    )
    diff = [
        {"filename": "agents/clerk.yaml", "status": "modified", "patch": agent_patch},
        {"filename": "prompts/clerk.md", "status": "modified", "patch": prompt_patch},
    ]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=diff))

    culprit = _one_culprit(repo, github, model)
    assert (culprit["path"], culprit["first"]) == ("agents/clerk.yaml", 5)
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("agents/clerk.yaml", 5)
    assert "spec.models" in github.comments_on(7)[0]["body"]


ALIASED = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata:
  name: clerk
  annotations: {{ m: &m {model} }}
spec:
  systemFile: prompts/clerk.md
  models: [*m]
"""
"""The clerk whose model is named once, on line 5, and used through an alias on line 8."""


def test_a_change_made_through_an_alias_is_named_on_the_line_it_was_made_on(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The pull request edits only line 5, the anchor, to a cheaper model that `models` (line
    8, as it was) takes through the alias, and rewords the prompt. Compared as data, the change
    was `spec.models` on line 8, which nobody edited, and taking back line 5 left the head's
    model in place, so line 5 was cleared. The file is compared as text: the cause is line 5."""
    script(model)
    base = _clerk_base(repo, ALIASED.format(model="openai/gpt-4.1-mini"), config=ROOMY)
    head = repo.commit(
        "a cheaper model, a warmer clerk",
        {
            "agents/clerk.yaml": ALIASED.format(model="openai/gpt-4.1-nano"),
            "prompts/clerk.md": BASE_PROMPT.replace("Be brief.", "Be very brief."),
        },
    )
    github.add_pull(
        FakePull(number=7, head_sha=head, base_sha=base, files=repo.pull_files(base, head))
    )

    culprit = _one_culprit(repo, github, model)
    assert (culprit["path"], culprit["first"], culprit["last"]) == ("agents/clerk.yaml", 5, 5)
    assert "agents/clerk.yaml:8" not in github.comments_on(7)[0]["body"]


def test_a_cause_on_a_file_github_shows_no_diff_of_leaves_the_other_comment_standing(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The clerk refuses refunds only on the cheaper model with the briefer prompt: the pair
    is the cause. GitHub lists the prompt with no patch (as it does a diff too large to
    show), so a comment on it is refused, and with it the review of both: each is then
    posted alone, the model's stands, and the log names the refused one."""

    def cheap_and_brief(body: dict[str, Any]) -> bool:
        sent = json.dumps(body)
        return "gpt-4.1-nano" in sent and "Be very brief." in sent

    model.script(cheap_and_brief, text("hello"))
    model.script(lambda body: True, text("approved, hello"))
    base = _clerk_base(repo, config=ROOMY)
    head = repo.commit(
        "a cheaper model, a briefer clerk",
        {
            "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-nano"),
            "prompts/clerk.md": BASE_PROMPT.replace("Be brief.", "Be very brief."),
        },
    )
    listed = repo.pull_files(base, head)
    for entry in listed:
        if entry["filename"] == "prompts/clerk.md":
            del entry["patch"]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=listed))

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    culprit = sorted(
        (regression["hunks"][i]["path"], regression["hunks"][i]["first"])
        for i in regression["culprit"]
    )
    assert culprit == [("agents/clerk.yaml", 5), ("prompts/clerk.md", 2)]
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("agents/clerk.yaml", 5)
    (warning,) = [line for line in run.stdout.splitlines() if "changed lines" in line]
    assert warning.startswith("::warning::some findings are not on the changed lines: ")
    assert "1 of 2 findings refused (prompts/clerk.md line 2: " in warning
    assert "Path could not be resolved" in warning
    body = github.comments_on(7)[0]["body"]
    assert "agents/clerk.yaml:5" in body and "prompts/clerk.md:2" in body


def test_one_changed_line_of_a_long_tool_schema_gets_the_review_comment_on_that_line(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """A tool's `parameters` of fourteen lines, one of which (a property's description)
    breaks the clerk: the cause is the field, and the review comment sits on the line that
    changed, which GitHub's diff shows, not on the field's first line, which it does not (a
    comment there is refused: 422)."""
    script(model)
    properties = "".join(
        f"            p{n}: {{ type: string, description: field {n} }}\n" for n in range(10)
    )
    tool = (
        "  tools:\n    - name: lookup\n      description: Look an order up.\n"
        f"      parameters:\n        type: object\n        properties:\n{properties}"
        "        required: [p0]\n      mock: { output: found }\n"
    )
    agent = CLERK + tool
    base = _clerk_base(repo, agent, config=ROOMY)
    broken = agent.replace("description: field 8 }", "description: NEVER REFUND anything }")
    head = repo.commit("a note on a field", {"agents/clerk.yaml": broken})
    diff = repo.git("diff", base, head, "--", "agents/clerk.yaml")
    patch = diff[diff.index("@@") :]  # the pull's files API gives the diff from its first hunk
    files_changed = [{"filename": "agents/clerk.yaml", "status": "modified", "patch": patch}]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=files_changed))

    culprit = _one_culprit(repo, github, model)
    assert culprit["field"] == "spec.tools[lookup].parameters"
    line = (
        broken.splitlines().index(
            "            p8: { type: string, description: NEVER REFUND anything }"
        )
        + 1
    )
    assert culprit["first"] < line - 3  # the field starts above what the diff shows
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("agents/clerk.yaml", line)
    assert review_comment.get("start_line") is None
    assert "Where it regressed" in github.comments_on(7)[0]["body"]


def test_two_hunks_that_break_it_only_together_are_named_as_the_pair(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The clerk refuses refunds only when it is both "careful" (hunk 1) and greets with
    "hello there" (hunk 3): either taken back fixes it, neither alone on the base breaks it.
    The pair is the cause, said on both lines."""

    def careful_and_warm(body: dict[str, Any]) -> bool:
        sent = json.dumps(body)
        return "careful refund clerk" in sent and "hello there" in sent

    model.script(careful_and_warm, text("hello"))
    model.script(lambda body: True, text("approved, hello"))
    _pull(repo, github, config=ROOMY)

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    culprit = sorted(regression["hunks"][i]["first"] for i in regression["culprit"])
    assert culprit == [1, 8]
    on_lines = sorted(c["line"] for c in github.review_comments_on(7))
    assert on_lines == [1, 8]
    assert all(
        "with the other hunks named beside it" in c["body"] for c in github.review_comments_on(7)
    )
    body = github.comments_on(7)[0]["body"]
    assert "prompts/clerk.md:1" in body and "prompts/clerk.md:8" in body


def test_a_regression_none_of_the_hunks_causes_is_not_attributable_with_what_was_tried(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The model turns against refunds after the gate's own runs (a provider that changed
    mid-job): the head regressed, but every variant regresses too, the head with all its hunks
    taken back included. Nothing is named on a line; the comment and results.json say why,
    with every variant tried and what it scored."""
    asked = itertools.count()

    def after_the_gate(body: dict[str, Any]) -> bool:  # the gate's own six calls, then none
        return "messages" in body and (next(asked) >= 6 or "NEVER REFUND" in json.dumps(body))

    model.script(after_the_gate, text("hello"))
    model.script(lambda body: True, text("approved, hello"))
    _pull(repo, github, config=ROOMY)

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "not attributable"
    assert "it is not in these hunks" in regression["reason"]
    assert len(regression["trials"]) == 4  # each hunk out, then all of them
    assert all(t["regressed"] for t in regression["trials"])
    assert github.review_comments_on(7) == []
    assert "not attributable" in github.comments_on(7)[0]["body"]


def test_what_the_agent_says_reaches_the_review_inert(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """An attacking pull request: its agent answers with a mention, HTML and a workflow
    command where it refuses (and so breaks all three fixtures). The review on the hunk's
    line carries none of it raw: no mention, no tag, no line GitHub would take as a
    command, and the job's log none either (the sticky comment shows the output in a code
    block, as ever)."""
    hostile = "@octocat <img src=x onerror=alert(1)>\n::error::pwned"
    model.script("NEVER REFUND", text(hostile))
    model.script(lambda body: True, text("approved, hello"))
    _pull(repo, github, config=ROOMY)

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    bodies = [c["body"] for c in github.review_comments_on(7)]
    assert len(bodies) == 1 and "greet, refund-a, refund-b" in bodies[0], bodies
    for body in bodies:
        assert "@octocat" not in body and "<img" not in body
        assert not any(line.lstrip("> ").startswith("::") for line in body.splitlines())
    assert not any(line.startswith("::error::pwned") for line in run.stdout.splitlines())


def test_a_fork_gets_the_lines_in_the_comment_and_says_why_there_is_no_review(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    script(model)
    _pull(repo, github, config=ROOMY, head_repo="someone/fork")
    github.fail("POST", r"/pulls/7/reviews$", 403, "Resource not accessible by integration")

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    (comment,) = github.comments_on(7)
    assert "prompts/clerk.md:5" in comment["body"]
    assert "read-only token" in comment["body"]
    assert github.review_comments_on(7) == []
    assert "no review on the changed lines" in run.stdout


def test_on_by_default_at_half_the_runs_calls_and_a_pull_request_cannot_stop_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """No `attribution` in the base's `evalward.yaml`: the defaults hold, on-block with half
    the run's own model calls (here 3 of 6), the result cache off. The pull request's own
    `evalward.yaml` says `mode: off` and bounds it at a few microseconds (`maxMinutes`); the
    base's decides, so it runs to its end. A variant of both
    regressed fixtures needs about 2 calls, and a change of three hunks up to four variants:
    they run refund-a alone (a call each), and the third hunk's variant is the last the
    budget fits; the line is proven for refund-a, and the comment and review say so."""
    script(model)
    _pull(repo, github, head_config="attribution: { mode: off, maxMinutes: 0.0000001 }\n")

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    section = _results(repo)["attribution"]
    assert section["mode"] == "on-block"
    assert section["budgetModelCalls"] == 3 and section["spentModelCalls"] == 3
    (regression,) = section["regressions"]
    assert regression["result"] == "attributed", regression
    assert regression["fixtures"] == ["refund-a", "refund-b"]
    assert regression["triedOn"] == ["refund-a"]
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/clerk.md", 5)
    assert [(t["way"], t["regressed"]) for t in regression["trials"]] == [
        ("reverted", True),  # line 1 taken back: refund-a still fails
        ("reverted", False),  # line 5 taken back: it passes
        ("applied", True),  # the base with line 5 alone: it fails
    ]
    assert {s["fixture"] for t in regression["trials"] for s in t["scores"]} == {"refund-a"}
    body = github.comments_on(7)[0]["body"]
    assert "prompts/clerk.md:5" in body and "Its variants ran refund-a alone" in body
    (review,) = github.review_comments_on(7)
    assert review["line"] == 5 and "Taken back, it passes (refund-a 1/1)" in review["body"]


def test_a_one_line_change_is_proven_by_the_gate_s_own_runs_with_every_default(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The commonest pull request: one line added to the prompt, and every default (no
    `evalward.yaml`, the result cache read-write). Its proof is the base's agent again and
    the head's, whose runs the gate has just stored: the line is named and reviewed, and
    attribution spends nothing of its 3 calls."""
    script(model)
    base = _clerk_base(repo)
    never = BASE_PROMPT.replace("Say approved", f"{NEVER}Say approved")
    head = repo.commit("never refund", {"prompts/clerk.md": never})

    run = gate_pull_request(repo, github, base, head, provider_env(model))

    assert run.returncode == 1, run.stdout + run.stderr
    section = _results(repo)["attribution"]
    assert (section["budgetModelCalls"], section["spentModelCalls"]) == (3, 0)
    (regression,) = section["regressions"]
    assert regression["result"] == "attributed", regression
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["first"]) == ("prompts/clerk.md", 5)
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("prompts/clerk.md", 5)
    assert len(model.requests) == _results(repo)["run"]["spent"]["model_calls"]


@pytest.mark.parametrize("cache", ["off", "read-write"])
def test_a_variant_that_loops_is_held_to_what_is_left_and_read_as_nothing(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, cache: str
) -> None:
    """The pull request adds NEVER REFUND and, in a hunk of its own, a rule that sends the
    clerk to look the order up again and again. The head refuses at once, a call a fixture,
    so the gate's runs are cheap; the head without NEVER REFUND loops to its `maxTurns`, far
    more calls than attribution has left. Every call of that variant is held to what is
    left (the model server counts what it was asked): the variant is cut short and said not
    built, never read as still regressing, nothing is named on a line, and attribution
    spends no more than its budget. With the result cache on, a rerun reads none of the cut
    runs from it: the variant is cut again, not read as still regressing."""
    model.script(lambda body: "NEVER REFUND" in json.dumps(body), text("hello"))
    model.script(mentions("LOOK IT UP AGAIN"), tool_call("lookup", {"order": "1"}))
    model.script(lambda body: True, text("approved, hello"))
    tool = (
        "  maxTurns: 40\n  tools:\n    - name: lookup\n      description: Look an order up.\n"
        "      parameters: { type: object, properties: { order: { type: string } } }\n"
        "      mock: { output: found }\n"
    )
    base = _clerk_base(repo, CLERK + tool, config=ROOMY)
    looping = HEAD_PROMPT + "\nLOOK IT UP AGAIN before every answer.\n"
    head = repo.commit("a stricter, thorough clerk", {"prompts/clerk.md": looping})
    diff = repo.git("diff", base, head, "--", "prompts/clerk.md")
    files = [
        {"filename": "prompts/clerk.md", "status": "modified", "patch": diff[diff.index("@@") :]}
    ]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=files))

    for _ in range(2 if cache == "read-write" else 1):
        asked = len(model.requests)
        run = _gate(repo, github, model, cache=cache)

        assert run.returncode == 1, run.stdout + run.stderr
        section = _results(repo)["attribution"]
        assert section["budgetModelCalls"] == 24  # four times the gate's six calls
        assert 0 < section["spentModelCalls"] <= 24
        asked = len(model.requests) - asked  # what the server was asked, gate and variants
        assert asked <= 6 + 24, asked
        (regression,) = section["regressions"]
        assert regression["result"] == "not attributable", json.dumps(regression, indent=1)
        cut = [t for t in regression["trials"] if t["notBuilt"]]
        assert [t["notBuilt"] for t in cut] == ["the budget ran out during its runs"], regression
        assert "budget" in regression["reason"], regression
        assert github.review_comments_on(7) == []


def test_a_variant_that_hangs_is_stopped_at_attribution_s_time_bound_and_the_gate_stands(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The model never answers a clerk told NEVER REFUND but not to be careful: neither the
    head (both) nor the base (neither), only a variant that takes one of the two back. The
    base's `attribution.maxMinutes` of six seconds stops that variant's runs where they
    are, as a variant the budget cut: said not built, never read as regressing or not; no
    variant starts after it, the reason says where the bound is set, and the decision is
    the gate's."""
    hangs = "NEVER REFUND"

    def hanging(body: dict[str, object]) -> bool:
        sent = json.dumps(body)
        return hangs in sent and "careful" not in sent

    model.script(hanging, text("hello", delay=3600))  # the server's close ends the wait
    model.script(mentions(hangs), text("hello"))
    model.script(lambda body: True, text("approved, hello"))
    _pull(repo, github, config="attribution: { budget: 4, maxMinutes: 0.1 }\n")

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "not attributable", json.dumps(regression, indent=1)
    assert regression["reason"].startswith("attribution stopped at its time bound of 0.1 minutes")
    assert "attribution.maxMinutes" in regression["reason"]
    cut = [t["notBuilt"] for t in regression["trials"] if t["notBuilt"]]
    assert cut == ["attribution's time bound ran out during its runs"], regression
    assert github.review_comments_on(7) == []
    (comment,) = github.comments_on(7)
    assert "time bound of 0.1 minutes" in comment["body"]


HUNG = "evalward-test-hung-clerk"
"""The argument that marks the processes a hung variant of the clerk's program left."""
HANGING_CLERK = f"""\
import json, os, subprocess, sys, time, urllib.request
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rules import RULES
json.loads(sys.stdin.readline())
if "NEVER REFUND" in RULES and "careful" not in RULES:
    # it hangs, beside a process it started in a session of its own
    sleeper = [sys.executable, "-c", "import time; time.sleep(3600)", {HUNG!r}]
    subprocess.Popen(sleeper, start_new_session=True)
    time.sleep(3600)
messages = [{{"role": "system", "content": RULES}}, {{"role": "user", "content": "refund order 1"}}]
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
    data=json.dumps({{"model": "gpt-4.1-mini", "messages": messages}}).encode(),
    headers={{"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "content-type": "application/json"}},
)
reply = json.load(urllib.request.urlopen(request))
print(json.dumps({{"type": "final", "content": reply["choices"][0]["message"]["content"]}}))
"""
CLERK_RULES = 'RULES = """\\\nYou are a refund clerk.\nRefunds are approved for orders.\n"""\n'


def _marked(marker: str) -> list[int]:
    """The processes of this machine whose arguments hold `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            arguments = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # not a process, or one that has ended
        if entry.name.isdigit() and marker.encode() in arguments.split(b"\0"):
            found.append(int(entry.name))
    return found


@needs_root
def test_a_program_variant_that_hangs_is_ended_at_the_time_bound_with_what_it_started(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The clerk is a program that hangs, beside a process it started in a session of its
    own, where its rules say NEVER REFUND but not to be careful: neither the head (both
    lines) nor the base (neither), only the variant that takes the careful line back. The
    base's `attribution.maxMinutes` of six seconds ends that variant's runs, and every
    process they started with them: said not built, the decision the gate's."""
    script(model)
    python, _ = agent_python()
    suite = one_agent_suite(
        "clerk",
        "refund-a",
        command=f"{{ run: [{python}, agent/main.py] }}",
        prompt="refund order 1",
        assertion="{ type: contains, value: approved }",
    )
    base = repo.commit(
        "the clerk, a program",
        {
            "agents.yaml": suite,
            "agent/main.py": HANGING_CLERK,
            "agent/rules.py": CLERK_RULES,
            "evalward.yaml": "attribution: { mode: on-block, budget: 10, maxMinutes: 0.1 }\n",
        },
    )
    repo.branch("feature")
    stricter = CLERK_RULES.replace("\\\n", "\\\nBe careful.\n", 1)
    stricter = stricter.replace("orders.\n", "orders.\nNEVER REFUND anything.\n")
    head = repo.commit("a careful, stricter clerk", {"agent/rules.py": stricter})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "not attributable", json.dumps(regression, indent=1)
    assert regression["reason"].startswith("attribution stopped at its time bound of 0.1 minutes")
    cut = [t["notBuilt"] for t in regression["trials"] if t["notBuilt"]]
    assert cut == ["attribution's time bound ran out during its runs"], regression
    deadline = time.monotonic() + subprocess_limit()
    while _marked(HUNG) and time.monotonic() < deadline:
        time.sleep(0.1)  # a process sent SIGKILL is gone once the kernel has ended it
    assert _marked(HUNG) == []


def test_the_base_turns_it_off_and_a_pull_request_cannot_switch_it_on(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """`mode: off` in the base's `evalward.yaml`: nothing more runs, whatever the pull
    request's own says."""
    script(model)
    _pull(
        repo,
        github,
        config="attribution: { mode: off }\n",
        head_config="attribution: { mode: always, budget: 10 }\n",
    )

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    assert _results(repo).get("attribution") is None
    assert "Where it regressed" not in github.comments_on(7)[0]["body"]
    assert github.review_comments_on(7) == []


VARIANTS = {
    "first variant": lambda sent: "You are a refund clerk." in sent and "NEVER REFUND" in sent,
    "second variant": lambda sent: "careful" in sent and "NEVER REFUND" not in sent,
}
"""A model call only one of attribution's variants makes: the head with its first hunk taken
back (the clerk's old first line beside NEVER REFUND), then with NEVER REFUND taken back."""


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_signal_while_attribution_runs_keeps_the_decision_written_and_ends_130(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, variant: str
) -> None:
    """GitHub cancels the job while attribution runs a variant (the first, or the second
    once the first has finished): the search stops there, and what the gate decided is
    written and commented as it would be without attribution; the job ends as cancelled."""
    base, head = _pull(repo, github, config=ROOMY)
    started: list[subprocess.Popen[str]] = []

    def signal_on_the_variant(body: dict[str, Any]) -> bool:
        if VARIANTS[variant](json.dumps(body)) and started[0].returncode is None:
            started[0].send_signal(signal.SIGINT)
        return False  # never answers: the clerk's script does

    model.rules.append(Rule(signal_on_the_variant, [text("unused")]))
    script(model)
    launch = prepare(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        inputs={"cache": "off", "output-dir": ".evalward/out"},
        env=provider_env(model),
    )
    process = start_action(repo.path, launch)
    started.append(process)
    stdout, stderr = process.communicate(timeout=subprocess_limit())
    run = launch.finish(process.returncode, stdout, stderr)

    said = run.stdout + run.stderr
    assert run.returncode == 130, said
    assert "Traceback" not in said and "internal error" not in said, said
    assert "evalward: attribution stopped: the job was cancelled" in run.stdout
    results = _results(repo)
    assert results["result"] == "fail"  # the decision, made before attribution began
    assert results["run"]["cancelled"] is True
    assert results.get("attribution") is None
    assert run.outputs["result"] == "fail"
    (comment,) = github.comments_on(7)
    assert "Blocked" in comment["body"] and "Where it regressed" not in comment["body"]
    assert github.review_comments_on(7) == []


def test_a_signal_between_two_variants_stops_the_search_there(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """The signal comes as the second variant's commit is written, after the first variant's
    runs have ended and before the second's begin: no variant's run is there to take it, and
    still the search stops, the decision is written and the job ends as cancelled."""
    script(model)
    base, head = _pull(repo, github, config=ROOMY)
    count = tmp_path / "commit-trees"
    path = git_on_commit_tree(
        tmp_path / "bin",
        f'    echo x >> "{count}"\n    [ "$(wc -l < "{count}")" -eq 2 ] && kill -INT "$PPID"',
    )
    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        inputs={"cache": "off", "output-dir": ".evalward/out"},
        env={**provider_env(model), "PATH": path},
    )

    said = run.stdout + run.stderr
    assert count.read_text().count("x") >= 2, said  # the second variant was being built
    assert run.returncode == 130, said
    assert "evalward: attribution stopped: the job was cancelled" in run.stdout
    results = _results(repo)
    assert results["result"] == "fail" and results["run"]["cancelled"] is True
    # the second variant never ran: its prompt (NEVER REFUND taken back) reached no model
    assert not any(VARIANTS["second variant"](json.dumps(body)) for body in model.requests)
    assert "Blocked" in github.comments_on(7)[0]["body"]


def test_attribution_that_broke_says_so_in_the_comment_redacted_and_the_check_stands(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """git refuses the first variant's commit, its stderr holding a path, a mention and the
    provider's key: the comment and the job summary say, where the findings would be, that
    attribution did not finish and git's words why, the key starred and the mention inert;
    the check fails as the gate decided, as without attribution."""
    script(model)
    _pull(repo, github, config=ROOMY)
    refusal = f"fatal: /srv/objects/ab: No space left on device, @admins, key {PROVIDER_KEY}"
    path = git_on_commit_tree(tmp_path / "bin", f'    echo "{refusal}" >&2; exit 128')
    base_sha, head_sha = (github.pulls[7].base_sha, github.pulls[7].head_sha)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base_sha, head_sha),
        inputs={"cache": "off", "output-dir": ".evalward/out", "check-run": "true"},
        env={**provider_env(model), "PATH": path},
    )

    said = run.stdout + run.stderr
    assert run.returncode == 1, said  # the decision, as without attribution
    assert "Traceback" not in said and PROVIDER_KEY not in said, said
    assert run.outputs["result"] == "fail"
    assert [c["conclusion"] for c in github.check_runs] == ["failure"]
    (warning,) = [line for line in run.stdout.splitlines() if "did not finish" in line]
    assert warning.startswith("::warning::attribution did not finish: ")
    (comment,) = github.comments_on(7)
    for body in (comment["body"], run.summary):
        assert PROVIDER_KEY not in body
        section = body.split("Where it regressed", 1)[1]
        (line,) = [x for x in section.splitlines() if "did not finish" in x]
        assert line.startswith("- attribution did not finish: cannot make a commit"), line
        assert "/srv/objects/ab: No space left on device" in line and "key ***" in line
        assert "@admins" not in line, line  # no mention: `@` is kept from the name
        assert line.endswith("; the decision stands without it"), line
    unfinished = _results(repo)["attribution"]["unfinished"]
    assert "No space left on device" in unfinished and "key ***" in unfinished
    assert github.review_comments_on(7) == []


def test_a_comment_template_without_the_findings_still_lets_the_next_push_mark_them(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The base branch's own comment template shows the decision and pages of its own, never
    "Where it regressed": the comment is cut at GitHub's limit with room for the hidden line
    that asks the next push to look, and the review comment on the hunk is marked as no
    longer applying once a push takes the hunk back."""
    script(model)
    template = (
        "OUR-TEMPLATE {{ ctx.decision.result.value }}\n"
        "{% for line in range(8000) %}our page, line {{ line }}\n{% endfor %}"
    )
    base = _clerk_base(repo, config=ROOMY)
    repo.checkout("main")
    base = repo.commit("our comment", {"ci/comment.md.j2": template})
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge main")
    head = repo.commit("a stricter clerk", {"prompts/clerk.md": HEAD_PROMPT})
    diff = [{"filename": "prompts/clerk.md", "status": "modified", "patch": PATCH}]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=diff))

    def gate() -> ActionRun:
        return run_action(
            repo.path,
            github,
            pull_request_event(github.repository, 7, base, github.pulls[7].head_sha),
            inputs={
                "cache": "off",
                "output-dir": ".evalward/out",
                "comment-template": "ci/comment.md.j2",
            },
            env=provider_env(model),
        )

    assert gate().returncode == 1
    (comment,) = github.comments_on(7)
    assert "OUR-TEMPLATE fail" in comment["body"] and "Where it regressed" not in comment["body"]
    assert "cut here to fit GitHub's 65,536-character comment limit" in comment["body"]
    assert len(comment["body"]) <= 65_536 and comment["body"].endswith(UNRETIRED)
    (review_comment,) = github.review_comments_on(7)

    fixed = repo.commit("refunds again", {"prompts/clerk.md": HEAD_PROMPT.replace(NEVER, "")})
    github.pulls[7].head_sha = fixed
    again = gate()

    assert again.returncode == 0, again.stdout + again.stderr
    (retired,) = github.review_comments_on(7)
    assert retired["id"] == review_comment["id"]
    assert "No longer applies" in retired["body"] and fixed[:12] in retired["body"]


def _reviewed_then_pushed(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> tuple[dict[str, Any], str]:
    """A first push gated and its hunk proven on its line (the review comment as it stands,
    not as the fake keeps it), then a next push that still regresses: its head."""
    script(model)
    _pull(repo, github, config=ROOMY)
    assert _gate(repo, github, model).returncode == 1
    (review_comment,) = github.review_comments_on(7)
    again = repo.commit("kinder words", {"prompts/clerk.md": HEAD_PROMPT + "Thank them.\n"})
    github.pulls[7].head_sha = again
    return dict(review_comment), again


def test_a_push_whose_attribution_broke_leaves_the_earlier_review_comments_standing(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """The first push's hunk is proven on its line; the next push still regresses, and git
    refuses its first variant's commit: that the line no longer applies is not known, so its
    review comment stands as it was, not marked as no longer applying."""
    review_comment, again = _reviewed_then_pushed(repo, github, model)
    path = git_on_commit_tree(tmp_path / "bin", '    echo "fatal: the disk is full" >&2; exit 128')
    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, github.pulls[7].base_sha, again),
        inputs={"cache": "off", "output-dir": ".evalward/out"},
        env={**provider_env(model), "PATH": path},
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert "the disk is full" in _results(repo)["attribution"]["unfinished"]
    (standing,) = github.review_comments_on(7)
    assert standing == review_comment and "No longer applies" not in standing["body"]


def test_a_push_whose_variants_decided_nothing_leaves_the_earlier_review_comments_standing(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The first push's NEVER REFUND is proven on its line; the next push adds a line beside
    it and still regresses, and the model provider goes down once the gate's six runs are
    answered (HTTP 503, after its retries): no variant decides anything, and the regression
    is not attributable. That the line no longer applies is not known: its review comment
    was marked "No longer applies: evalward no longer finds this on these lines", as on a
    push that took the line back, though the line and the regression stand. It stands as
    it was, for the next push to look at again."""
    review_comment, _ = _reviewed_then_pushed(repo, github, model)
    gate_runs = len(model.requests) + 6  # three fixtures, on each side, a call each
    down = error(503, headers={"Retry-After": "0"})
    model.rules.insert(0, Rule(lambda body: len(model.requests) > gate_runs, [down]))
    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "not attributable", regression["trials"]
    assert "a model provider was down" in regression["reason"], regression["reason"]
    (standing,) = github.review_comments_on(7)
    assert standing == review_comment and "No longer applies" not in standing["body"]
    assert "Where it regressed" in github.comments_on(7)[0]["body"]  # the next push looks


PARAGRAPHS = (
    "You are a refund clerk.\n\n\n\n\nSay approved when you approve one.\n"
    "Greet people with hello.\n"
)
"""A prompt whose paragraphs are kept apart by runs of blank lines: a paragraph added with
blank lines around it can be aligned in more than one way."""


def test_the_review_is_on_the_lines_git_s_diff_shows_where_lines_repeat(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """NEVER REFUND added between blank lines: a matcher of our own put it on lines 2-7 while
    git, and so GitHub, shows it on lines 6-11; GitHub refused the comment on line 2 and the
    whole review with it."""
    script(model)
    _clerk_base(repo, config=ROOMY)
    base = repo.commit("paragraphs", {"prompts/clerk.md": PARAGRAPHS})
    head = repo.commit(
        "never refund",
        {"prompts/clerk.md": PARAGRAPHS.replace("\n\n\n\n\n", "\n\n\n\n\n\n" + NEVER + "\n\n\n\n")},
    )
    files = repo.pull_files(base, head)
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=files))

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "no review on the changed lines" not in run.stdout, run.stdout
    (line,) = github.review_comments_on(7)
    first = line.get("start_line") or line["line"]
    blocks = repo.diff_blocks(base, head, "prompts/clerk.md")
    assert line["path"] == "prompts/clerk.md"
    assert any({first, line["line"]} <= block for block in blocks), (line, blocks)
    shown = repo.git("show", f"{head}:prompts/clerk.md").split("\n")[first - 1 : line["line"]]
    assert NEVER.strip() in shown


def test_the_rule_a_renamed_prompt_gained_is_named_on_its_line_of_the_rename(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The pull request renames the clerk's prompt and adds NEVER REFUND to it. The rename
    and the rule are hunks apart: taken back alone, the rule leaves the renamed prompt with
    the base's text; applied alone to the base, it is written at the base's name. The rule
    is proven the cause and commented on its line of the rename's diff."""
    script(model)
    base = _clerk_base(repo, config=ROOMY)
    repo.remove("prompts/clerk.md")
    head = repo.commit(
        "the desk's prompt",
        {
            "prompts/desk.md": BASE_PROMPT.replace("Say approved", NEVER + "Say approved"),
            "agents/clerk.yaml": CLERK.replace("prompts/clerk.md", "prompts/desk.md"),
        },
    )
    pull_files = repo.pull_files(base, head)
    assert {f["filename"]: f["status"] for f in pull_files}["prompts/desk.md"] == "renamed"
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=pull_files))

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    named = [(h["path"], h["kind"], h["renamedFrom"]) for h in regression["hunks"]]
    assert named == [
        ("agents/clerk.yaml", "field", ""),
        ("prompts/desk.md", "rename", "prompts/clerk.md"),
        ("prompts/desk.md", "text", "prompts/clerk.md"),
    ], regression
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["kind"], culprit["first"]) == ("prompts/desk.md", "text", 5)
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("prompts/desk.md", 5)
    assert f"/blob/{head}/prompts/desk.md" + "#L5)" in github.comments_on(7)[0]["body"]


def _prompt_moved_into_the_yaml(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, block: str
) -> ActionRun:
    """The clerk's prompt moved from its file (deleted) into its YAML as a `block` (`|`,
    `>`), with NEVER REFUND added, gated as pull request 7."""
    script(model)
    base = _clerk_base(repo, config=ROOMY)
    repo.remove("prompts/clerk.md")
    moved = BASE_PROMPT.replace("Say approved", NEVER + "Say approved")
    written = f"  system: {block}\n" + "".join(
        f"    {line}\n" if line else "\n" for line in moved.splitlines()
    )
    head = repo.commit(
        "the prompt in the clerk's YAML",
        {"agents/clerk.yaml": CLERK.replace("  systemFile: prompts/clerk.md\n", written)},
    )
    github.add_pull(
        FakePull(number=7, head_sha=head, base_sha=base, files=repo.pull_files(base, head))
    )
    return _gate(repo, github, model)


def test_a_prompt_moved_into_the_agent_s_yaml_with_a_rule_is_named_on_its_line_there(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The pull request moves the clerk's prompt from its file into the YAML's `system:`
    field, adding NEVER REFUND, and deletes the file. The block is split against the file it
    was moved from, its move a hunk of its own: the NEVER REFUND line is proven the cause
    alone, on its line of the YAML (taken back there, the clerk approves; the base with only
    it, the prompt back in its file with that line, regresses)."""
    run = _prompt_moved_into_the_yaml(repo, github, model, "|")

    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    hunks = regression["hunks"]
    (culprit,) = [hunks[i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["kind"], culprit["field"]) == (
        "agents/clerk.yaml",
        "text",
        "spec.system",
    )
    assert (culprit["first"], culprit["last"]) == (11, 11)
    assert not regression["takenBackWith"] and not regression["appliedWith"], regression
    (move,) = [h for h in hunks if h["kind"] == "moved"]
    assert (move["path"], move["field"], move["first"]) == ("agents/clerk.yaml", "spec.system", 0)
    assert not [h for h in hunks if h["path"] == "prompts/clerk.md"], hunks
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("agents/clerk.yaml", 11)
    assert "agents/clerk.yaml:11" in github.comments_on(7)[0]["body"]


def test_a_prompt_folded_into_the_yaml_is_named_on_its_fields_with_the_file_beside(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The same move into a folded block (`system: >`), whose lines are not the prompt's
    lines, so it is not split by them: the `system` and `systemFile` fields are hunks of
    their own, and neither taken back loads without the deleted file back beside it. Each
    is proven with the file taken back beside it, shown alone to change nothing, and the
    comment says so."""
    run = _prompt_moved_into_the_yaml(repo, github, model, ">")

    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    hunks = regression["hunks"]
    culprit = [hunks[i] for i in regression["culprit"]]
    assert {h["field"] for h in culprit} == {"spec.system", "spec.systemFile"}, regression
    (beside,) = [hunks[i] for i in regression["takenBackWith"]]
    assert (beside["path"], beside["kind"]) == ("prompts/clerk.md", "file")
    assert not [h for h in hunks if h["kind"] == "moved"], hunks
    body = github.comments_on(7)[0]["body"]
    assert "agents/clerk.yaml:6-15" in body
    assert "taken back with `prompts/clerk.md` (which alone changes nothing; the variant " in (body)


def test_a_prompt_moved_out_of_the_yaml_into_a_file_is_named_on_the_file_s_line(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The reverse: the base's clerk holds its prompt in the YAML (`system: |`), and the pull
    request moves it into a new file, `prompts/desk.md`, changing three of its lines, one of
    them NEVER REFUND. The new file is split against the prompt it was moved from, so that
    line is proven the cause alone, on its line of the new file: taken back there, the
    clerk approves again; the base with only it (the prompt back in the YAML with that line
    added) regresses. The move itself is a hunk of its own, which changes nothing."""
    script(model)
    inline = "  system: |\n" + "".join(
        f"    {line}\n" if line else "\n" for line in BASE_PROMPT.splitlines()
    )
    base = repo.commit(
        "the clerk, its prompt in its YAML",
        {
            "agents/clerk.yaml": CLERK.replace("  systemFile: prompts/clerk.md\n", inline),
            "evals/suite.yaml": SUITE,
            ".gitignore": ".evalward/\n",
            "evalward.yaml": ROOMY,
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "the prompt in a file of its own",
        {
            "agents/clerk.yaml": CLERK.replace("prompts/clerk.md", "prompts/desk.md"),
            "prompts/desk.md": HEAD_PROMPT,
        },
    )
    github.add_pull(
        FakePull(number=7, head_sha=head, base_sha=base, files=repo.pull_files(base, head))
    )

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    hunks = regression["hunks"]
    (culprit,) = [hunks[i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["kind"], culprit["first"]) == ("prompts/desk.md", "text", 5)
    assert not regression["takenBackWith"] and not regression["appliedWith"], regression
    (moved,) = [h for h in hunks if h["kind"] == "moved"]
    assert (moved["path"], moved["field"]) == ("prompts/desk.md", "spec.system"), moved
    assert not [h for h in hunks if h["path"] == "agents/clerk.yaml"], hunks
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("prompts/desk.md", 5)
    assert f"/blob/{head}/prompts/desk.md" + "#L5)" in github.comments_on(7)[0]["body"]


def test_the_model_a_moved_agent_s_yaml_changed_is_named_on_its_line_of_the_move(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The pull request moves the clerk's YAML into a folder of its own and switches it to
    the cheaper model: the move and the model are hunks apart, and the model is proven the
    cause, on its line of the moved file (the move taken back alone, the agent loads from
    its old name and still regresses)."""
    script(model)
    base = _clerk_base(repo, config=ROOMY)
    repo.remove("agents/clerk.yaml")
    head = repo.commit(
        "the clerk's own folder",
        {"agents/clerk/clerk.yaml": AGENT.format(model="openai/gpt-4.1-nano")},
    )
    pull_files = repo.pull_files(base, head)
    assert [(f["filename"], f["status"]) for f in pull_files] == [
        ("agents/clerk/clerk.yaml", "renamed")
    ]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=pull_files))

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["result"] == "attributed", regression
    (culprit,) = [regression["hunks"][i] for i in regression["culprit"]]
    assert (culprit["path"], culprit["field"], culprit["first"]) == (
        "agents/clerk/clerk.yaml",
        "spec.models",
        5,
    )
    assert culprit["renamedFrom"] == "agents/clerk.yaml"
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("agents/clerk/clerk.yaml", 5)


@pytest.mark.parametrize("config", ["", ROOMY], ids=["default-budget", "roomy"])
def test_two_fixtures_broken_by_two_hunks_are_never_read_as_traced_to_one(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, config: str
) -> None:
    """A pull request breaks refund-a with one line, cheaply, and refund-b with another, so
    that the line blamed would be the harmless-looking one. At the default budget the
    variants run refund-a alone (two variants of both would not fit) and the line that
    breaks it is proven; the two variants that would try it on refund-b do not fit either,
    and the comment and the review say refund-b may regress for another cause. With room for
    both, every variant runs both fixtures, and the
    two lines together are the cause: neither alone removes the regression."""

    def refuses(body: dict[str, Any]) -> bool:
        sent = json.dumps(body)
        return ("NO ORDER 1" in sent and "order 1" in sent.replace("NO ORDER 1", "")) or (
            "NO ORDER 2" in sent and "order 2" in sent.replace("NO ORDER 2", "")
        )

    model.script(refuses, text("hello"))
    model.script(lambda body: True, text("approved, hello"))
    base = _clerk_base(repo, config=config)
    broken = BASE_PROMPT.replace("Be brief.\n", "Be brief.\nNO ORDER 1 refunds.\n")
    broken = broken.replace("End politely.\n", "End politely.\nNO ORDER 2 refunds.\n")
    head = repo.commit("two rules", {"prompts/clerk.md": broken})
    github.add_pull(
        FakePull(number=7, head_sha=head, base_sha=base, files=repo.pull_files(base, head))
    )

    run = _gate(repo, github, model)

    assert run.returncode == 1, run.stdout + run.stderr
    (regression,) = _results(repo)["attribution"]["regressions"]
    assert regression["fixtures"] == ["refund-a", "refund-b"]
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    culprit = sorted(regression["hunks"][i]["first"] for i in regression["culprit"])
    body = github.comments_on(7)[0]["body"]
    if config:  # every variant ran both: the two lines together
        assert regression["triedOn"] == ["refund-a", "refund-b"] and culprit == [3, 10]
        assert "may regress for another cause" not in body
        return
    assert regression["triedOn"] == ["refund-a"] and culprit == [3]
    said = "refund-b may regress for another cause."
    assert "`prompts/clerk.md:3`" in body and said in body, body
    (review,) = github.review_comments_on(7)
    assert review["line"] == 3 and said in review["body"], review["body"]
