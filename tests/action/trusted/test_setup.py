"""What the action decides once about its caches (`action/trusted/setup.py`), on real
repositories: a scheduled run refreshes instead of reusing, and a cache the commit under test
could have filled is not read, the result cache's or the model replies', with the reason kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.action.context import WorkflowContext
from evalward.action.settings import Settings
from evalward.action.trusted.setup import CacheUse, cache_mode, decide_cache, trusted_replies
from evalward.git import Git
from evalward.providers.config import ProvidersConfig
from evalward.rundata.cache_mode import CacheMode
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

WORKSPACE = CacheUse(None, CacheMode.read_write)
"""The result cache as a run without `base-cache` uses it (its folder is beside the point)."""
CACHE = ".evalward/cache"


def _context(workspace: Path, event: str = "pull_request") -> WorkflowContext:
    return WorkflowContext(
        event_name=event,
        repository="o/r",
        workspace=workspace,
        api_url="http://127.0.0.1:1",
        server_url="https://github.com",
        run_id="1",
    )


@pytest.mark.parametrize(
    ("setting", "event", "mode"),
    [
        (CacheMode.read_write, "schedule", CacheMode.refresh),
        (CacheMode.read_write, "pull_request", CacheMode.read_write),
        (CacheMode.read_only, "schedule", CacheMode.read_only),
        (CacheMode.off, "schedule", CacheMode.off),
    ],
)
def test_a_scheduled_run_refreshes_what_it_would_reuse(
    setting: CacheMode, event: str, mode: CacheMode
) -> None:
    assert cache_mode(setting, event) is mode


def test_a_result_cache_the_checkout_cannot_fill_is_used(repo: GitRepo) -> None:
    repo.commit("code", {"agents/a.yaml": "x: 1\n"})
    settings = Settings.from_env({"INPUT_CACHE_DIR": ".evalward/cache"})
    use = decide_cache(settings, _context(repo.path), Git(repo.path))
    assert (use.directory, use.mode, use.distrust) == (
        repo.path / ".evalward" / "cache",
        CacheMode.read_write,
        "",
    )
    assert use.open() is not None


def test_a_result_cache_the_commit_filled_is_not_read_and_says_why(repo: GitRepo) -> None:
    repo.commit("forged", {"ci/cache/results/ab/ab12.json": "{}"})
    settings = Settings.from_env({"INPUT_CACHE_DIR": "ci/cache"})
    use = decide_cache(settings, _context(repo.path), Git(repo.path))
    assert use.directory is None
    assert use.open() is None
    assert "1 file(s) under ci/cache are committed" in use.distrust


def test_model_replies_the_commit_filled_are_not_replayed(repo: GitRepo) -> None:
    repo.commit("forged", {"replies/ab/ab12.json": "{}"})
    config = ProvidersConfig.model_validate({"cache": {"dir": "replies", "mode": "read-write"}})
    trusted, why = trusted_replies(config, _context(repo.path), Git(repo.path), WORKSPACE, CACHE)
    assert trusted.cache.mode is CacheMode.off
    assert "under replies are committed" in why
    clean = ProvidersConfig.model_validate(
        {"cache": {"dir": ".evalward/replies", "mode": "read-write"}}
    )
    assert trusted_replies(clean, _context(repo.path), Git(repo.path), WORKSPACE, CACHE) == (
        clean,
        "",
    )


@pytest.mark.parametrize(
    ("directory", "read"),
    [(".evalward/cache", "artifact"), (".evalward/cache/replies", "artifact"), ("replies", "")],
)
def test_with_base_cache_model_replies_are_never_the_workspace_s(
    repo: GitRepo, tmp_path: Path, directory: str, read: str
) -> None:
    """On a pull request's gate with `base-cache`, the response cache is the artifact's
    folder of the same name, where its `dir` is inside `cache-dir`, else an empty one of
    evalward's: replies planted in the workspace are never read (a judge's, the base's)."""
    repo.commit("code", {"agents/a.yaml": "x: 1\n"})
    (repo.path / directory).mkdir(parents=True)
    private = tmp_path / "private"
    unpacked = private / "results"
    unpacked.mkdir(parents=True)
    use = CacheUse(unpacked, CacheMode.read_write, fetched="artifact", private=private)
    config = ProvidersConfig.model_validate({"cache": {"dir": directory, "mode": "read-write"}})
    trusted, why = trusted_replies(config, _context(repo.path), Git(repo.path), use, CACHE)
    where = Path(trusted.cache.dir)
    assert why == "" and trusted.cache.mode is CacheMode.read_write
    assert not where.is_relative_to(repo.path)
    expected = unpacked / Path(directory).relative_to(CACHE) if read else private / "responses"
    assert where == expected and where.is_dir()
