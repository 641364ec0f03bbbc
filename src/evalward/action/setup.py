"""What the action decides once, before anything runs, and everything after reads: whether
and how the result cache and the response cache may be used. Each is a question to git
about the checkout (could the commit under test have filled it?), asked once per run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalward.action.context import WorkflowContext
from evalward.action.settings import Settings
from evalward.action.trust import untrusted_cache
from evalward.git import Git
from evalward.plan.result_cache import ResultCache
from evalward.providers.config import ProvidersConfig
from evalward.rundata.cache_mode import CacheMode


@dataclass(frozen=True)
class CacheUse:
    """The result cache as this run may use it."""

    directory: Path | None
    """None: no result cache (`cache: off`, or a directory the checkout could fill)."""
    mode: CacheMode
    distrust: str = ""
    """Why the configured directory is not used, when the checkout could have filled it."""

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


def trusted_replies(
    config: ProvidersConfig, context: WorkflowContext, git: Git
) -> tuple[ProvidersConfig, str]:
    """The provider settings with the response cache off where the checkout could have
    filled it (its replies would decide the runs: the result cache's rule), and why."""
    if config.cache.mode is CacheMode.off:
        return config, ""
    directory = context.workspace / config.cache.dir  # an absolute `dir` stays as it is
    distrust = untrusted_cache(git, context.workspace, directory) or ""
    if not distrust:
        return config, ""
    off = config.cache.model_copy(update={"mode": CacheMode.off})
    return config.model_copy(update={"cache": off}), distrust
