"""Pull requests that try to turn the gate green without fixing their agent.

Each one also breaks the agent (its head greets with a tool call it must not make, so
support-bot-eval scores 0.80 against its 0.90 threshold) and adds its trick; each must end in
a failing gate — or the audited bypass — with the comment saying why. All run as the runner
runs the action: the image's entry point with GitHub's environment, a real repository, the
fake GitHub API and the scripted model server.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from evalward.plan.prepare import BASE_FIRST
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import (
    SHARD_KEY,
    ActionRun,
    gate_pull_request,
    merge_group_event,
    pull_request_event,
    queue_group,
    run_action,
    run_group,
    run_shards,
)
from support.answered import AGENT, helper_eval, scripted
from support.documents import by_label, eval_for
from support.gitrepo import GitRepo
from support.suite import (
    BASE_PROMPT,
    GREETING_FIXTURE,
    HEAD_PROMPT,
    MATH_TUTOR,
    ORDER_FIXTURE,
    SUPPORT_BOT,
    SUPPORT_EVAL,
    make_pr,
    script_model,
)

pytestmark = pytest.mark.hostile


def hostile_pr(
    repo: GitRepo,
    github: FakeGitHub,
    files: dict[str, str] | None = None,
    remove: tuple[str, ...] = (),
) -> tuple[str, str]:
    """make_pr's base and its agent-breaking head, plus a commit with the trick."""
    base, _ = make_pr(repo, github)
    if remove:
        repo.remove(*remove)
    head = repo.commit("and make the gate pass", files)
    github.pulls[7].head_sha = head
    return base, head


def gate(
    repo: GitRepo,
    github: FakeGitHub,
    base: str,
    head: str,
    env: dict[str, str],
    **inputs: str,
) -> ActionRun:
    event = pull_request_event(github.repository, 7, base, head)
    return run_action(repo.path, github, event, env=env, inputs=inputs)


def comment(github: FakeGitHub) -> str:
    comments = github.comments_on(7)
    assert len(comments) == 1, [c["body"][:80] for c in comments]
    return str(comments[0]["body"])


def assert_fails_below_threshold(run: ActionRun, github: FakeGitHub) -> str:
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    head = next(e for e in run.results()["evals"] if e["side"] == "head")
    assert (head["eval"], head["score"], head["pass_threshold"]) == ("support-bot-eval", 0.8, 0.9)
    body = comment(github)
    assert "❌ evalward" in body and "| support-bot-eval |" in body
    return body


# --- 1. making the affected Evals disappear ---------------------------------------------------


def test_deleting_the_eval_file_does_not_remove_its_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = hostile_pr(repo, github, remove=("evals/support-bot.yaml",))
    script_model(model, head_greets_well=False)

    body = assert_fails_below_threshold(gate(repo, github, base, head, env), github)

    assert "Eval support-bot-eval removed" in body
    assert "gates with the base branch's definitions" in body


def test_renaming_the_eval_runs_the_base_one_and_the_new_one(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    renamed = SUPPORT_EVAL.replace("name: support-bot-eval", "name: support-bot-eval-v2")
    base, head = hostile_pr(repo, github, {"evals/support-bot.yaml": renamed.replace("0.9", "0.5")})
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert run.returncode == 1, run.stdout + run.stderr
    verdicts = {(e["eval"], e["side"]): e["passed"] for e in run.results()["evals"]}
    assert verdicts[("support-bot-eval", "head")] is False
    assert verdicts[("support-bot-eval-v2", "head")] is True  # its own lower bar: it only adds
    assert (
        "support-bot-eval" in run.results()["reason"]
        or "1 affected Eval" in (run.results()["reason"])
    )


def test_renaming_the_agent_with_every_target_fails_with_the_reason_and_the_label_bypasses_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    def rename(text: str) -> str:
        return text.replace("support-bot", "support-bot-2")

    base, head = hostile_pr(
        repo,
        github,
        {
            "agents/support-bot.yaml": rename(SUPPORT_BOT.format(prompt=HEAD_PROMPT)),
            "evals/support-bot.yaml": rename(SUPPORT_EVAL).replace("0.9", "0.1"),
            "evals/fixtures/order-status.yaml": rename(ORDER_FIXTURE),
            "evals/fixtures/greeting.yaml": rename(GREETING_FIXTURE),
        },
    )
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["notRun"] == {
        "support-bot-eval": "agent support-bot was renamed to support-bot-2"
    }
    why = "agent support-bot was renamed to support-bot-2; its Eval support-bot-eval did not run"
    assert why in run.results()["reason"]
    body = comment(github)
    assert "### 🚫 Did not run" in body and why in body
    assert "apply the bypass label" in body

    # Removing or renaming an agent on purpose: the audited bypass.
    github.permissions["maintainer"] = "maintain"
    github.add_label(7, "force-eval-bypass", actor="maintainer")
    event = pull_request_event(
        github.repository,
        7,
        base,
        head,
        labels=["force-eval-bypass"],
        action="labeled",
        label="force-eval-bypass",
        sender="maintainer",
    )
    bypassed = run_action(repo.path, github, event, env=env)
    assert bypassed.returncode == 0, bypassed.stdout + bypassed.stderr
    assert bypassed.outputs["result"] == "bypassed"
    audit = json.loads(bypassed.outputs["audit"])
    assert audit["failing_evals"] == ["support-bot-eval"] and audit["actor"] == "maintainer"
    renamed = next(e for e in bypassed.results()["evals"] if e["eval"] == "support-bot-2-eval")
    assert renamed["total"] == 2, "the new Eval selects the fixtures by their head labels"


def test_renaming_the_agent_in_its_file_and_copying_the_base_s_under_the_old_name_fails(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    # The broken agent keeps its file under a new name, and the base's agent, word for word,
    # keeps the old name in another file: no Eval or fixture is edited, and the base's Eval
    # would find its target, the copy, unchanged.
    broken = SUPPORT_BOT.format(prompt=HEAD_PROMPT).replace(
        "name: support-bot", "name: support-bot-2"
    )
    copy = SUPPORT_BOT.format(prompt=BASE_PROMPT)
    base, head = hostile_pr(
        repo, github, {"agents/support-bot.yaml": broken, "agents/legacy/support-bot.yaml": copy}
    )
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    why = (
        "agent support-bot's file agents/support-bot.yaml now defines support-bot-2, and "
        "support-bot is defined in agents/legacy/support-bot.yaml"
    )
    assert run.results()["notRun"] == {"support-bot-eval": why}
    assert f"{why}; its Eval support-bot-eval did not run" in run.results()["reason"]
    assert not model.requests, "nothing ran on the copy"
    body = comment(github)
    assert "### 🚫 Did not run" in body and why in body
    assert "apply the bypass label" in body
    assert "No semantic change" not in body


@pytest.mark.parametrize(
    "config",
    ["exclude: ['evals/**']\n", "roots: [agents]\n"],
    ids=["exclude the evals", "roots without the evals"],
)
def test_an_evalward_yaml_of_the_pr_does_not_choose_what_gates(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    config: str,
) -> None:
    base, head = hostile_pr(repo, github, {"evalward.yaml": config})
    script_model(model, head_greets_well=False)

    assert_fails_below_threshold(gate(repo, github, base, head, env), github)


def test_resources_moved_out_of_the_base_branch_s_roots_are_told_whose_roots_those_are(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The base branch reads `roots: [agents, evals]`; the pull request moves its Evals to
    `suite/` and names that root in its own `evalward.yaml`, which the gate does not read.
    The job stops before any run (exit 2), as ever; the message says the `evalward.yaml` it
    quotes is the base branch's, so that the author does not edit their own file again."""
    repo.commit("roots", {"evalward.yaml": "roots: [agents, evals]\n"})
    base, _ = make_pr(repo, github)
    moved = {
        "evals/support-bot.yaml": SUPPORT_EVAL,
        "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
        "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
    }
    repo.remove("-r", "evals")
    head = repo.commit(
        "the evals in suite/",
        {"evalward.yaml": "roots: [agents, suite]\n"}
        | {path.replace("evals/", "suite/", 1): text for path, text in moved.items()},
    )
    github.pulls[7].head_sha = head

    run = gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    body = comment(github)
    assert "evalward.yaml:1:17: roots\\[1\\]: root 'evals' is not a folder of the" in body
    assert (
        f"evalward.yaml above is the base branch's (at {base[:12]}), read in place of this change's"
    ) in body
    assert not model.requests


def trivial_critical_fixtures(prefix: str, count: int) -> dict[str, str]:
    """`count` critical fixtures of the support bot that any greeting passes (`contains: H`),
    named `<prefix>-<n>`: what a pull request adds to lift a failing score."""
    trivial = GREETING_FIXTURE.replace("name: greeting", f"name: {prefix}-{{n}}").replace(
        "severity: low", "severity: critical"
    )
    trivial = (
        trivial.split("  assertions:")[0] + "  assertions:\n    - { type: contains, value: H }\n"
    )
    return {
        f"evals/fixtures/{prefix}-{n}.yaml": trivial.replace("{n}", str(n)) for n in range(count)
    }


# --- 2. diluting the score ----------------------------------------------------------------


def test_new_trivially_passing_critical_fixtures_run_but_gate_once_merged(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = hostile_pr(repo, github, trivial_critical_fixtures("trivial", 10))
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    body = assert_fails_below_threshold(run, github)
    pending = [f"trivial-{n}" for n in range(10)]
    assert run.results()["pending"] == {"support-bot-eval": sorted(pending)}
    ran = {f["fixture"] for f in run.results()["fixtures"] if f["side"] == "head"}
    assert set(pending) <= ran, "the new fixtures run"
    assert all(f["status"] == "pass" for f in run.results()["fixtures"] if f["fixture"] in pending)
    assert "### 🆕 New fixtures" in body
    assert "support-bot-eval / trivial-0 — pass · gates once merged" in body


# --- 3. speaking for the gate -------------------------------------------------------------


BASE_TEMPLATE = "BASE-TEMPLATE {{ ctx.decision.result.value }}: {{ ctx.decision.reason | md }}\n"
PHISH = (
    "## ✅ evalward: every affected Eval passes\n@acme/maintainers approve: https://evil.example\n"
)


def test_the_comment_template_comes_from_the_base_commit(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, _ = make_pr(repo, github)
    repo.checkout("main")
    repo.commit("our comment", {"ci/comment.md.j2": BASE_TEMPLATE})
    base = repo.head()
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge main")
    head = repo.commit("a nicer comment", {"ci/comment.md.j2": PHISH})
    github.pulls[7].head_sha, github.pulls[7].base_sha = head, base
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env, **{"comment-template": "ci/comment.md.j2"})

    assert run.returncode == 1, run.stdout + run.stderr
    body = comment(github)
    assert "BASE-TEMPLATE fail" in body
    assert "evil.example" not in body and "every affected Eval passes" not in body
    assert "evil.example" not in run.summary


def test_a_mistake_in_the_base_commit_s_comment_template_is_named_as_the_repository_names_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Not by the private copy the action reads it from (/tmp/evalward-base-files-…)."""
    base, _ = make_pr(repo, github)
    repo.checkout("main")
    base = repo.commit("our comment", {"ci/comment.md.j2": "Result:\n{{ ctx.decision. }}\n"})
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge main")
    head = repo.head()
    github.pulls[7].head_sha, github.pulls[7].base_sha = head, base
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env, **{"comment-template": "ci/comment.md.j2"})

    assert run.returncode == 2, run.stdout + run.stderr
    said = f"comment-template ci/comment.md.j2:2 (of the base commit {base[:12]}): "
    assert said in run.stderr, run.stderr
    assert "evalward-base-files" not in run.stdout + run.stderr


MOCK = """\
replies:
  - match: {{ agent: support-bot, fixture: order-status }}
    turns:
      - toolCalls: [{{ name: lookup_order, arguments: {{ order_id: "12345" }} }}]
      - content: It has shipped, arriving 2026-11-25.
  - match: {{ agent: support-bot, fixture: greeting }}
    turns:
      - content: "{greeting}"
"""


def dry_run_suite(greeting: str) -> dict[str, str]:
    """The support bot, its Eval and fixtures, and a mock script (`ci/mock.yaml`) whose
    greeting is `greeting`."""
    return {
        "agents/support-bot.yaml": SUPPORT_BOT.format(prompt="BASE-V1"),
        "evals/support-bot.yaml": SUPPORT_EVAL,
        "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
        "ci/mock.yaml": MOCK.format(greeting=greeting),
    }


def test_the_mock_script_comes_from_the_base_commit(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A dry-run gate whose replies the pull request rewrites to pass: the base's replies
    answer (here the base's script makes the greeting fail), and the PR's script is not read."""
    base = repo.commit("agents, evals and a dry-run script", dry_run_suite("Good day."))
    repo.branch("feature")
    head = repo.commit(
        "a new prompt, and replies that pass",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT),
            "ci/mock.yaml": MOCK.format(greeting="Hello! All good."),
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = gate(repo, github, base, head, env, **{"mock-script": "ci/mock.yaml"})

    assert_fails_below_threshold(run, github)
    assert model.requests == []

    github.pulls[7].head_sha = head
    added = repo.commit("a script the base does not have", {"ci/other.yaml": MOCK})
    github.pulls[7].head_sha = added
    missing = gate(repo, github, base, added, env, **{"mock-script": "ci/other.yaml"})
    assert missing.returncode == 2
    assert "action input `mock-script`: ci/other.yaml is not in the base commit" in missing.stderr


def test_a_mistake_in_the_base_commit_s_mock_script_is_named_as_the_repository_names_it(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """Not by the private copy the action reads it from (/tmp/evalward-base-files-…)."""
    suite = dry_run_suite("Good day.")
    suite["ci/mock.yaml"] = "replies:\n  - match: { agent: support-bot\n"
    base = repo.commit("a dry-run script that does not parse", suite)
    repo.branch("feature")
    head = repo.commit("a new prompt", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt="V2")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = gate(repo, github, base, head, env, **{"mock-script": "ci/mock.yaml"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert f"problem in evalward resources of the base commit {base[:12]}:" in run.stderr
    assert "  ci/mock.yaml:" in run.stderr, run.stderr
    assert "evalward-base-files" not in run.stdout + run.stderr


def test_the_mock_script_comes_from_the_base_the_runs_are_compared_with(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A re-run of an older run replays its payload, whose base is the commit the base branch
    was at then (or another branch's, before the pull request was retargeted); the runs are
    compared with the base GitHub's API names now. What the base decides of the gate (its
    mock script here, its provider settings and comment template too) is read from that
    same commit, never from the payload's older one, whose replies pass."""
    old = repo.commit("agents, evals and replies that pass", dry_run_suite("Hello! All good."))
    base = repo.commit("stricter replies", {"ci/mock.yaml": MOCK.format(greeting="Good day.")})
    repo.branch("feature")
    head = repo.commit(
        "a new prompt", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)}
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = gate(repo, github, old, head, env, **{"mock-script": "ci/mock.yaml"})

    assert_fails_below_threshold(run, github)
    assert model.requests == []


# --- 4. forcing on-missing-secrets: skip ---------------------------------------------------


def test_switching_to_a_provider_without_a_key_is_not_a_skip(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    switched = SUPPORT_BOT.format(prompt=HEAD_PROMPT).replace(
        "openai/gpt-test", "anthropic/claude-test"
    )
    base, head = hostile_pr(repo, github, {"agents/support-bot.yaml": switched})

    run = gate(repo, github, base, head, env, **{"on-missing-secrets": "skip"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert run.outputs.get("result") != "skipped"
    assert "ANTHROPIC_API_KEY" in run.stderr
    assert "`on-missing-secrets: skip` does not apply" in run.stderr


def test_switching_to_a_model_without_a_price_does_not_escape_the_dollar_budget(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A model with no price costs nothing against `max-cost-usd`: a pull request that moves
    its agent to one (and prices it at 0 in its own evalward.yaml) must not spend freely."""
    priced = "pricing:\n  openai/gpt-test: { input: 1, output: 1 }\n"
    repo.commit("prices", {"evalward.yaml": priced})
    switched = SUPPORT_BOT.format(prompt=HEAD_PROMPT).replace("openai/gpt-test", "openai/gpt-big")
    own_price = priced + "  openai/gpt-big: { input: 0, output: 0 }\n"
    base, head = hostile_pr(
        repo, github, {"agents/support-bot.yaml": switched, "evalward.yaml": own_price}
    )
    script_model(model, head_greets_well=True)

    run = gate(repo, github, base, head, env, **{"max-cost-usd": "5"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert run.outputs.get("result") not in ("pass", "skipped")
    assert "openai/gpt-big has no price" in run.stdout + run.stderr
    assert not [r for r in model.requests if r["model"] == "gpt-big"]


def test_a_fork_without_any_key_is_still_skipped_when_asked(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The base's own agents need the key too: the job has no secrets (a fork)."""
    base, head = make_pr(repo, github)
    github.pulls[7].head_repo = "someone/agents"

    run = gate(repo, github, base, head, {}, **{"on-missing-secrets": "skip"})

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["result"] == "skipped"
    assert model.requests == []


# --- 5. answers from a cache the pull request fills ---------------------------------------


def test_a_committed_response_cache_is_not_read(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    config = "cache: { mode: read-write, dir: .evalward/responses }\n"
    base, _ = make_pr(repo, github)
    repo.checkout("main")
    base = repo.commit("a response cache", {"evalward.yaml": config})
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge main")
    head = repo.head()
    github.pulls[7].head_sha, github.pulls[7].base_sha = head, base

    # Replies from a good head, saved as the cache would save them...
    script_model(model, head_greets_well=True)
    good = gate(repo, github, base, head, env, cache="off")
    assert good.returncode == 0, good.stdout + good.stderr
    saved = {
        p.relative_to(repo.path).as_posix(): p.read_text()
        for p in (repo.path / ".evalward" / "responses").rglob("*.json")
    }
    assert saved
    shutil.rmtree(repo.path / ".evalward")
    # ...committed by the pull request, whose agent now greets badly.
    head = repo.commit("precomputed replies", saved)
    github.pulls[7].head_sha = head
    model.rules.clear()
    script_model(model, head_greets_well=False)
    calls = len(model.requests)

    run = gate(repo, github, base, head, env, cache="off")

    assert run.returncode == 1, run.stdout + run.stderr
    assert len(model.requests) > calls, "the replies came from the committed files"
    assert "::warning::response cache not used:" in run.stdout
    assert "are committed in the repository" in run.stdout


def test_a_result_cache_inside_a_submodule_is_not_read(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    honest = gate(repo, github, base, head, env, **{"cache-dir": "vendor/cache"})
    assert honest.returncode == 0, honest.stdout + honest.stderr
    # The passing results, in a repository of their own that the PR adds as a submodule.
    results = GitRepo(tmp_path / "results")
    shutil.copytree(repo.path / "vendor" / "cache", results.path / "cache")
    results.commit("passing results")
    shutil.rmtree(repo.path / "vendor")
    repo.git(
        "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(results.path), "vendor"
    )
    repo.write({"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT) + "# again\n"})
    head = repo.commit("the results, as a submodule")
    github.pulls[7].head_sha = head
    model.rules.clear()
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env, **{"cache-dir": "vendor/cache"})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["cacheHits"] == 0
    assert "::warning::result cache not used: vendor is a git submodule" in run.stdout


WATCHING = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: reader }}
spec:
  runtime:
    command: [{python}, agent/reader.py]
  watch: ["agent/**"]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: reader-eval }}
spec:
  targetAgent: reader
  fixtures: [reads]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: reads }}
spec:
  targetAgent: reader
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions:
    - {{ type: contains, value: GOOD }}
"""

READER = """\
import json, pathlib, sys
sys.stdin.readline()
said = pathlib.Path("agent/node_modules/lib/answer.txt").read_text().strip()
print(json.dumps({"type": "final", "content": said}), flush=True)
"""


def test_a_change_under_node_modules_that_change_detection_counts_is_not_a_cached_pass(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """The cache key hashes what `watch` covers as change detection sees it: a committed
    `node_modules/` included."""
    files = {
        "agents.yaml": WATCHING.format(python=json.dumps(sys.executable)),
        "agent/reader.py": READER,
        "agent/node_modules/lib/answer.txt": "GOOD\n",
        ".gitignore": ".evalward/\n",  # the cache is not committed, so it is read
    }
    base = repo.commit("a reader", files)
    repo.branch("feature")
    github.add_pull(FakePull(number=7, head_sha=base, base_sha=base))
    first = repo.commit("touch", {"agent/reader.py": READER + "# 1\n"})
    github.pulls[7].head_sha = first
    isolation = {"agent-isolation": "off"}  # the reader runs this interpreter
    assert gate(repo, github, base, first, env, **isolation).returncode == 0

    head = repo.commit("a dependency changes", {"agent/node_modules/lib/answer.txt": "BAD\n"})
    github.pulls[7].head_sha = head

    run = gate(repo, github, base, head, env, **isolation)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "result cache not used" not in run.stdout
    head_run = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert not head_run["cached"] and head_run["output"] == "BAD"
    assert (
        "watched path agent/node_modules/lib/answer.txt changed"
        in (run.results()["changedAgents"]["reader"])
    )


# --- 6. writing outside the workspace, reading outside the repository ----------------------


@pytest.mark.parametrize("link", [".evalward/out/audit.jsonl", ".evalward/out"])
def test_a_committed_symlink_in_the_output_dir_is_refused(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
    link: str,
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "audit.jsonl").write_text("precious\n")
    base, _ = make_pr(repo, github)
    target = victim / "audit.jsonl" if link.endswith(".jsonl") else victim
    (repo.path / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, repo.path / link)
    head = repo.commit("a link")
    github.pulls[7].head_sha = head
    github.add_label(7, "force-eval-bypass", actor="maintainer")
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env, **{"output-dir": ".evalward/out"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert "action input `output-dir`:" in run.stderr and "is a symbolic link" in run.stderr
    assert sorted(p.name for p in victim.iterdir()) == ["audit.jsonl"]
    assert (victim / "audit.jsonl").read_text() == "precious\n"


def test_a_fixture_file_linked_from_outside_the_repository_is_refused(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(GREETING_FIXTURE.replace("name: greeting", "name: planted"))
    base, _ = make_pr(repo, github)
    os.symlink(outside, repo.path / "evals" / "fixtures" / "planted.yaml")
    head = repo.commit("a fixture from elsewhere")
    github.pulls[7].head_sha = head

    run = gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    expected = (
        "evals/fixtures/planted.yaml: the file is a symbolic link to a file outside the repository"
    )
    assert expected in run.stderr
    body = comment(github)
    assert "this pull request's resources do not load" in body and expected in body
    assert run.outputs["result"] == "fail"


def test_a_root_that_links_outside_the_repository_is_refused(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    base, _ = make_pr(repo, github)
    repo.checkout("main")
    base = repo.commit("roots", {"evalward.yaml": "roots: [agents, evals]\n"})
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge main")
    shutil.copytree(repo.path / "evals", tmp_path / "elsewhere")
    repo.remove("-r", "evals")
    os.symlink(tmp_path / "elsewhere", repo.path / "evals")
    head = repo.commit("evals live elsewhere now")
    github.pulls[7].head_sha, github.pulls[7].base_sha = head, base

    run = gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    assert "evalward.yaml:1:17: roots[1]: root 'evals' leads outside the repository" in run.stderr


# --- the base branch as it is now, and a base that does not load ---------------------------


def test_the_base_branch_tip_gates_not_the_merge_base(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Branched off before main raised the bar: main's 0.9 gates, not the old 0.5."""
    repo.commit(
        "agents and evals",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/support-bot.yaml": SUPPORT_EVAL.replace("0.9", "0.5"),
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "break the agent", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)}
    )
    repo.checkout("main")
    base = repo.commit("raise the bar", {"evals/support-bot.yaml": SUPPORT_EVAL})
    repo.checkout("feature")
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)

    assert_fails_below_threshold(gate(repo, github, base, head, env), github)


def test_a_base_that_does_not_load_fails_the_gate_instead_of_using_the_prs_definitions(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    broken = GREETING_FIXTURE.replace("kind: edge", "kind: edge\n  colour: red")
    base = repo.commit(
        "one fixture broken on main",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/support-bot.yaml": SUPPORT_EVAL,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": broken,
        },
    )
    repo.branch("feature")
    repo.remove("evals/support-bot.yaml")
    head = repo.commit(
        "fix the fixture; also break the agent and drop its Eval",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT),
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    assert "in evalward resources of the base branch" in run.stderr
    assert "colour" in run.stderr
    body = comment(github)
    assert "the resources of the base branch" in body and "do not load" in body
    # the way on, in the command line's first words (`prepare.BASE_FIRST`), then the bypass
    way = f"{BASE_FIRST}, or have someone with write access apply the "
    label = "label to merge this pull request as it is (the bypass, audited)."
    assert f"{way}`force-eval-bypass` {label}" in run.stderr
    assert f"{way}\\`force-eval-bypass\\` {label}" in body
    assert model.requests == []


def _linked_eval(repo: GitRepo) -> str:
    repo.write(
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "shared/support-eval.txt": SUPPORT_EVAL,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        }
    )
    (repo.path / "evals").mkdir(exist_ok=True)
    os.symlink("../shared/support-eval.txt", repo.path / "evals" / "support-bot.yaml")
    base = repo.commit("evals, one shared through a link")
    repo.branch("feature")
    return base


def test_editing_the_target_of_a_linked_eval_does_not_change_the_base_definition(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = _linked_eval(repo)
    head = repo.commit(
        "break the agent, lower the bar through the link",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT),
            "shared/support-eval.txt": SUPPORT_EVAL.replace("0.9", "0.5"),
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)

    assert_fails_below_threshold(gate(repo, github, base, head, env), github)


def test_deleting_a_linked_eval_does_not_remove_it_from_the_base(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = _linked_eval(repo)
    repo.remove("evals/support-bot.yaml")
    head = repo.commit(
        "break the agent, drop the link",
        {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)},
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)

    assert_fails_below_threshold(gate(repo, github, base, head, env), github)


AGENTV = """\
execution: { target: support-bot }
evalcases:
  - id: greeting
    input:
      - role: user
        content:
          - { type: text, value: "Hello there!" }
          - { type: file, value: ./note.md }
    assertions:
      - { type: contains, value: help }
  - id: order-status
    input:
      - role: user
        content:
          - { type: text, value: "Where is my order 12345?" }
          - { type: file, value: ./note.md }
    assertions:
      - { type: contains, value: shipped }
"""


def test_dropping_a_case_from_an_agentv_file_with_file_references_does_not_pass(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = repo.commit(
        "an AgentV suite",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/eval.yaml": SUPPORT_EVAL,
            "evals/support.yaml": AGENTV,
            "evals/note.md": "Be kind.\n",
        },
    )
    repo.branch("feature")
    kept = "execution: { target: support-bot }\nevalcases:\n  - id: order-status\n"
    head = repo.commit(
        "break the agent; tidy the suite",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT),
            "evals/support.yaml": kept + AGENTV.split("  - id: order-status\n")[1],
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert run.returncode == 1, run.stdout + run.stderr
    failing = {f["fixture"] for f in run.results()["fixtures"] if f["status"] != "pass"}
    assert ("greeting" in failing) or any("greeting" in name for name in failing), failing


def test_evalward_yaml_defaults_come_from_the_base(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    no_threshold = SUPPORT_EVAL.replace("  scoring:\n    passThreshold: 0.9\n", "")
    base = repo.commit(
        "evals with a default threshold",
        {
            "evalward.yaml": "defaults: { scoring: { passThreshold: 0.9 } }\n",
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/support-bot.yaml": no_threshold,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "break the agent, lower the default",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT),
            "evalward.yaml": "defaults: { scoring: { passThreshold: 0.5 } }\n",
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)

    assert_fails_below_threshold(gate(repo, github, base, head, env), github)


def test_a_prompt_file_named_through_a_link_changes_the_agent_when_its_target_changes(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    linked = SUPPORT_BOT.format(prompt="x").replace(
        '  system: "x"\n', "  systemFile: agents/prompt.md\n"
    )
    repo.write(
        {
            "agents/support-bot.yaml": linked,
            "prompts/support.md": BASE_PROMPT,
            "evals/support-bot.yaml": SUPPORT_EVAL,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        }
    )
    os.symlink("../prompts/support.md", repo.path / "agents" / "prompt.md")
    base = repo.commit("a prompt shared through a link")
    repo.branch("feature")
    head = repo.commit("a worse prompt", {"prompts/support.md": HEAD_PROMPT})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert run.results()["changedAgents"] == {"support-bot": ["prompts/support.md changed"]}
    assert_fails_below_threshold(run, github)


ANSWER_READER = """\
import json, pathlib, sys
sys.stdin.readline()
said = pathlib.Path("agent/answer.txt").read_text(encoding="utf-8").strip()
print(json.dumps({"type": "final", "content": said}), flush=True)
"""


def test_a_gitattributes_that_changes_how_an_agents_files_are_checked_out_changes_the_agent(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """No blob of the agent changes, but the checkout writes its file as UTF-16: the agent
    reads something else than before, so its Evals run."""
    files = {
        "agents.yaml": WATCHING.format(python=json.dumps(sys.executable)),
        "agent/reader.py": ANSWER_READER,
        "agent/answer.txt": "GOOD\n",
    }
    base = repo.commit("a reader", files)
    repo.branch("feature")
    attributes = "agent/answer.txt working-tree-encoding=UTF-16LE-BOM\n"
    repo.write({".gitattributes": attributes})
    repo.git("add", ".gitattributes")  # `add -A` would read answer.txt as UTF-16
    repo.git("commit", "-q", "-m", "how files are checked out")
    head = repo.head()
    (repo.path / "agent" / "answer.txt").unlink()
    repo.git("checkout", "--", "agent/answer.txt")  # as actions/checkout writes it
    assert (repo.path / "agent" / "answer.txt").read_bytes().startswith(b"\xff\xfe")
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = gate(repo, github, base, head, env, **{"agent-isolation": "off"})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.results()["changedAgents"] == {
        "reader": [".gitattributes changed: it decides how the agent's files are checked out"]
    }
    head_run = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert head_run["status"] != "pass"


# --- budgets, keys and templates ------------------------------------------------------------


def test_new_fixtures_cannot_push_gating_fixtures_out_of_the_budget(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = hostile_pr(repo, github, trivial_critical_fixtures("aaa", 4))
    script_model(model, head_greets_well=False)

    run = gate(
        repo, github, base, head, env, **{"max-model-calls": "8", "allow-incomplete": "true"}
    )

    assert run.returncode == 1, run.stdout + run.stderr
    ran = {(f["side"], f["fixture"]) for f in run.results()["fixtures"]}
    assert {("head", "greeting"), ("head", "order-status")} <= ran
    assert {r["fixture"] for r in run.results()["skippedRuns"]} <= {f"aaa-{n}" for n in range(4)}


PR_EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata:
  name: pr-eval
spec:
  targetAgent: support-bot
  fixtureSelector:
    matchLabels: { suite: pr }
"""


def an_eval_of_its_own(count: int) -> dict[str, str]:
    """An Eval the pull request adds, of `count` critical fixtures any greeting passes (their
    label is not the base Eval's, so none of them is pending there)."""
    trivial = trivial_critical_fixtures("pr", count)
    return {"evals/pr-eval.yaml": PR_EVAL} | {
        path: text.replace("agent: support-bot }", "suite: pr }") for path, text in trivial.items()
    }


def test_an_eval_the_pr_adds_cannot_push_the_bases_fixtures_out_of_the_budget(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Its three critical fixtures (2 estimated calls each) sorted first would leave room for
    order-status (high, 2 calls a side) alone, and the regressing greeting (low) out: the
    base's fixtures come first, the pull request's Eval gets what they leave."""
    base, head = hostile_pr(repo, github, an_eval_of_its_own(3))
    script_model(model, head_greets_well=False)

    run = gate(
        repo, github, base, head, env, **{"max-model-calls": "12", "allow-incomplete": "true"}
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    heads = {e["eval"]: e["score"] for e in run.results()["evals"] if e["side"] == "head"}
    assert heads == {"support-bot-eval": 0.8, "pr-eval": 1.0}
    body = comment(github)
    assert "❌ evalward" in body and "| support-bot-eval |" in body
    ran = {(f["side"], f["fixture"]) for f in run.results()["fixtures"]}
    assert {("head", "greeting"), ("head", "order-status"), ("head", "pr-0")} <= ran
    skipped = {
        (r["eval"], r["fixture"]) for r in run.results()["skippedRuns"] if r["side"] == "head"
    }
    assert skipped == {("pr-eval", "pr-2")}
    assert "skipped by the budget, allowed" not in body


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ("12", (["pr-2"], "every affected Eval meets its threshold (1 run skipped by the")),
        (
            "8",
            (
                ["pr-0", "pr-1", "pr-2"],
                "every affected Eval that ran meets its threshold; pr-eval ran nothing: the "
                "budget skipped every run of it (allowed by allow-incomplete)",
            ),
        ),
    ],
    ids=["a fixture of it", "all of it"],
)
def test_control_an_honest_eval_the_pr_adds_that_does_not_fit_is_skipped_and_allowed(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    calls: str,
    expected: tuple[list[str], str],
) -> None:
    """The same added Eval on a head that greets well: the base's fixtures all run, what of
    the pull request's own does not fit is skipped, and allow-incomplete allows it. Where the
    budget holds the base's own runs alone, the pull request's Eval ran nothing and has met
    no threshold: the reason names it."""
    base, _ = make_pr(repo, github)
    head = repo.commit("an Eval of our own", an_eval_of_its_own(3))
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=True)

    run = gate(
        repo, github, base, head, env, **{"max-model-calls": calls, "allow-incomplete": "true"}
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["result"] == "pass"
    skipped, said = expected
    assert [(r["eval"], r["fixture"]) for r in run.results()["skippedRuns"]] == [
        ("pr-eval", fixture) for fixture in skipped
    ]
    assert f"{len(skipped)} run(s) skipped by the budget" in comment(github)
    assert run.results()["reason"].startswith(said), run.results()["reason"]


def inflated_tool(prompt: str) -> str:
    """The support bot whose order lookup (the tool the greeting names) returns 400 KB."""
    big = json.dumps({"status": "shipped", "eta": "2026-11-25", "history": "x" * 400_000})
    return SUPPORT_BOT.format(prompt=prompt).replace('{ status: shipped, eta: "2026-11-25" }', big)


PRICED = "pricing:\n  openai/gpt-test: { input: 1, output: 0.01 }\n"
"""$1 a million tokens read: the support bot's runs are estimated at about $0.001 as the base
defines it, and $0.10 each with a 400 KB tool result. Its output is cheap, so that a call
held at its worst while in flight (the 128,000 tokens an agent without `maxTokens` may
write) holds little more than what it reads: about $0.004 of the base's, $0.40 of a call
that reads the 400 KB result."""


def test_a_costlier_head_agent_cannot_push_the_bases_fixtures_out_of_the_budget(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Estimated from the head's agent, order-status (high) would fit $0.15 and the
    regressing greeting (low) not: the base's runs are estimated from the base's agent, and
    every run is kept. The head's calls that read the 400 KB result may cost $0.40 at their
    worst, which the budget cannot hold: they are refused, and their runs are errors."""
    repo.commit("prices", {"evalward.yaml": PRICED})
    base, head = hostile_pr(repo, github, {"agents/support-bot.yaml": inflated_tool(HEAD_PROMPT)})
    script_model(model, head_greets_well=False)

    run = gate(
        repo, github, base, head, env, **{"max-cost-usd": "0.15", "allow-incomplete": "true"}
    )

    assert (run.returncode, run.outputs["result"]) == (1, "fail"), run.stdout + run.stderr
    assert run.results()["skippedRuns"] == []
    assert "skipped by the budget" not in comment(github)
    heads = [f for f in run.results()["fixtures"] if f["side"] == "head"]
    assert {f["fixture"] for f in heads} == {"greeting", "order-status"}
    assert all(f["status"] == "error" and f["budget_refused"] for f in heads), heads


def test_control_an_honest_costlier_head_agent_within_the_bases_budget_passes(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The same bigger tool on a head that greets well: the base's fixtures fit the budget
    as the base defines them, so every one runs and the gate passes, with no
    allow-incomplete; the budget holds the call that reads the 400 KB result at its worst."""
    repo.commit("prices", {"evalward.yaml": PRICED})
    base, _ = make_pr(repo, github)
    head = repo.commit(
        "a fuller order record", {"agents/support-bot.yaml": inflated_tool(HEAD_PROMPT)}
    )
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=True)

    run = gate(repo, github, base, head, env, **{"max-cost-usd": "0.45"})

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["result"] == "pass"
    assert run.results()["skippedRuns"] == []


WHERE_READ = SUPPORT_EVAL.replace(
    "passThreshold: 0.9",
    "passThreshold: 0.5\n    gate: { failOnRegression: none, baseRuns: whereRead }",
)
"""The support bot's Eval deciding on the head alone: a failing greeting (0.8) still passes
it, and the base runs a fixture only after the head failed it (a round of its own)."""


def reading_the_head_alone(
    repo: GitRepo, github: FakeGitHub, files: dict[str, str]
) -> tuple[str, str]:
    """make_pr with the base's Eval `WHERE_READ`, and a head that also commits `files`."""
    make_pr(repo, github)
    repo.checkout("main")
    base = repo.commit("our Eval reads the head alone", {"evals/support-bot.yaml": WHERE_READ})
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge main")
    head = repo.commit("and more", files) if files else repo.head()
    github.pulls[7].head_sha, github.pulls[7].base_sha = head, base
    return base, head


def test_the_base_runs_a_pr_eval_leaves_no_room_for_are_not_excused_by_allow_incomplete(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The head fails the greeting: its held-back base run (2 calls) is asked for after the
    head's runs (4 calls) and the pull request's own Eval (2) filled the budget of 6. The
    base's own runs would have fit alone: the gate is incomplete, whatever allow-incomplete
    says."""
    base, head = reading_the_head_alone(repo, github, an_eval_of_its_own(1))
    script_model(model, head_greets_well=False)

    run = gate(
        repo, github, base, head, env, **{"max-model-calls": "6", "allow-incomplete": "true"}
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "incomplete"
    skipped = [(r["side"], r["fixture"]) for r in run.results()["skippedRuns"]]
    assert skipped == [("base", "greeting")]
    said = "1 runs of fixtures the base branch gates with were skipped by the budget"
    assert said in run.results()["reason"]
    assert "allow-incomplete does not excuse them" in comment(github)


def test_a_base_run_only_the_heads_failure_asks_for_is_not_excused_by_allow_incomplete(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """No Eval of the pull request's own, and a budget of 4 that holds the base's own runs
    (the head's of its two fixtures): the base run the head's failed greeting asks for
    afterwards does not fit. That round is the pull request's doing, not the base's: the gate
    is incomplete, whatever allow-incomplete says."""
    base, head = reading_the_head_alone(repo, github, {})
    script_model(model, head_greets_well=False)

    run = gate(
        repo, github, base, head, env, **{"max-model-calls": "4", "allow-incomplete": "true"}
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "incomplete"
    skipped = [(r["side"], r["fixture"]) for r in run.results()["skippedRuns"]]
    assert skipped == [("base", "greeting")]
    assert "allow-incomplete does not excuse them" in comment(github)


def test_control_base_runs_the_budget_cannot_hold_alone_are_allowed_and_said_first(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The same Eval with no Eval of the pull request's own, and a budget of 2: the base's
    own runs (the head's of its two fixtures, 4 calls) do not fit it, so allow-incomplete
    lets the gate pass, and the comment's headline says what the verdict does not cover."""
    base, head = reading_the_head_alone(repo, github, {})
    script_model(model, head_greets_well=False)

    run = gate(
        repo, github, base, head, env, **{"max-model-calls": "2", "allow-incomplete": "true"}
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["result"] == "pass"
    assert [(r["side"], r["fixture"]) for r in run.results()["skippedRuns"]] == [
        ("head", "greeting")
    ]
    headline = comment(github).split("\n")[1]
    assert headline == (
        "## ✅ evalward: every affected Eval passes without some of its runs — 1 runs of "
        "fixtures the base branch gates with were not run: the budget cannot hold the base's "
        "own runs of support-bot-eval (allowed by allow-incomplete)"
    )


OTHER_AGENT = AGENT.replace("name: helper", "name: other").replace("a helper", "another helper")


def labelled_fixture(agent: str, name: str, severity: str) -> str:
    """A fixture of `agent`'s Eval (selected by its label) that "the answer" passes."""
    return f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: {agent} }} }}
spec:
  targetAgent: {agent}
  severity: {severity}
  input: {{ type: prompt, payload: {{ prompt: "question about {name}" }} }}
  assertions:
    - {{ type: contains, value: "the answer" }}
"""


def two_agents(
    repo: GitRepo,
    model: ScriptedModelServer,
    *,
    touch_other: bool,
    breaks_f1: bool,
    helper: tuple[str, ...] = ("f0", "f1"),
) -> tuple[str, str]:
    """A base of two agents: helper (fixtures `helper`, medium: 2 calls each, both sides)
    and other (o0, o1, critical: 4 calls). The head changes helper (failing f1 when it
    `breaks_f1`) and, when it will `touch_other`, makes a harmless edit of other, whose Eval
    then runs first."""
    fixed = "execution: { repsPerFixture: 1 }", "scoring: { passThreshold: 1.0 }"
    base = repo.commit(
        "two agents",
        {
            "agent.yaml": AGENT.format(version="v1"),
            "other.yaml": OTHER_AGENT.format(version="w1"),
            "eval.yaml": helper_eval(*fixed),
            "other-eval.yaml": eval_for("other", by_label("other"), *fixed),
            "fixtures.yaml": "---\n".join(
                labelled_fixture("helper", name, "medium") for name in helper
            ),
            "other-fixtures.yaml": "---\n".join(
                labelled_fixture("other", name, "critical") for name in ("o0", "o1")
            ),
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("change")
    files = {"agent.yaml": AGENT.format(version="v2")}
    if touch_other:
        files["other.yaml"] = OTHER_AGENT.format(version="w2")
    head = repo.commit("a new prompt", files)
    right = [True] * 10
    scripted(model, "v1", dict.fromkeys(helper, right))
    scripted(model, "v2", {name: [name != "f1" or not breaks_f1] * 10 for name in helper})
    scripted(model, "w1", {"o0": right, "o1": right})
    scripted(model, "w2", {"o0": right, "o1": right})
    return base, head


def test_touching_another_agent_cannot_make_the_budget_excuse_a_fixture_the_head_breaks(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A budget of 6 holds helper's Eval alone (4 calls), which fails f1. A harmless edit of
    other puts its critical fixtures first, and f1 is left out: its Eval's own runs would
    have fit alone, so allow-incomplete does not excuse it, and the gate is incomplete."""
    base, head = two_agents(repo, model, touch_other=True, breaks_f1=True)
    budget = {"max-model-calls": "6", "allow-incomplete": "true", "cache": "off"}

    run = gate_pull_request(repo, github, base, head, env, budget)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "incomplete"
    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    skipped = {(r["eval"], r["fixture"]) for r in document["skippedRuns"]}
    assert skipped == {("helper-eval", "f1")}
    said = "2 runs of fixtures the base branch gates with were skipped by the budget"
    assert said in document["reason"]
    assert "allow-incomplete does not excuse them" in comment(github)
    assert "cannot hold the base's own runs" not in comment(github)


def test_control_an_eval_whose_own_runs_cannot_fit_alone_is_excused_and_named(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Helper's Eval of four fixtures (8 calls) does not fit a budget of 7 even alone: the
    run left out of it alone (f3) is excused, and the headline names the one Eval whose runs
    the verdict does not cover."""
    helper = ("f0", "f1", "f2", "f3")
    base, head = two_agents(repo, model, touch_other=False, breaks_f1=False, helper=helper)
    budget = {"max-model-calls": "7", "allow-incomplete": "true", "cache": "off"}

    run = gate_pull_request(repo, github, base, head, env, budget)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["result"] == "pass"
    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    skipped = {(r["eval"], r["fixture"]) for r in document["skippedRuns"]}
    assert skipped == {("helper-eval", "f3")}
    headline = comment(github).split("\n")[1]
    assert headline.endswith(
        "— 2 runs of fixtures the base branch gates with were not run: the budget cannot "
        "hold the base's own runs of helper-eval (allowed by allow-incomplete)"
    ), headline


@pytest.mark.parametrize("budget", ["7", "5"])
def test_touching_another_agent_cannot_choose_where_the_budget_cuts_an_eval_over_it_alone(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    budget: str,
) -> None:
    """Helper's Eval (8 calls) is over a budget of 7 or 5 even alone, and the head breaks its
    f1, which runs (and fails) when the Eval is trimmed alone. A harmless edit of other puts
    its critical fixtures first and leaves f1 out (at 5, every run of helper): the pull
    request chose where the cut falls, so allow-incomplete excuses none of it."""
    helper = ("f0", "f1", "f2", "f3")
    base, head = two_agents(repo, model, touch_other=True, breaks_f1=True, helper=helper)
    inputs = {"max-model-calls": budget, "allow-incomplete": "true", "cache": "off"}

    run = gate_pull_request(repo, github, base, head, env, inputs)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "incomplete"
    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    assert ("helper-eval", "f1") in {(r["eval"], r["fixture"]) for r in document["skippedRuns"]}
    assert "allow-incomplete does not excuse them" in comment(github)
    assert "cannot hold the base's own runs" not in comment(github)


def test_a_base_agent_without_a_price_refuses_a_dollar_budget_its_head_runs_are_counted_by(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The budget counts the head's runs of the base's fixtures as the base's agent would
    spend them: with that agent on a model without a price (its base runs held back), no
    dollar of them could be counted, and whatever the pull request adds would fit for free."""
    unpriced = SUPPORT_BOT.format(prompt=BASE_PROMPT).replace("gpt-test", "gpt-old")
    make_pr(repo, github)
    repo.checkout("main")
    base = repo.commit(
        "a model of our own",
        {"evals/support-bot.yaml": WHERE_READ, "agents/support-bot.yaml": unpriced}
        | {"evalward.yaml": PRICED},
    )
    repo.checkout("feature")
    repo.git("merge", "-q", "-X", "ours", "main", "-m", "merge main")
    head = repo.commit("an Eval of our own", an_eval_of_its_own(3))
    github.pulls[7].head_sha, github.pulls[7].base_sha = head, base
    script_model(model, head_greets_well=True)

    run = gate(repo, github, base, head, env, **{"max-cost-usd": "5"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert "openai/gpt-old has no price" in run.stdout + run.stderr
    assert model.requests == []


ADAPTIVE_REPS = SUPPORT_EVAL + "  execution:\n    reps: { min: 1, max: 3 }\n"


def _provider_switch(repo: GitRepo, github: FakeGitHub, eval_text: str) -> tuple[str, str]:
    """The support bot's Eval `eval_text` beside an old agent on a provider whose key the job
    lacks, which no plan of this change runs; the pull request changes the bot's prompt and
    moves it to that provider."""
    legacy = (
        MATH_TUTOR.replace("math-tutor", "legacy")
        .replace("tutor-add", "legacy-add")
        .replace("openai/gpt-test", "anthropic/claude-test")
    )
    base = repo.commit(
        "agents and evals",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "agents/legacy.yaml": legacy,
            "evals/support-bot.yaml": eval_text,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        },
    )
    repo.branch("feature")
    switched = SUPPORT_BOT.format(prompt=HEAD_PROMPT).replace(
        "openai/gpt-test", "anthropic/claude-test"
    )
    head = repo.commit("switch provider", {"agents/support-bot.yaml": switched})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    return base, head


@pytest.mark.parametrize(
    "eval_text",
    [SUPPORT_EVAL, ADAPTIVE_REPS, WHERE_READ],
    ids=["fixed reps", "adaptive reps", "base runs where read"],
)
def test_an_unrelated_base_agent_without_a_key_does_not_make_a_provider_switch_skippable(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    eval_text: str,
) -> None:
    """The base's side of this plan needs only the key the job holds, whether its runs are
    planned at once or come in later rounds (adaptive reps; `baseRuns: whereRead`, once the
    head has failed): `skip` does not apply, and the job fails (exit 2)."""
    assert "ANTHROPIC_API_KEY" not in env and "OPENAI_API_KEY" in env
    base, head = _provider_switch(repo, github, eval_text)
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env, **{"on-missing-secrets": "skip"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert "`on-missing-secrets: skip` does not apply" in run.stderr
    assert run.outputs.get("result") != "skipped"


def test_a_merge_queue_group_of_a_provider_switch_is_not_skipped_either(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The merge queue that docs/github.md pairs with `skip` gates the same change in its
    group, with the same keys: not skipped there either."""
    base, head = _provider_switch(repo, github, ADAPTIVE_REPS)
    script_model(model, head_greets_well=False)
    group = queue_group(repo, base, head)
    event = merge_group_event(github.repository, 7, base, group)

    run = run_group(repo, github, event, env, inputs={"on-missing-secrets": "skip"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert "`on-missing-secrets: skip` does not apply" in run.stderr


RAW_TEMPLATE = (
    "{% for c in ctx.comparisons %}{% for f in c.fixtures %}{% for r in f.head %}"
    "OUT[{{ r.output }}]\n{% endfor %}{% endfor %}{% endfor %}"
)


def test_bidi_controls_are_shown_by_name_even_through_a_template_that_prints_raw_output(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, _ = make_pr(repo, github)
    repo.checkout("main")
    base = repo.commit("our template", {"ci/c.md.j2": RAW_TEMPLATE})
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge main")
    head = repo.head()
    github.pulls[7].head_sha, github.pulls[7].base_sha = head, base
    model.script("BASE-V1", text("Hello \u202egnitaerg"))
    model.script("HEAD-V2", text("Hello \u202egnitaerg"))

    run = gate(repo, github, base, head, env, **{"comment-template": "ci/c.md.j2"})

    body = comment(github)
    assert "OUT[Hello <U+202E>gnitaerg]" in body
    assert "\u202e" not in body and "\u202e" not in run.summary


# --- pull_request actions and shards ----------------------------------------------------------


def test_an_edited_title_gates_the_head_rather_than_skipping(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    event = pull_request_event(github.repository, 7, base, head, action="edited")

    run = run_action(repo.path, github, event, env=env)

    assert_fails_below_threshold(run, github)


def test_a_manual_run_on_the_pr_branch_does_not_write_the_gates_check_or_status(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The author drops the Eval on their branch and runs the workflow there by hand, with no
    `pr`: the branch's own Evals pass, on the pull request's head commit. That run must not
    put a later `success` under the gate's name, which GitHub would count."""
    _, head = hostile_pr(repo, github, remove=("evals/support-bot.yaml",))
    script_model(model, head_greets_well=False)
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))

    manual = run_action(
        repo.path,
        github,
        {"ref": "refs/heads/feature", "inputs": {}},
        env={**env, "GITHUB_REF": "refs/heads/feature", "GITHUB_SHA": head},
        event_name="workflow_dispatch",
        inputs={"check-run": "true"},
    )

    assert manual.returncode == 0 and manual.outputs["result"] == "pass", manual.stderr
    written = [(s["context"], s["state"]) for s in github.statuses if s["sha"] == head]
    assert written == [("evalward run (evals/gate)", "success")]
    named = [(c["name"], c["conclusion"]) for c in github.check_runs if c["head_sha"] == head]
    assert named == [("evalward run (evals/gate)", "success")]


def test_shards_and_their_merge_keep_evals_that_did_not_run(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    base, head = hostile_pr(repo, github, remove=("agents/math-tutor.yaml",))
    script_model(model, head_greets_well=True)
    event = pull_request_event(github.repository, 7, base, head)
    shards = tmp_path / "shards"
    run_shards(repo.path, github, event, shards, env=env)

    merged = run_action(
        repo.path,
        github,
        event,
        inputs={"merge": str(shards / "shard-*-of-2.json"), "shard-key": SHARD_KEY},
        env=env,
        run_dir=tmp_path / "runner-merge",
    )

    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert merged.results()["notRun"] == {"math-tutor-eval": "agent math-tutor was removed"}
    assert "agent math-tutor was removed; its Eval math-tutor-eval did not run" in comment(github)


def test_a_merge_refuses_parts_of_another_commit_or_parts_the_checkout_brings(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    shards = tmp_path / "shards"
    part = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        inputs={"shard": "1/1", "output-dir": str(shards), "shard-key": SHARD_KEY},
        env=env,
        run_dir=tmp_path / "runner-1",
    )
    assert part.returncode == 0, part.stdout + part.stderr
    later = repo.commit("another head", {"notes.txt": "x"})
    github.pulls[7].head_sha = later

    stale = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, later),
        inputs={"merge": str(shards / "shard-*.json"), "shard-key": SHARD_KEY},
        env=env,
        run_dir=tmp_path / "runner-merge",
    )
    assert stale.returncode == 2
    assert "holds results for commit" in stale.stderr

    committed = repo.commit(
        "precomputed shard results",
        {"shards/shard-1-of-1.json": (shards / "shard-1-of-1.json").read_text()},
    )
    github.pulls[7].head_sha = committed
    forged = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, committed),
        inputs={"merge": "shards/shard-*.json", "shard-key": SHARD_KEY},
        env=env,
        run_dir=tmp_path / "runner-forged",
    )
    assert forged.returncode == 2
    assert "is committed in the repository" in forged.stderr


# --- 7. making the agent hang past its timeout ------------------------------------------------

HANGING_SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: helper }}
spec:
  runtime:
    command: [{python}, agent/helper.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: helper-eval }}
spec:
  targetAgent: helper
  fixtures: [greets, thanks]
  scoring: {{ passThreshold: 1.0 }}
  execution: {{ timeoutSeconds: 3 }}  # a helper that answers needs ~0.1 s: a wide margin
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: greets }}
spec:
  targetAgent: helper
  input: {{ type: prompt, payload: {{ prompt: greet }} }}
  assertions:
    - {{ type: contains, value: hello }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: thanks }}
spec:
  targetAgent: helper
  input: {{ type: prompt, payload: {{ prompt: thank }} }}
  assertions:
    - {{ type: contains, value: thank you }}
    - {{ type: toolNotCalled, tool: issue_refund }}
"""

HELPER = """\
import json, sys, time
request = json.loads(sys.stdin.readline())
prompt = request["messages"][-1]["content"]
HANG_ON = {hang_on!r}
if prompt in HANG_ON:
    time.sleep(600)  # past execution.timeoutSeconds: no terminal event ever comes
said = {{"greet": "hello there", "thank": "{thanks}"}}[prompt]
print(json.dumps({{"type": "final", "content": said}}), flush=True)
"""


def report_rows(page: str) -> dict[str, Any]:
    """report.html's list rows by fixture name (the page's embedded data)."""
    data = re.search(r'<script type="application/json" id="ew-data">(.*?)</script>', page, re.S)
    assert data is not None
    document = json.loads(data.group(1))
    return {"flags": document["meta"]["flags"], **{r["f"]: r for r in document["rows"]}}


@pytest.mark.parametrize(
    ("hang_on", "thanks", "hung"),
    [
        # a head that would fail `thanks` hangs on it instead, and passes the rest
        (["thank"], "you're welcome", ["thanks"]),
        # a head that hangs on every fixture
        (["greet", "thank"], "thank you", ["greets", "thanks"]),
    ],
    ids=["hangs-where-it-would-fail", "hangs-everywhere"],
)
def test_an_agent_that_hangs_past_its_timeout_is_skipped_and_fails_the_gate(
    repo: GitRepo,
    github: FakeGitHub,
    env: dict[str, str],
    hang_on: list[str],
    thanks: str,
    hung: list[str],
) -> None:
    suite = HANGING_SUITE.format(python=json.dumps(sys.executable))
    base = repo.commit(
        "a helper",
        {"agents.yaml": suite, "agent/helper.py": HELPER.format(hang_on=[], thanks="thank you")},
    )
    repo.branch("feature")
    head = repo.commit(
        "a faster helper",
        {"agent/helper.py": HELPER.format(hang_on=hang_on, thanks=thanks)},
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = gate(repo, github, base, head, env, **{"agent-isolation": "off"})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    results = run.results()
    head_eval = next(e for e in results["evals"] if e["side"] == "head")
    base_eval = next(e for e in results["evals"] if e["side"] == "base")
    assert base_eval["passed"] is True and base_eval["score"] == 1.0
    # hanging scores exactly as failing: 1 of 2 fixtures passes, or none
    assert (head_eval["passed"], head_eval["score"]) == (False, 1 - len(hung) / 2)
    assert (head_eval["timed_out"], head_eval["skipped"]) == (len(hung), len(hung))
    runs = {f["fixture"]: f for f in results["fixtures"] if f["side"] == "head"}
    for name in hung:
        record = runs[name]
        assert (record["status"], record["timed_out"]) == ("skipped", True)
        assert "did not finish within 3 s" in record["message"]
        assert "counts as not passing" in record["message"]
        # the partial trace is no evidence: toolNotCalled was not credited
        assert {a["status"] for a in record["assertions"]} == {"skipped"}
    rows = {row["name"]: row for row in head_eval["fixture_results"]}
    assert {name: rows[name]["result"] for name in hung} == dict.fromkeys(hung, "skipped")
    body = comment(github)
    assert "❌ evalward" in body and "| helper-eval |" in body
    # each hung fixture is a reason the pull request is blocked: why it was skipped, first
    assert f"{len(hung)} timed out" in body  # the counts line
    lines = [line for line in body.splitlines() if line.startswith(("1. ", "2. "))]
    assert len(lines) == len(hung)
    assert all("skipped: the agent did not finish within 3 s" in line for line in lines)
    assert any(
        line.startswith(("1. 🔻", "2. 🔻")) and "helper-eval / thanks" in line for line in lines
    )
    junit = (run.output_dir / "junit.xml").read_text()
    assert '<skipped message="skipped: the agent did not finish within 3 s' in junit
    page = report_rows((run.output_dir / "report.html").read_text())
    for name in hung:
        assert page[name]["g"] & page["flags"]["timed-out"]
        assert page[name]["g"] & page["flags"]["failing"]
        assert page[name]["h"]["s"] == "skipped"
