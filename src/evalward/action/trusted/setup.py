"""What the action decides once, before anything runs, and everything after reads: whether
and how the result cache and the response cache may be used. Each is a question to git
about the checkout (could the commit under test have filled it?), asked once per run; with
the input `base-cache`, a pull request's gate reads neither from the workspace, only what a
push run on its base branch uploaded (`base_cache`)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from evalward.action.context import WorkflowContext
from evalward.action.settings import Settings
from evalward.action.trusted.base_cache import BaseCacheAsk, fetch_base_cache
from evalward.action.trusted.trust import untrusted_cache
from evalward.errors import GitHubError, HttpFailure, UnsafeArchive, printable
from evalward.git import Git
from evalward.plan.result_cache import ResultCache
from evalward.providers.config import ProvidersConfig
from evalward.rundata.cache_mode import CacheMode
from evalward.text.cuts import cap_chars


@dataclass(frozen=True)
class CacheUse:
    """The result cache as this run may use it."""

    directory: Path | None
    """None: no result cache (`cache: off`, or a directory the checkout could fill)."""
    mode: CacheMode
    distrust: str = ""
    """Why the configured directory is not used, when the checkout could have filled it."""
    fetched: str = ""
    """What `directory` was unpacked from, when it is the base branch's artifact; beside
    `distrust`, the artifact `base-cache` names was wanted and not found."""
    private: Path | None = None
    """With `base-cache` on a pull request's gate: evalward's own folder, where the run's
    caches live and are thrown away (the workspace's are never read)."""

    def open(self) -> ResultCache | None:
        return None if self.directory is None else ResultCache(self.directory, self.mode)


def cache_mode(setting: CacheMode, event: str) -> CacheMode:
    """A scheduled run exists to catch what changes without a commit (a provider's model): it
    runs everything and stores what it finds (`refresh`) instead of reusing results."""
    return CacheMode.refresh if event == "schedule" and setting is CacheMode.read_write else setting


def decide_cache(settings: Settings, context: WorkflowContext, git: Git) -> CacheUse:
    """The result cache where the checkout cannot have filled it (`trust.untrusted_cache`)."""
    mode = cache_mode(settings.cache, context.event_name)
    directory = context.workspace_path(settings.cache_dir)
    if mode is CacheMode.off or directory is None:
        return CacheUse(None, mode)
    distrust = untrusted_cache(git, context.workspace, directory)
    return CacheUse(None, mode, distrust) if distrust else CacheUse(directory, mode)


def fetched_cache(settings: Settings, ask: BaseCacheAsk, private: Path, git: Git) -> CacheUse:
    """On a pull request's gate with `base-cache`: the base branch's artifact unpacked into
    `private` (evalward's own), read and written there and thrown away with it. Where it
    cannot be had, no result cache at all, never the workspace's: every run is made."""
    mode = settings.cache
    if not mode.reads:
        return CacheUse(None, mode, private=private)
    directory = private / "results"
    directory.mkdir(mode=0o700)
    try:
        fetched = asyncio.run(fetch_base_cache(ask, directory, git))
    except (GitHubError, HttpFailure, UnsafeArchive) as exc:
        said = f"its archive was refused: {exc}" if isinstance(exc, UnsafeArchive) else str(exc)
        kept = printable(settings.cache_dir.rstrip("/"))
        why = (
            f"action input `base-cache`: expected {ask.expected}, not found ("
            f"{cap_chars(printable(said), 600)}). The workspace's `cache-dir` is not read on "
            "a pull request's gate with this input, so every run is made. Upload "
            "the cache on push (`actions/upload-artifact@v7` with `if: always() && "
            f"github.event_name == 'push'`, `name: {printable(ask.name)}`, "
            "`include-hidden-files: true`, without which a folder whose name starts with `.` "
            f"is left out, and `path: {kept}` less `!{kept}/environments`, as docs/github.md "
            "shows) and give the job `permissions: actions: read`; check out with "
            "`fetch-depth: 0`, whose history says which commits the base branch has been at"
        )
        return CacheUse(None, mode, why, private=private)
    return CacheUse(directory, mode, fetched=fetched, private=private)


def trusted_replies(
    config: ProvidersConfig, context: WorkflowContext, git: Git, cache: CacheUse, cache_dir: str
) -> tuple[ProvidersConfig, str]:
    """The provider settings with the response cache off where the checkout could have
    filled it (its replies would decide the runs: the result cache's rule), and why. With
    `base-cache` on a pull request's gate it is never the workspace's: it is the artifact's
    folder of the same name (a `dir` inside `cache-dir`), else an empty one of evalward's."""
    if config.cache.mode is CacheMode.off:
        return config, ""
    if cache.private is not None:
        return _private_replies(config, context.workspace, cache, cache_dir), ""
    directory = context.workspace / config.cache.dir  # an absolute `dir` stays as it is
    distrust = untrusted_cache(git, context.workspace, directory) or ""
    if not distrust:
        return config, ""
    off = config.cache.model_copy(update={"mode": CacheMode.off})
    return config.model_copy(update={"cache": off}), distrust


def _private_replies(
    config: ProvidersConfig, workspace: Path, cache: CacheUse, cache_dir: str
) -> ProvidersConfig:
    """The response cache in the artifact unpacked for the gate, where its `dir` lies inside
    `cache-dir` (the default: the same folder), else in an empty folder of evalward's."""
    assert cache.private is not None, "only with base-cache on a pull request's gate"
    # normalised, so a `..` in either cannot step out of the folder it is found under
    directory = Path(os.path.normpath(workspace / config.cache.dir))
    kept = Path(os.path.normpath(workspace / cache_dir))
    if cache.directory is not None and directory.is_relative_to(kept):
        where = cache.directory / directory.relative_to(kept)
    else:
        where = cache.private / "responses"
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    moved = config.cache.model_copy(update={"dir": str(where)})
    return config.model_copy(update={"cache": moved})
