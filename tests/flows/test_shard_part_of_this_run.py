"""A shard part is bound to the workflow run whose shard jobs made it. A part sealed by a
shard job of an earlier run of the same commits is an artifact anyone who can read the
repository may download, and any step of this run may upload it again (docs/github.md,
"Sharded runs"); the merge refuses it, so a head whose runs pass in one run and fail in
another is never gated on the passing parts picked from several runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import SHARD_KEY, ActionRun, pull_request_event, run_action, run_shards
from support.gitrepo import GitRepo
from support.suite import make_pr

pytestmark = pytest.mark.hostile

OFF = {"cache": "off"}
"""Each run runs its own: no result is taken from a cache an earlier run filled."""


def _script(model: ScriptedModelServer, *, head_greets_well: bool, head_finds_order: bool) -> None:
    """The base answers well; the head's two fixtures as asked (a flaky head, run to run)."""
    model.rules.clear()

    def asks(prompt: str, order: bool) -> object:
        return lambda b: prompt in json.dumps(b) and ("12345" in json.dumps(b)) == order

    finds = (
        tool_call("lookup_order", {"order_id": "12345"}),
        text("Your order has shipped and arrives on 2026-11-25."),
    )
    model.script(asks("BASE-V1", True), *finds)
    model.script(asks("BASE-V1", False), text("Hello! How can I help you today?"))
    if head_finds_order:
        model.script(asks("HEAD-V2", True), *finds)
    else:
        model.script(asks("HEAD-V2", True), text("I cannot tell where it is."))
    if head_greets_well:
        model.script(asks("HEAD-V2", False), text("Hello! What can I do for you?"))
    else:
        model.script(
            asks("HEAD-V2", False),
            tool_call("lookup_order", {"order_id": "unknown"}),
            text("Hello! I looked everything up for you."),
        )


def test_a_part_from_an_earlier_run_of_the_same_commits_is_refused(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    base, head = make_pr(repo, github)
    event = pull_request_event(github.repository, 7, base, head)
    this_run = {**env, "GITHUB_RUN_ID": "1002", "GITHUB_RUN_ATTEMPT": "1"}

    # an earlier run on the same commits: the head greets well and loses the order
    _script(model, head_greets_well=True, head_finds_order=False)
    earlier = tmp_path / "earlier"
    run_shards(
        repo.path, github, event, earlier, env={**this_run, "GITHUB_RUN_ID": "1001"}, inputs=OFF
    )
    # this run: the head finds the order and greets badly
    _script(model, head_greets_well=False, head_finds_order=True)
    current = tmp_path / "current"
    run_shards(repo.path, github, event, current, env=this_run, inputs=OFF)

    def head(folder: Path, index: int) -> tuple[str, str]:
        part = json.loads((folder / f"shard-{index}-of-2.json").read_text())
        (fixture,) = [f for f in part["fixtures"] if f["side"] == "head"]
        return fixture["fixture"], fixture["status"]

    # neither run passes: each loses one fixture, in the other part
    assert (head(earlier, 1), head(earlier, 2)) == (("greeting", "pass"), ("order-status", "fail"))
    assert (head(current, 1), head(current, 2)) == (("greeting", "fail"), ("order-status", "pass"))

    def merge(name: str, parts: list[Path]) -> ActionRun:
        folder = tmp_path / name
        folder.mkdir()
        for part in parts:
            shutil.copy(part, folder / part.name)
        return run_action(
            repo.path,
            github,
            event,
            inputs={**OFF, "merge": str(folder / "shard-*.json"), "shard-key": SHARD_KEY},
            env=this_run,
            run_dir=tmp_path / f"runner-{name}",
        )

    # the earlier run's passing greeting in place of this run's failing one
    mixed = merge("mixed", [earlier / "shard-1-of-2.json", current / "shard-2-of-2.json"])
    assert mixed.outputs.get("result") != "pass", mixed.stdout[-2000:]
    assert mixed.returncode == 2, mixed.stdout[-2000:] + mixed.stderr[-2000:]
    assert "shard-1-of-2.json" in mixed.stderr, mixed.stderr
    assert github.comments_on(7) == []
