"""One job of the action: its environment, settings and clients, and where it writes.

`run.main` builds it with real clients from the process's environment; every other function
of the action takes it (or the parts of it it needs) as a parameter, so tests hand in local
servers. Everything it logs or writes is redacted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from evalward.action.context import RunContext
from evalward.action.github import GitHubPort
from evalward.action.settings import Settings
from evalward.action.setup import CacheUse
from evalward.action.workflow import write_outputs
from evalward.git import Git
from evalward.providers.registry import Providers
from evalward.report.markdown import marker_for
from evalward.rundata.cache_mode import CacheMode
from evalward.runtime.sandbox import Sandbox
from evalward.security import Redactor


@dataclass
class Job:
    env: Mapping[str, str]
    context: RunContext
    settings: Settings
    git: Git
    github: GitHubPort | None
    """None when the route needs no GitHub API (no pull request, no check run)."""
    providers: Providers
    out: TextIO
    redact: Redactor
    sandbox: Sandbox | None = None
    """Where programs from a checkout run (`trust.agent_sandbox`); None: as evalward's user."""
    template: Path | None = None
    """The comment template, from where the pull request cannot change it (`trust`)."""
    cache: CacheUse = field(default_factory=lambda: CacheUse(None, CacheMode.off))
    """The result cache as this run may use it (`setup.decide_cache`)."""
    distrusted_replies: str = ""
    """Why the response cache is off, when the checkout could have filled it
    (`setup.trusted_replies`)."""
    started: Callable[[], None] | None = None
    """Ends the process's start-up pause once the suite is loaded (`host.Host.started`)."""
    output_dir: Path = field(init=False)
    marker: str = field(init=False)
    """The hidden line that finds this workflow job's comment again."""

    def __post_init__(self) -> None:
        output_dir = self.context.workspace_path(self.settings.output_dir)
        assert output_dir is not None, "`output-dir` has a default, and an empty input keeps it"
        self.output_dir = output_dir
        self.marker = marker_for(self.context.comment_key)

    def log(self, line: str) -> None:
        print(self.redact(line), file=self.out, flush=True)

    def output(self, values: dict[str, str]) -> None:
        """Action outputs (GITHUB_OUTPUT)."""
        write_outputs(self.env.get("GITHUB_OUTPUT"), values, self.redact)
