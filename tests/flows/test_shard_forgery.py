"""Shard parts travel as artifacts, and anything that can upload an artifact into the run
could put its own in their place. The merge takes a part only when its seal checks out under
the merge's own `shard-key`, and only for the plan it computes itself from the base's
definitions. Each forgery below comes with an agent that is broken (the honest merge fails),
and each must be refused (exit 2) before anything gates or is commented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalward.flows.shard_signature import seal
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import SHARD_KEY, ActionRun, pull_request_event, run_action, run_shards
from support.gitrepo import GitRepo
from support.suite import make_pr, script_model

pytestmark = pytest.mark.hostile


def _passing(part: dict[str, Any]) -> dict[str, Any]:
    """The part's results rewritten to pass."""
    forged = {k: v for k, v in json.loads(json.dumps(part)).items() if k != "seal"}
    for fixture in forged["fixtures"]:
        fixture.update(status="pass", score=1.0, verdict="pass")
        for assertion in fixture["assertions"]:
            assertion.update(status="pass", score=1.0)
    return forged


def test_a_merge_takes_only_sealed_parts_of_the_plan_it_computes(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    event = pull_request_event(github.repository, 7, base, head)
    honest = tmp_path / "honest"
    run_shards(repo.path, github, event, honest, env=env)
    parts = {i: json.loads((honest / f"shard-{i}-of-2.json").read_text()) for i in (1, 2)}
    assert all(p["seal"]["alg"] == "hmac-sha256" for p in parts.values())
    runs = 0

    def merge(forged: dict[int, dict[str, Any]], **inputs: str) -> ActionRun:
        nonlocal runs
        runs += 1
        folder = tmp_path / f"forged-{runs}"
        folder.mkdir()
        for index, document in forged.items():
            (folder / f"shard-{index}-of-2.json").write_text(json.dumps(document))
        return run_action(
            repo.path,
            github,
            event,
            inputs={"merge": str(folder / "shard-*.json"), "shard-key": SHARD_KEY, **inputs},
            env=env,
            run_dir=tmp_path / f"runner-merge-{runs}",
        )

    def refused(run: ActionRun, why: str) -> None:
        assert run.returncode == 2, run.stdout + run.stderr
        assert why in run.stderr, run.stderr
        assert run.outputs.get("result") != "pass"
        assert github.comments_on(7) == []

    # results rewritten to pass, the old seal kept, or dropped
    refused(
        merge({1: {**_passing(parts[1]), "seal": parts[1]["seal"]}, 2: parts[2]}),
        "its seal does not match its content under this key",
    )
    refused(merge({1: _passing(parts[1]), 2: parts[2]}), "it carries no seal")
    # sealed with a key of the forger's own
    other_key = "f" * 64
    refused(
        merge({1: seal(_passing(parts[1]), other_key), 2: parts[2]}),
        "its seal does not match its content under this key",
    )
    # an honest part, and the merge's own key missing or too short to trust
    refused(merge(parts, **{"shard-key": ""}), "action input `shard-key`: a shard's part is sealed")
    refused(merge(parts, **{"shard-key": "short"}), "at least 32 characters (got 5)")
    # sealed with the key (by a shard job set up otherwise): another plan, or runs the split
    # gives to the other part
    other_plan = {k: v for k, v in parts[1].items() if k != "seal"}
    other_plan["plan"] = {**other_plan["plan"], "runs": other_plan["plan"]["runs"][:1]}
    refused(
        merge({1: seal(other_plan, SHARD_KEY), 2: parts[2]}),
        "ran another plan or other definitions than this merge computes",
    )
    taken = {k: v for k, v in parts[1].items() if k != "seal"}
    taken["fixtures"] = taken["fixtures"] + parts[2]["fixtures"]
    refused(
        merge({1: seal(taken, SHARD_KEY), 2: parts[2]}),
        "which the split gives to part 2",
    )
    # the parts a merge with other settings computes another plan for
    refused(merge(parts, **{"run-all": "true"}), "ran another plan or other definitions")

    # the honest parts, under the same key: the broken agent fails the gate
    merged = merge(parts)
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert merged.outputs["result"] == "fail"
    assert "| support-bot-eval |" in github.comments_on(7)[0]["body"]
