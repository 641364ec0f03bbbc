"""The action sharded across a matrix: parts write shard files and neither comment nor gate;
the merge job comments and gates exactly as an unsharded run does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from actionrun import pull_request_event, run_action
from fakes.github_api import FakeGitHub, FakePull
from gitrepo import GitRepo

ROOT = Path(__file__).resolve().parents[2]
GOOD = (ROOT / "examples" / "mock-replies.yaml").read_text()
WORSE = GOOD.replace("should arrive on 2026-11-25", "should arrive soon")


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if k not in ("duration_ms", "started_at", "cached", "run")
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def test_shard_jobs_then_merge_gate_like_one_job(
    repo: GitRepo, github: FakeGitHub, tmp_path: Path
) -> None:
    shutil.copytree(ROOT / "examples" / "support-bot", repo.path / "support-bot")
    repo.write({"mock.yaml": GOOD, ".gitignore": ".evalward/\n"})
    base = repo.commit("support bot")
    repo.branch("feature")
    agent = repo.path / "support-bot/agents/support-bot.yaml"
    agent.write_text(agent.read_text().replace("Never email", "Do not ever email"))
    repo.write({"mock.yaml": WORSE})
    head = repo.commit("change the agent")
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 7, base, head)
    common = {"mock-script": "mock.yaml", "cache": "off"}
    shards = tmp_path / "shards"

    for index in (1, 2):
        part = run_action(
            repo.path,
            github,
            event,
            inputs={**common, "shard": f"{index}/2", "output-dir": str(shards)},
            run_dir=tmp_path / f"runner-{index}",
        )
        assert part.returncode == 0, part.stderr
        assert (shards / f"shard-{index}-of-2.json").is_file()
    assert github.comments_on(7) == []

    merged = run_action(
        repo.path,
        github,
        event,
        inputs={**common, "merge": str(shards / "shard-*-of-2.json")},
        run_dir=tmp_path / "runner-merge",
    )
    assert merged.returncode == 1, merged.stderr
    assert merged.outputs["result"] == "fail"
    (comment,) = github.comments_on(7)
    assert "order-status" in comment["body"]

    whole = run_action(repo.path, github, event, inputs=common, run_dir=tmp_path / "runner-one")
    assert whole.returncode == 1
    assert _strip(merged.results()) == _strip(whole.results())

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
