"""A pull request whose fixtures all pass and whose Eval's pairwise judge finds question-1
worse, gated over a matrix of shards and their merge: the merge settled the Eval without its
pairs (a pair's base run and head run may fall to two parts, and the parts' pairs were not
carried), so the change the unsharded gate blocks passed, every fixture green, and the
shards paid for pairs that decided nothing. The merge now judges every pair itself, once
all the parts' runs are in, and blocks as the unsharded gate does; the shards ask none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import SHARD_KEY, pull_request_event, run_action, run_shards
from support.guessing import project, script
from support.suite import provider_env
from verdict.test_pairwise_one_fixture import finals

pytestmark = pytest.mark.hostile


def _pairs_asked(model: ScriptedModelServer) -> int:
    return sum(finals(body) is not None for body in model.requests)


@pytest.mark.parametrize("count", [2, 1])
def test_the_merge_blocks_what_the_pairwise_judge_finds_worse(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer, count: int
) -> None:
    script(model)
    repo = project(tmp_path / "repo")
    base, head = repo.git("rev-parse", "main").strip(), repo.git("rev-parse", "HEAD").strip()
    github.add_pull(
        FakePull(number=7, head_sha=head, base_sha=base, files=repo.pull_files(base, head))
    )
    event = pull_request_event(github.repository, 7, base, head)
    env = provider_env(model)
    shards = tmp_path / "shards"
    common = {"shard-key": SHARD_KEY, "cache": "off"}

    run_shards(repo.path, github, event, shards, env=env, inputs=common, count=count)
    assert _pairs_asked(model) == 0  # no part judges a pair: the merge does
    merged = run_action(
        repo.path,
        github,
        event,
        inputs={
            **common,
            "merge": str(shards / f"shard-*-of-{count}.json"),
            "output-dir": str(tmp_path / "merged"),
        },
        env=env,
        run_dir=tmp_path / "runner-merge",
    )

    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert merged.outputs["result"] == "fail"
    assert _pairs_asked(model) > 0
    results = json.loads((tmp_path / "merged" / "results.json").read_text())
    (helper,) = [e for e in results["evals"] if e["side"] == "head"]
    assert not helper["passed"], helper
    assert all(f["status"] == "pass" for f in results["fixtures"])  # the judge alone blocks
    comment = github.comments_on(7)[-1]["body"]
    assert "worse by the pairwise judge" in comment, comment
