"""What in the checkout the action may trust: the checkout comes from the pull request.

The settings that decide the gate or speak for it (provider settings, the mock script, the
comment template) are read from the base commit on a pull request (`trusted_inputs`), and
programs from the checkout run as an unprivileged user (`agent_sandbox`).

A directory evalward reads results from (the result cache, the response cache) decides the
gate without running anything, and a directory it writes to (the output directory) decides
where its files land. Either is refused when the commit under test could have chosen its
contents or its location: files tracked by git, a git submodule or nested repository (whose
files the outer repository's index does not list), or a symbolic link on the way to it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from evalward.action.context import WorkflowContext
from evalward.action.settings import Isolation, Settings
from evalward.action.workflow import AUDIT_FILE
from evalward.errors import ConfigError, ResourceError
from evalward.files.committed import RepoFiles
from evalward.files.inside import file_on_the_way, link_on_the_way
from evalward.git import Git
from evalward.plan.prepare import config_at
from evalward.providers.config import ProvidersConfig, from_repo_config
from evalward.providers.registry import repo_providers
from evalward.report.files import RUN_FILES, not_a_file, not_a_folder, unwritable
from evalward.runtime.isolation.agent_users import AGENT_USER, AUTO_USER, AgentUser, claim_pair
from evalward.runtime.isolation.sandbox import NOT_COPIED, Sandbox
from evalward.text.escaping import printable

NOT_ROOT = (
    f"evalward is not running as root, so it cannot run that as the unprivileged user "
    f"`{AGENT_USER}`: the program could read evalward's environment (your secrets and the "
    "GitHub token) and write its outputs. The action's image always runs as root; run "
    "evalward as the action. Where the job already ran the pull request's code with the same "
    "rights (e.g. `evalward action` after installing its dependencies), set the input "
    "`agent-isolation: off` to run such programs as evalward's own user (see docs/github.md)."
)


def untrusted_cache(
    git: Git, workspace: Path, directory: Path, *, in_the_way: bool = True
) -> str | None:
    """Why a cache directory cannot be trusted (None when it can), in a sentence to log.
    With `in_the_way` False, a file where a folder of it goes is not one: nothing can be
    read through it, and the cache says its own loss when it cannot write."""
    try:
        relative = directory.relative_to(workspace)
    except ValueError:
        return None
    link = link_on_the_way(workspace, directory)
    if link is not None:
        return (
            f"{_shown(workspace, link)} is a symbolic link in the checkout, so the commit "
            "under test decides what the cache holds. Point the cache at a real directory "
            "that is not in the repository."
        )
    blocked = file_on_the_way(workspace, directory) if in_the_way else None
    if blocked is not None:
        return (
            f"{_shown(workspace, blocked)} is a file in the checkout, where the cache needs a "
            "folder. Point the cache at a directory that is not in the repository."
        )
    # One reading of the folder the cache is in: its submodules and the files it tracks.
    index = git.index(relative.parts[0] if relative.parts else "")
    nested = _nested_repository(index.gitlinks(), workspace, relative)
    if nested is not None:
        return (
            f"{printable(nested)} is a git submodule or a repository of its own inside the "
            "checkout, so the commit under test decides what the cache holds. Keep the cache "
            "outside it."
        )
    committed = index.under(relative.as_posix())
    if committed:
        return (
            f"{len(committed)} file(s) under {relative.as_posix()} are committed in the "
            f"repository (e.g. {printable(committed[0])}), and a committed cache could carry "
            "results the pull request wrote for itself. Remove them from the repository and "
            "add the directory to .gitignore."
        )
    return None


def check_output_dir(git: Git, workspace: Path, output_dir: Path) -> None:
    """Refuse an output directory the checkout could redirect or fill: a symbolic link on the
    way to it or anywhere under it (a committed `.evalward/out/audit.jsonl -> ~/.bashrc`), a
    file where a folder on the way must be, files the commit brings into it (a forged
    `audit.jsonl` that evalward would append to, a folder named `results.json`), a file
    where the folder goes or a folder where one of its files goes that an earlier step left
    (in the workspace or outside it), anything in it that is neither a file nor a folder (a
    FIFO blocks the writer), or a folder evalward cannot write (the run's results would be
    lost after it)."""
    setting = "action input `output-dir`"
    blocked = file_on_the_way(workspace, output_dir)
    if blocked is not None:
        raise ConfigError(
            f"{setting}: {_shown(workspace, blocked)} is a file in the checkout, where "
            "evalward needs a folder for its results. Remove it from the repository, or set "
            "`output-dir` to a directory that is not in it."
        )
    inside = sorted(output_dir.rglob("*")) if output_dir.is_dir() else []
    link = link_on_the_way(workspace, output_dir)
    if link is None:
        link = next((p for p in inside if p.is_symlink()), None)
    if link is not None:
        raise ConfigError(
            f"{setting}: {_shown(workspace, link)} is a symbolic link in the checkout, and "
            "evalward would write its results through it, where the commit under test chose. "
            "Remove the link from the repository, or set `output-dir` to a directory that is "
            "not in it."
        )
    if output_dir.is_relative_to(workspace) and output_dir != workspace:
        committed = git.tracked(output_dir.relative_to(workspace).as_posix())
        if committed:
            raise ConfigError(
                f"{setting}: {len(committed)} file(s) under "
                f"{_shown(workspace, output_dir)} are committed in the repository (e.g. "
                f"{printable(committed[0])}); evalward's results must not mix with what the "
                "commit under test brings (an audit.jsonl it appends to, a folder where "
                "results.json goes). Remove them from the repository and add the folder to "
                ".gitignore, or set `output-dir` to a directory that is not in it."
            )
    blocked = not_a_folder(output_dir)
    if blocked is not None:
        raise ConfigError(
            f"{setting}: {_shown(workspace, blocked)} is a file, where evalward needs a folder "
            "for its results. Remove it in the step that made it, or set `output-dir` to a "
            "folder (it is created if missing)."
        )
    taken = not_a_file(output_dir, (*RUN_FILES, AUDIT_FILE))
    if taken is not None:
        raise ConfigError(
            f"{setting}: {_shown(workspace, taken)} is not a file, and evalward writes the "
            f"run's {taken.name} there, after the runs: their results would be lost. Remove "
            "it in the step that made it, or set `output-dir` to another folder."
        )
    odd = next((p for p in inside if not (p.is_file() or p.is_dir())), None)
    if odd is not None:
        raise ConfigError(
            f"{setting}: {_shown(workspace, odd)} is neither a file nor a folder (a FIFO, a "
            "socket or a device); remove it, or set `output-dir` to an empty directory."
        )
    cannot = unwritable(output_dir)
    if cannot is not None:
        raise ConfigError(f"{setting}: {cannot}; give a folder evalward can write into")


def _shown(workspace: Path, path: Path) -> str:
    return printable(
        path.relative_to(workspace).as_posix() if path.is_relative_to(workspace) else str(path)
    )


def _nested_repository(gitlinks: set[str], workspace: Path, relative: Path) -> str | None:
    """The first folder on the way to `relative` that is a submodule (a gitlink in the index)
    or holds a repository of its own (a `.git` entry)."""
    prefixes = (Path(*relative.parts[: i + 1]).as_posix() for i in range(len(relative.parts)))
    return next((p for p in prefixes if p in gitlinks or (workspace / p / ".git").exists()), None)


def _base_file(door: RepoFiles, folder: Path, path: str, setting: str) -> Path:
    """A file a pull request must not choose (the comment template speaks for the gate, the
    mock script decides every reply), read from its base commit `door` instead of the
    checkout: `path` (repository-relative) written to the private `folder` with the files
    beside it (a template may include its neighbours), or a ConfigError."""
    relative = Path(path).as_posix().lstrip("/")
    parent = relative.rsplit("/", 1)[0] if "/" in relative else ""
    names = [n for n in door.files_in(parent) if n != relative]
    contents = door.contents([relative, *names])
    if relative not in contents:
        raise ConfigError(
            f"action input `{setting}`: {relative} is not in the base commit "
            f"{(door.commit or '')[:12]}. On a pull request it is read from the base branch, so "
            "that the pull request cannot choose it; merge it to the base branch first."
        )
    for name, content in contents.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return folder / relative


def as_committed(exc: ResourceError, folder: Path, commit: str | None) -> ResourceError:
    """`exc` with the files of the base commit `_base_file` wrote to `folder` named as the
    repository names them (`ci/mock.yaml`, of the base commit): the private copy's path
    (`/tmp/evalward-base-files-…/ci/mock.yaml`) tells the user nothing."""
    moved = [
        dataclasses.replace(p, file=Path(p.file).relative_to(folder).as_posix())
        if Path(p.file).is_relative_to(folder)
        else p
        for p in exc.problems
    ]
    if moved == exc.problems:
        return exc
    whose = f"the base commit {commit[:12]}" if commit else "the base commit"
    return ResourceError(moved, source=exc.source or whose, after=exc.after)


@dataclass(frozen=True)
class TrustedInputs:
    """What the action reads that decides the gate or speaks for it, from where a pull request
    cannot change it: provider settings (where keys are sent), the mock script (every reply)
    and the comment template (what the comment says)."""

    providers: ProvidersConfig
    mock_script: Path | None
    template: Path | None
    template_named: tuple[str, str] | None = None
    """How a mistake in the base commit's template names it (`render_comment`'s `named`):
    its path in the repository and that it is the base commit's, not the private copy's."""


def trusted_inputs(
    context: WorkflowContext, settings: Settings, git: Git, base_sha: str | None, folder: Path
) -> TrustedInputs:
    """On a pull request (a base commit is known), the base commit's files, written to
    `folder`; otherwise the checkout's. A path outside the workspace is the workflow's own and
    is read where it is."""
    base = RepoFiles.at_commit(git, base_sha) if base_sha else None

    def read(value: str, setting: str) -> Path | None:
        path = context.workspace_path(value)
        if path is None:
            return None
        inside = path.is_relative_to(context.workspace)
        if base is not None and inside:
            return _base_file(base, folder, path.relative_to(context.workspace).as_posix(), setting)
        if not path.is_file():
            raise ConfigError(
                f"action input `{setting}`: {value} is not a file in the repository; give a "
                "path relative to the repository root"
            )
        return path

    providers = (
        from_repo_config(config_at(git, base_sha))
        if base_sha
        else repo_providers(context.workspace)
    )
    template = read(settings.comment_template, "comment-template")
    named = None
    if template is not None and base_sha and template.is_relative_to(folder):
        named = (template.relative_to(folder).as_posix(), f"of the base commit {base_sha[:12]}")
    if template is not None:
        # lazy: the renderer (jinja2 with it) costs start-up that only a user's template needs
        from evalward.report.markdown import parse_template

        parse_template(template, named)  # before the runs, whose calls it would cost
    return TrustedInputs(providers, read(settings.mock_script, "mock-script"), template, named)


def agent_sandbox(settings: Settings, euid: int, workspace: Path | None = None) -> Sandbox:
    """How programs from a checkout run in the action: as the agent user when evalward is
    root (the image always is), refused otherwise unless the workflow turned that off. The
    agents' working copies leave out evalward's output and cache directories."""
    names = settings.agent_env_names
    if settings.agent_isolation is Isolation.off:
        return Sandbox(None, agent_env=names)
    if euid != 0:
        return Sandbox(None, unavailable=NOT_ROOT, agent_env=names)
    ours = set(NOT_COPIED)
    for folder in (settings.output_dir, settings.cache_dir):
        path = Path(os.path.normpath(folder))
        if workspace is not None and path.is_absolute() and path.is_relative_to(workspace):
            path = path.relative_to(workspace)
        if not path.is_absolute() and path.parts and path.parts[0] != "..":
            ours.add(path.as_posix())
    taken = {0, euid}
    if workspace is not None and workspace.exists():
        taken.add(workspace.stat().st_uid)
    if settings.agent_user == AUTO_USER:
        claim = claim_pair(taken)
        sandbox = Sandbox(claim.user, not_copied=ours, agent_env=names)
        sandbox.hold(claim)
        return sandbox
    user = AgentUser.named(settings.agent_user)
    if {user.uid, user.uid + 1} & taken:
        raise ConfigError(
            f"action input `agent-user`: {settings.agent_user} (uid {user.uid}, and "
            f"{user.uid + 1} for the base side's programs) would be root, evalward's own "
            "user or the owner of the workspace, which the pull request's programs must not "
            "be; give another user or uid"
        )
    return Sandbox(user, not_copied=ours, agent_env=names)
