"""`action.evaluate` on its own: a merge's parts as the `merge` input names them (none that the
checkout brings), the shard key every part is sealed with, a missing provider key failed or
skipped as `on-missing-secrets` says, and what the run's progress logs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from evalward.action.context import WorkflowContext
from evalward.action.evaluate import (
    LoggedProgress,
    missing_secrets,
    run_options,
    sandbox_setup,
    shard_key,
    shard_parts,
)
from evalward.action.github import PullInfo
from evalward.action.job import Console, Site
from evalward.action.settings import Settings
from evalward.action.trusted.setup import CacheUse
from evalward.action.workflow import Outputs
from evalward.errors import ConfigError, MissingSecretError
from evalward.git import Git
from evalward.plan.plan import MoreRuns, Plan, PlannedRun
from evalward.rundata.cache_mode import CacheMode
from evalward.rundata.sides import Side
from evalward.security import Redactor
from support.gitrepo import GitRepo

pytestmark = pytest.mark.unit

KEY = "k" * 64


def settings(**inputs: str) -> Settings:
    return Settings.model_validate(inputs)


def test_a_shard_or_a_merge_refuses_to_go_without_a_key_long_enough() -> None:
    with pytest.raises(ConfigError) as none:
        shard_key(settings())
    with pytest.raises(ConfigError) as short:
        shard_key(settings(**{"shard-key": "short"}))

    assert "EVALWARD_SHARD_KEY" in str(none.value)
    assert "at least" in str(short.value)
    assert shard_key(settings(**{"shard-key": KEY})) == KEY


def test_the_merge_takes_the_parts_its_glob_finds_and_refuses_a_committed_one(
    repo: GitRepo,
) -> None:
    repo.commit("a committed part", {"parts/shard-1-of-2.json": "{}"})
    (repo.path / "parts" / "shard-2-of-2.json").write_text("{}")
    merging = settings(**{"merge": "parts/shard-*.json", "shard-key": KEY})

    parts = shard_parts(merging, repo.path, Git(repo.path))

    assert [p.name for p in parts.paths] == ["shard-1-of-2.json", "shard-2-of-2.json"]
    assert parts.key == KEY and parts.check is not None
    parts.check(parts.paths[1])  # downloaded by this run: taken
    with pytest.raises(ConfigError, match="is committed in the repository"):
        parts.check(parts.paths[0])


def test_a_merge_whose_glob_finds_nothing_says_where_the_parts_go(repo: GitRepo) -> None:
    repo.commit("empty", {"README.md": "x"})
    merging = settings(**{"merge": "parts/*.json", "shard-key": KEY})

    with pytest.raises(ConfigError, match=r"no file matches 'parts/\*\.json'"):
        shard_parts(merging, repo.path, Git(repo.path))


def console(tmp_path: Path) -> tuple[Console, io.StringIO, Path]:
    out, outputs = io.StringIO(), tmp_path / "github_output"
    return Console(out, Redactor([]), Outputs(str(outputs))), out, outputs


FORK = PullInfo(7, [], "a" * 40, "b" * 40, head_repo="mallory/agents", base_repo="acme/agents")


def test_a_missing_key_fails_the_gate_unless_skipping_is_allowed(tmp_path: Path) -> None:
    here, out, outputs = console(tmp_path)
    missing = MissingSecretError("OPENAI_API_KEY is not set")

    with pytest.raises(MissingSecretError) as failed:
        missing_secrets(here, settings(), missing, FORK)
    code = missing_secrets(here, settings(**{"on-missing-secrets": "skip"}), missing, FORK)

    assert "comes from the fork mallory/agents" in str(failed.value)
    assert "on-missing-secrets: skip" in str(failed.value)
    assert code == 0
    assert "::warning::evalward skipped:" in out.getvalue()
    assert "skipped" in outputs.read_text()


def test_a_key_only_the_pull_request_s_change_needs_is_never_skipped(tmp_path: Path) -> None:
    here, _, outputs = console(tmp_path)
    missing = MissingSecretError("ANTHROPIC_API_KEY is not set", skippable=False)

    with pytest.raises(MissingSecretError) as failed:
        missing_secrets(here, settings(**{"on-missing-secrets": "skip"}), missing, None)

    assert "does not apply" in str(failed.value) and not failed.value.skippable
    assert not outputs.exists()


def test_the_progress_logs_reused_runs_and_a_growing_plan() -> None:
    lines: list[str] = []
    progress = LoggedProgress(log=lines.append, cache_dir=".evalward/cache")
    plan = Plan(runs=[PlannedRun(Side.head, "e", "f", rep) for rep in range(3)], reused=2)

    progress.on_plan(plan)
    progress.on_more(plan, MoreRuns(adaptive=2))

    assert progress.plan is plan and progress.planned == 3
    assert lines[0].startswith("evalward: 2 of 3 runs reused from the result cache")
    assert "(.evalward/cache)" in lines[0]
    assert lines[1].startswith("evalward: 2 more runs where outcomes are open")


def test_the_job_s_inputs_reach_the_run_and_the_sandbox_setup(tmp_path: Path) -> None:
    chosen = settings(parallel="3", **{"max-model-calls": "40", "environment-max-files": "9"})
    context = WorkflowContext("push", "acme/agents", tmp_path, "", "", "1")
    site = Site({}, context, chosen)
    cache = CacheUse(tmp_path / "cache", CacheMode.read_only)

    options = run_options(chosen, cache, None)
    setup = sandbox_setup(site, cache, lambda line: None)

    assert (options.parallel, options.budget.max_model_calls) == (3, 40)
    assert options.cache is not None and options.main_history == tmp_path / "cache"
    assert setup.written == (site.output_dir, tmp_path / "cache")
    assert setup.environments == tmp_path / "cache" / "environments"
    assert (setup.reuse, setup.keep, setup.scope) == (True, False, "push")
    assert setup.bounds.max_files == 9
