"""One job of the action, as the services it is made of. `run.main` builds them with real
clients from the process's environment; a function of the action takes the parts it uses,
and only the steps that hand the job on take the whole `Job`, so tests hand in local
servers. The runs themselves are not the job's: they are the `RunRequest` beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from evalward.action.context import WorkflowContext
from evalward.action.github import GitHubClient, PullInfo
from evalward.action.route import Route
from evalward.action.settings import Settings
from evalward.action.trusted.setup import CacheUse
from evalward.action.workflow import Outputs, command
from evalward.errors import EXIT_EXTERNAL, EXIT_OK, why_refused
from evalward.git import Git
from evalward.report.markdown import marker_for
from evalward.rundata.cache_mode import CacheMode
from evalward.security import Redactor
from evalward.text.escaping import log_line


@dataclass
class Console:
    """Where the job speaks: its log and its action outputs, every line redacted, and each a
    line of text or evalward's own command, never one the text starts (`log_line`); and
    what it could not write on the runner (`lose`)."""

    out: TextIO
    redact: Redactor
    outputs: Outputs = field(default_factory=lambda: Outputs(None))
    """GITHUB_OUTPUT: where action outputs go (none outside a workflow)."""
    lost: list[str] = field(default_factory=list)
    """What the job could not write (a file, the job summary, its outputs), in order."""

    def log(self, line: str) -> None:
        print(log_line(self.redact(line)), file=self.out, flush=True)

    def output(self, values: dict[str, str]) -> None:
        """Action outputs (GITHUB_OUTPUT); ones the runner cannot take are lost (`lose`)."""
        try:
            self.outputs.write(values, self.redact)
        except OSError as exc:
            self.lose(f"the step's outputs ({', '.join(values)}) in {self.outputs.path}", exc)

    def lose(self, what: str, exc: OSError, *, costs: str = "") -> None:
        """`what` could not be written (a full disk, a file size limit, an I/O error): one
        `::error` names it, the OS's reason, what it `costs` (by default that file alone:
        the decision is still commented and checked) and what to do. The job no longer
        ends clean (`exit_code`)."""
        reason = why_refused(exc)
        self.lost.append(what)
        costs = costs or (
            "The decision stands and is still reported, but the job does not pass without its files"
        )
        self.log(
            command(
                "error",
                f"{what} was not written: {reason}. {costs}: free space on the runner (or "
                "raise its file size limit) and rerun the job.",
                title="evalward: a file was not written",
            )
        )

    def exit_code(self, code: int) -> int:
        """The job's exit code for the decision's `code`: 3 (an outside failure: rerun) where
        it is 0 and something was not written, for a job whose files, audit record included,
        are missing must not look clean; any other code stands."""
        if code != EXIT_OK or not self.lost:
            return code
        self.log(f"evalward: exit {EXIT_EXTERNAL} — not written: {'; '.join(self.lost)}")
        return EXIT_EXTERNAL


@dataclass
class Site:
    """What the job is asked to do, and where: the workflow's environment and context, the
    action's settings, the folder it writes to and the line that finds its comment."""

    env: Mapping[str, str]
    context: WorkflowContext
    settings: Settings
    output_dir: Path = field(init=False)
    marker: str = field(init=False)
    """The hidden line that finds this workflow job's comment again."""

    def __post_init__(self) -> None:
        output_dir = self.context.workspace_path(self.settings.output_dir)
        assert output_dir is not None, "`output-dir` has a default, and an empty input keeps it"
        self.output_dir = output_dir
        self.marker = marker_for(self.context.comment_key)


@dataclass
class Clients:
    """What the job calls itself: git and the GitHub API. The clients of the runs (the model
    providers, the sandbox) are the run's set-up (`flows.run_setup.RunSetup`), not the job's."""

    git: Git
    github: GitHubClient | None
    """None when the route needs no GitHub API (no pull request, no check run)."""


@dataclass
class Trusted:
    """What the job may take from where the pull request cannot change it (`trust`)."""

    template: Path | None = None
    """The comment template."""
    template_named: tuple[str, str] | None = None
    """How a mistake in the template names it (`TrustedInputs.template_named`)."""
    cache: CacheUse = field(default_factory=lambda: CacheUse(None, CacheMode.off))
    """The result cache as this run may use it (`setup.decide_cache`)."""
    distrusted_replies: str = ""
    """Why the response cache is off, when the checkout could have filled it
    (`setup.trusted_replies`)."""


@dataclass
class Job:
    """The whole job, for the steps that hand it on."""

    console: Console
    site: Site
    clients: Clients
    route: Route
    """What the event asks for (`route.route_event`)."""
    pull: PullInfo | None = None
    """The pull request the route gates (None: a run of Evals without a base)."""
    trusted: Trusted = field(default_factory=Trusted)
