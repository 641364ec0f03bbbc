"""The action sharded across a matrix: parts write shard files and neither comment nor gate;
the merge job comments and gates exactly as an unsharded run does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import SHARD_KEY, pull_request_event, run_action, run_shards
from support.gitrepo import GitRepo
from support.suite import HEAD_PROMPT, SUPPORT_BOT, make_pr, provider_env, script_model

pytestmark = pytest.mark.e2e


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if k not in ("duration_ms", "started_at", "cached", "run", "run_time_summed_s")
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def test_shard_jobs_then_merge_gate_like_one_job(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, tmp_path: Path
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    env = provider_env(model, "sk-test")
    event = pull_request_event(github.repository, 7, base, head)
    common = {"cache": "off", "shard-key": SHARD_KEY}
    shards = tmp_path / "shards"

    run_shards(repo.path, github, event, shards, env=env, inputs=common)
    assert github.comments_on(7) == []

    merged = run_action(
        repo.path,
        github,
        event,
        inputs={**common, "merge": str(shards / "shard-*-of-2.json")},
        env=env,
        run_dir=tmp_path / "runner-merge",
    )
    assert merged.returncode == 1, merged.stderr
    assert merged.outputs["result"] == "fail"
    (comment,) = github.comments_on(7)
    assert "greeting" in comment["body"]

    whole = run_action(
        repo.path, github, event, inputs={"cache": "off"}, env=env, run_dir=tmp_path / "runner-one"
    )
    assert whole.returncode == 1
    assert _strip(merged.results()) == _strip(whole.results())
    # what the model calls spent is the parts' added up: the one job's, call for call
    assert merged.results()["run"]["spent"] == whole.results()["run"]["spent"]

    (shards / "shard-2-of-2.json").unlink()
    incomplete = run_action(
        repo.path,
        github,
        event,
        inputs={**common, "merge": str(shards / "shard-*-of-2.json")},
        run_dir=tmp_path / "runner-incomplete",
    )
    assert incomplete.returncode == 2
    assert "shard 2/2 missing" in incomplete.stderr
    assert json.loads(json.dumps(incomplete.outputs)).get("result") != "pass"


def test_a_part_whose_budget_cannot_hold_the_bases_own_runs_is_excused_at_the_merge(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """One part, 4 calls: order-status (high, 2 a side) fits, the greeting's two runs do
    not, whatever the pull request adds. The part says so, and the merge lets
    allow-incomplete pass the gate, its headline naming the runs it did not see."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    env = provider_env(model, "sk-test")
    event = pull_request_event(github.repository, 7, base, head)
    common = {"cache": "off", "shard-key": SHARD_KEY, "max-model-calls": "4"}
    shards = tmp_path / "shards"

    run_shards(repo.path, github, event, shards, env=env, inputs=common, count=1)
    part = json.loads((shards / "shard-1-of-1.json").read_text())
    assert part["baseOverEvals"] == ["support-bot-eval"]

    merged = run_action(
        repo.path,
        github,
        event,
        inputs={**common, "merge": str(shards / "shard-*-of-1.json"), "allow-incomplete": "true"},
        env=env,
        run_dir=tmp_path / "runner-merge",
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert merged.outputs["result"] == "pass"
    (comment,) = github.comments_on(7)
    assert "passes without some of its runs — 2 runs of fixtures the base branch" in comment["body"]


def test_a_costly_fixture_the_pr_adds_cannot_crowd_the_bases_runs_into_one_part(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Two parts of 4 calls each hold the base's own runs (four of 2 calls) split evenly.
    The pull request adds a fixture that names twenty tools (21 calls): balanced by the
    head's estimates it would fill one part alone and crowd every run of the base's fixtures
    into the other, whose budget then could not hold the greeting, and allow-incomplete
    would excuse the greeting the head fails. The base's runs are split by the base's own
    estimates first, each part holds its share, and the greeting's regression blocks."""
    base, _ = make_pr(repo, github)
    named = "\n".join(f"    - {{ type: toolNotCalled, tool: t{i} }}" for i in range(20))
    costly = (
        "apiVersion: evalward.dev/v1\nkind: EvalFixture\nmetadata:\n  name: costly\n"
        "  labels: { agent: support-bot }\nspec:\n  targetAgent: support-bot\n"
        '  input: { type: prompt, payload: { prompt: "Anything else?" } }\n'
        f"  assertions:\n{named}\n"
    )
    agent = SUPPORT_BOT.format(prompt=HEAD_PROMPT).replace("  system:", "  maxTurns: 50\n  system:")
    head = repo.commit(
        "a costly fixture", {"evals/fixtures/costly.yaml": costly, "agents/support-bot.yaml": agent}
    )
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)
    env = provider_env(model, "sk-test")
    event = pull_request_event(github.repository, 7, base, head)
    common = {"cache": "off", "shard-key": SHARD_KEY, "max-model-calls": "4"}
    shards = tmp_path / "shards"

    run_shards(repo.path, github, event, shards, env=env, inputs=common)
    parts = [json.loads(p.read_text()) for p in sorted(shards.glob("shard-*-of-2.json"))]
    assert [p["baseOverEvals"] for p in parts] == [[], []]

    merged = run_action(
        repo.path,
        github,
        event,
        inputs={**common, "merge": str(shards / "shard-*-of-2.json"), "allow-incomplete": "true"},
        env=env,
        run_dir=tmp_path / "runner-merge",
    )
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert merged.outputs["result"] == "fail"
    (comment,) = github.comments_on(7)
    assert "greeting" in comment["body"]
