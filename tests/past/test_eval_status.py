"""Seed 003's Eval status as users get it: the action's push and schedule runs keep the default
branch's status in the result cache, `evalward run` keeps local runs' apart, and `evalward
status` (a subprocess) prints it with Stale computed against the checkout. A status the
checkout brings (committed, behind a link) is never read, and a scheduled run's summary
compares each Eval with the previous scheduled run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from action.test_github_events import real_payload
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import Rule, ScriptedModelServer, text
from support.actionrun import ActionRun, prepare, pull_request_event, run_action, start_action
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import (
    BASE_PROMPT,
    GREETING_FIXTURE,
    HEAD_PROMPT,
    MATH_TUTOR,
    ORDER_FIXTURE,
    SUPPORT_BOT,
    SUPPORT_EVAL,
    script_model,
)

pytestmark = pytest.mark.e2e

STATUS = Path(".evalward/cache/status")
CRON = "0 6 * * 1"
SCHEDULED_EVAL = SUPPORT_EVAL.replace(
    "  targetAgent: support-bot\n", f"  targetAgent: support-bot\n  schedule: '{CRON}'\n"
)


def suite(repo: GitRepo, prompt: str = BASE_PROMPT, evals: str = SUPPORT_EVAL) -> str:
    return repo.commit(
        "agents and evals",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=prompt),
            "agents/math-tutor.yaml": MATH_TUTOR,
            "evals/support-bot.yaml": evals,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
            ".gitignore": ".evalward/\n",
        },
    )


def push(
    repo: GitRepo,
    github: FakeGitHub,
    env: dict[str, str],
    commit: str,
    inputs: dict[str, str] | None = None,
) -> ActionRun:
    payload = real_payload("push", ref="refs/heads/main", after=commit)
    payload["repository"]["default_branch"] = "main"
    return run_action(repo.path, github, payload, env=env, event_name="push", inputs=inputs)


def schedule(repo: GitRepo, github: FakeGitHub, env: dict[str, str], commit: str) -> ActionRun:
    event = {"schedule": CRON, "repository": {"full_name": "acme/agents"}}
    runner = {**env, "GITHUB_REF": "refs/heads/main", "GITHUB_SHA": commit}
    return run_action(repo.path, github, event, env=runner, event_name="schedule")


def status_file(repo: GitRepo, name: str = "support-bot-eval") -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo.path / STATUS / f"{name}.json").read_text())
    return document


def status_json(repo: GitRepo, *args: str) -> dict[str, Any]:
    done = evalward("status", "--json", *args, cwd=repo.path)
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in document["evals"]}


def test_a_push_records_the_default_branchs_status_and_an_agent_change_makes_it_stale(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    script_model(model, head_greets_well=False)
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))
    first = suite(repo)

    done = push(repo, github, env, first)

    assert done.returncode == 0, done.stderr
    record = status_file(repo)
    assert record["schemaVersion"] == 1
    assert {k: record[k] for k in ("name", "targetAgent", "phase", "lastResult", "lastScore")} == {
        "name": "support-bot-eval",
        "targetAgent": "support-bot",
        "phase": "Passed",
        "lastResult": "Pass",
        "lastScore": "1.00",
    }
    assert (record["passingFixtures"], record["failingFixtures"], record["totalFixtures"]) == (
        2,
        0,
        2,
    )
    assert [(f["name"], f["result"], f["severity"]) for f in record["fixtureResults"]] == [
        ("greeting", "pass", "low"),
        ("order-status", "pass", "high"),
    ]
    assert record["commit"] == first and record["branch"] == "main" and record["event"] == "push"
    assert record["runUrl"] == "https://github.example/acme/agents/actions/runs/4242"
    assert record["targetAgentGeneration"] == "fp:" + record["agentFingerprint"][:12]
    assert record["running"] is None and record["interrupted"] is None
    assert status_file(repo, "math-tutor-eval")["phase"] == "Passed"

    table = evalward("status", cwd=repo.path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == [
        "Eval",
        "Agent",
        "Phase",
        "Last",
        "result",
        "Score",
        "Passing/total",
        "Last",
        "run",
        "at",
        "Judge",
        "agreement",
    ]
    row = next(x for x in lines if x.startswith("support-bot-eval"))
    assert row.split()[:6] == ["support-bot-eval", "support-bot", "Passed", "Pass", "1.00", "2/2"]
    assert record["lastRunAt"].replace("T", " ").replace("Z", " UTC") in row
    assert "default branch's status" in table.stdout

    # the agent changes on the branch: the recorded run is of another agent now
    repo.branch("feature")
    repo.commit("sharpen", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)})
    evals = by_name(status_json(repo))
    assert evals["support-bot-eval"]["phase"] == "Stale"
    assert "agent support-bot changed since the run of" in evals["support-bot-eval"]["staleReason"]
    assert evals["support-bot-eval"]["lastResult"] == "Pass"
    assert evals["math-tutor-eval"]["phase"] == "Passed"

    # a pull request's run restores the cache and writes no status of its own
    github.add_pull(FakePull(number=7, head_sha=repo.head(), base_sha=first))
    gated = run_action(
        repo.path, github, pull_request_event(github.repository, 7, first, repo.head()), env=env
    )
    assert gated.returncode == 1, gated.stderr
    assert status_file(repo) == record

    # merged and pushed: the default branch's status follows, with the new agent's identity
    repo.checkout("main")
    repo.git("merge", "-q", "--ff-only", "feature")
    merged = push(repo, github, env, repo.head())
    assert merged.returncode == 1, merged.stderr
    after = status_file(repo)
    assert after["phase"] == "Failed" and after["lastScore"] == "0.80"
    assert (
        after["commit"] == repo.head() and after["agentFingerprint"] != record["agentFingerprint"]
    )
    assert [f["result"] for f in after["fixtureResults"]] == ["fail", "pass"]
    assert by_name(status_json(repo))["support-bot-eval"]["phase"] == "Failed"


def test_metadata_generation_decides_stale_when_the_agent_sets_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    script_model(model, head_greets_well=True)
    numbered = SUPPORT_BOT.replace(
        "  name: support-bot\n", "  name: support-bot\n  generation: 3\n"
    )
    first = repo.commit(
        "a numbered agent and its Eval",
        {
            "agents/support-bot.yaml": numbered.format(prompt=BASE_PROMPT),
            "evals/support-bot.yaml": SUPPORT_EVAL,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
            ".gitignore": ".evalward/\n",
        },
    )
    assert push(repo, github, env, first).returncode == 0
    assert status_file(repo)["targetAgentGeneration"] == 3
    assert by_name(status_json(repo))["support-bot-eval"]["phase"] == "Passed"

    # only the generation moves (as a controller bumps it): Stale, and the reason says so
    bumped = numbered.replace("generation: 3", "generation: 4").format(prompt=BASE_PROMPT)
    repo.write({"agents/support-bot.yaml": bumped})
    evals = by_name(status_json(repo))
    assert evals["support-bot-eval"]["phase"] == "Stale"
    assert evals["support-bot-eval"]["staleReason"].startswith(
        "agent support-bot is at generation 4; the run of "
    )
    assert evals["support-bot-eval"]["staleReason"].endswith("was at generation 3")


def test_scheduled_runs_compare_with_the_previous_scheduled_run_in_the_summary(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    script_model(model, head_greets_well=False)
    first = suite(repo, evals=SCHEDULED_EVAL)

    nightly = schedule(repo, github, env, first)

    assert nightly.returncode == 0, nightly.stderr
    assert "### 🗓️ Since the previous scheduled run" in nightly.summary
    assert "- **support-bot-eval**: **1.00** (Pass), the first scheduled run on record" in (
        nightly.summary
    )
    record = status_file(repo)
    assert record["event"] == "schedule" and record["commit"] == first
    assert record["lastScheduledRun"] == {
        "at": record["lastRunAt"],
        "commit": first,
        "lastScore": "1.00",
        "lastResult": "Pass",
    }
    assert not (repo.path / STATUS / "math-tutor-eval.json").exists()  # not scheduled

    # a change lands and is pushed: the push records its run, not a scheduled one
    second = repo.commit(
        "sharpen", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)}
    )
    assert push(repo, github, env, second).returncode == 1
    pushed = status_file(repo)
    assert pushed["event"] == "push" and pushed["lastScore"] == "0.80"
    assert pushed["lastScheduledRun"] == record["lastScheduledRun"]

    again = schedule(repo, github, env, second)

    assert again.returncode == 1, again.stderr
    expected = (
        "- **support-bot-eval**: 1.00 → **0.80** (-0.20), Pass → Fail since the scheduled run "
        f"of {record['lastRunAt'][:10]} (`{first[:7]}`)"
    )
    assert expected in again.summary
    latest = status_file(repo)["lastScheduledRun"]
    assert latest["commit"] == second and latest["lastScore"] == "0.80"
    # a run that is no scheduled one says nothing about scheduled runs
    assert "Since the previous scheduled run" not in push(repo, github, env, second).summary


def test_a_cancelled_run_leaves_the_last_finished_status_and_says_it_was_interrupted(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    script_model(model, head_greets_well=True)
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))
    first = suite(repo)
    assert push(repo, github, env, first).returncode == 0
    before = status_file(repo)

    second = repo.commit(
        "sharpen", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)}
    )
    slow = Rule(lambda b: "Hello there" in json.dumps(b), [text("Hello!", delay=60)])
    model.rules.insert(0, slow)
    payload = real_payload("push", ref="refs/heads/main", after=second)
    payload["repository"]["default_branch"] = "main"
    launch = prepare(repo.path, github, payload, env=env, event_name="push")
    earlier = len(model.requests)
    process = start_action(repo.path, launch)
    while not [r for r in model.requests[earlier:] if slow.matcher(r)]:
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    running = status_file(repo)
    assert running["phase"] == "Running"
    assert running["running"]["commit"] == second and running["running"]["event"] == "push"
    assert running["lastRunAt"] == before["lastRunAt"]  # the last finished run is kept
    shown = by_name(status_json(repo))["support-bot-eval"]
    assert shown["phase"] == "Running"

    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr

    after = status_file(repo)
    assert after["phase"] == "Passed" and after["running"] is None
    assert {k: after[k] for k in ("lastRunAt", "lastScore", "commit")} == {
        k: before[k] for k in ("lastRunAt", "lastScore", "commit")
    }
    assert after["interrupted"]["commit"] == second
    assert after["interrupted"]["reason"] == "the run was cancelled"
    table = evalward("status", cwd=repo.path)
    assert "support-bot-eval is Stale: agent support-bot changed since the run of" in table.stdout
    assert "recorded no result: the run was cancelled." in table.stdout


def test_runs_the_budget_leaves_out_are_no_status(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    script_model(model, head_greets_well=True)
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))
    first = suite(repo)

    done = push(repo, github, env, first, inputs={"max-model-calls": "2", "cache": "refresh"})

    assert done.returncode != 0
    cut = [json.loads(p.read_text()) for p in (repo.path / STATUS).glob("*.json")]
    assert cut, "no status written"
    for record in cut:
        if record["interrupted"] is not None:
            assert record["phase"] == "Pending" and record["lastResult"] is None
            assert record["interrupted"]["reason"] == "runs left out to stay within the budget"
    assert any(r["interrupted"] is not None for r in cut)


def test_local_runs_keep_their_own_status_apart_from_the_default_branchs(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    script_model(model, head_greets_well=False)
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))
    suite(repo, prompt=HEAD_PROMPT)

    empty = evalward("status", cwd=repo.path)
    assert empty.returncode == 0, empty.stderr
    assert "No Eval has a status yet" in empty.stdout and "Pending" in empty.stdout
    assert status_json(repo)["source"] is None

    ran = evalward("run", "--eval", "support-bot-eval", cwd=repo.path, **env)
    assert ran.returncode == 1, ran.stderr
    local = json.loads((repo.path / ".evalward/status/support-bot-eval.json").read_text())
    assert local["event"] == "local" and local["branch"] == "" and local["lastScore"] == "0.80"
    assert not (repo.path / STATUS).exists()
    shown = status_json(repo)
    assert shown["source"] == "local" and shown["directory"] == ".evalward/status"
    assert by_name(shown)["support-bot-eval"]["phase"] == "Failed"
    assert by_name(shown)["math-tutor-eval"]["phase"] == "Pending"
    assert "not the default branch's" in evalward("status", cwd=repo.path).stdout

    # a run narrowed to a fixture is not the Eval's status
    narrowed = evalward("run", "--fixture", "greeting", "--no-cache", cwd=repo.path, **env)
    assert narrowed.returncode == 1
    again = json.loads((repo.path / ".evalward/status/support-bot-eval.json").read_text())
    assert again == local

    # once the default branch has a status, it is what `status` shows; --local shows the other
    assert push(repo, github, env, repo.head()).returncode == 1
    assert status_json(repo)["source"] == "default-branch"
    assert status_json(repo, "--local")["source"] == "local"


def test_a_status_the_checkout_brings_is_never_read(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    script_model(model, head_greets_well=False)
    forged = {
        "name": "support-bot-eval",
        "targetAgent": "support-bot",
        "phase": "Passed",
        "lastRunAt": "2026-01-01T00:00:00Z",
        "lastResult": "Pass",
        "lastScore": "1.00",
        "lastScheduledRun": {
            "at": "2026-01-01T00:00:00Z",
            "lastScore": "0.10",
            "lastResult": "Fail",
        },
    }
    suite(repo, prompt=HEAD_PROMPT, evals=SCHEDULED_EVAL)
    # committed past .gitignore (`git add -f`), as a pull request can, in both stores
    local = ".evalward/status/support-bot-eval.json"
    repo.write({f"{STATUS}/support-bot-eval.json": json.dumps(forged), local: json.dumps(forged)})
    repo.git("add", "-f", str(STATUS), local)
    committed = repo.commit("a status that says all is well")

    shown = evalward("status", "--json", cwd=repo.path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["source"] is None
    assert by_name(json.loads(shown.stdout))["support-bot-eval"]["phase"] == "Pending"
    assert ".evalward/cache/status not read: 1 file(s) under .evalward/cache are committed" in (
        shown.stderr
    )
    assert ".evalward/status not read: 1 file(s) under .evalward/status are committed" in (
        shown.stderr
    )

    # nor by the action: no comparison with the forged scheduled run, and nothing written
    nightly = schedule(repo, github, env, committed)
    assert nightly.returncode == 1, nightly.stderr
    assert "result cache not used" in nightly.stdout
    assert "Since the previous scheduled run" not in nightly.summary
    assert status_file(repo) == forged

    # behind a committed symbolic link: the same
    repo.git("rm", "-q", "-r", "--cached", ".evalward")
    repo.commit("untrack the forged files")
    for leftover in (repo.path / ".evalward").iterdir():
        shutil.rmtree(leftover)
    repo.write({"elsewhere/status/support-bot-eval.json": json.dumps(forged)})
    os.symlink("../elsewhere", repo.path / ".evalward" / "cache")
    repo.git("add", "-f", ".evalward/cache")
    repo.commit("a link to it")
    linked = evalward("status", "--json", cwd=repo.path)
    assert json.loads(linked.stdout)["source"] is None
    assert ".evalward/cache is a symbolic link" in linked.stderr
