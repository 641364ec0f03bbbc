"""What the run, plan and merge commands share before a run: the repository, the base, and
the runs the command line chooses. What they show after it is `_emit.py`'s: a run starts
before the reports' modules are loaded."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from evalward.errors import ConfigError, GitError
from evalward.git import Git
from evalward.plan.plan import Plan, PlannedRun
from evalward.resources import ResourceSet
from evalward.resources.reading.problems import did_you_mean
from evalward.rundata.cache_mode import CacheMode
from evalward.rundata.sides import Side

if TYPE_CHECKING:
    from evalward.providers.config import ProvidersConfig

KEPT = ".evalward"
"""The folder of the repository where `evalward run` keeps what outlives a run."""
WITHOUT_BASE = "leave out --base to check this branch alone (every Eval, no baseline)"
"""The command line's other way on when the base branch's definitions do not load
(`RunSetup.unloadable_base`)."""


@dataclass(frozen=True)
class Selection:
    """--agent/--eval/--fixture/--reps: narrow the plan after it is built from the change."""

    agents: tuple[str, ...] = ()
    evals: tuple[str, ...] = ()
    fixtures: tuple[str, ...] = ()
    reps: int | None = None

    @classmethod
    def of(cls, args: argparse.Namespace) -> Selection:
        return cls(tuple(args.agent), tuple(args.eval), tuple(args.fixture), args.reps)

    def apply(self, plan: Plan, resources: Mapping[Side, ResourceSet]) -> Plan:
        head = resources[Side.head]
        defined: dict[str, Mapping[str, Any]] = {
            "--agent": head.agents,
            "--eval": head.evals,
            "--fixture": head.fixtures,
        }
        _known("--agent", self.agents, defined)
        _known("--eval", self.evals, defined)
        _known("--fixture", self.fixtures, defined)

        def wanted(name: str) -> bool:
            if self.evals and name not in self.evals:
                return False
            target = head.evals[name].resource.spec.target_agent if name in head.evals else ""
            return not self.agents or target in self.agents

        evals = [name for name in plan.evals if wanted(name)]
        runs = [
            run
            for run in plan.runs
            if run.eval in evals and (not self.fixtures or run.fixture in self.fixtures)
        ]
        if Side.base not in resources:  # with a base, what the change touches runs, as said
            self._each_runs(runs, head)
        if self.reps is not None:
            groups = dict.fromkeys((r.side, r.eval, r.fixture) for r in runs)
            runs = [PlannedRun(s, e, f, rep) for s, e, f in groups for rep in range(self.reps)]
        return dataclasses.replace(plan.with_runs(runs), evals=evals)

    def _each_runs(self, runs: list[PlannedRun], head: ResourceSet) -> None:
        """Every agent, Eval and fixture named is run, where every Eval runs (no base): one
        that nothing runs passed with nothing run ("0/0 fixtures pass"), as though it had
        been checked."""
        for option, names, ran in (
            ("--agent", self.agents, {head.evals[r.eval].resource.spec.target_agent for r in runs}),
            ("--eval", self.evals, {r.eval for r in runs}),
            ("--fixture", self.fixtures, {r.fixture for r in runs}),
        ):
            for name in names:
                if name not in ran:
                    raise ConfigError(
                        f"{option} {name}: nothing of this run runs it: {_SELECTS[option]} "
                        "(an Eval runs the fixtures its `fixtures` names or its labels select)"
                    )


_SELECTS = {
    "--agent": "no Eval it runs targets the agent",
    "--eval": "the Eval is not among those it runs",
    "--fixture": "no Eval it runs selects the fixture",
}
"""Why a name given to narrow a run has no run in it, by option."""


_KINDS = {"--agent": "an agent", "--eval": "an Eval", "--fixture": "a fixture"}
"""What each option names, as its refusal says it."""


def _known(option: str, names: tuple[str, ...], defined: Mapping[str, Mapping[str, Any]]) -> None:
    """Every name given to `option` is defined as what it selects. A name defined as another
    kind (an Eval's given to --fixture) is said to be that, with the option that selects it:
    the nearest name of the wrong kind would only send the user further astray."""
    for name in names:
        if name in defined[option]:
            continue
        other = next((o for o, there in defined.items() if o != option and name in there), None)
        if other is not None:
            raise ConfigError(
                f"{option} {name}: {_KINDS[other]}, not {_KINDS[option]}; "
                f"select it with {other} {name}"
            )
        raise ConfigError(
            f"{option} {name}: no such resource in the repository"
            f"{did_you_mean(name, list(defined[option]))}"
        )


def distrusted(
    root: Path, directory: Path, *, what: str = "", in_the_way: bool = True
) -> str | None:
    """Why a store under `directory` (`what` it keeps) cannot be trusted, as the action
    decides for a cache (`trust.untrusted_cache`); but a file where its folder goes is said
    with the command line's fix, as the action's (another `cache-dir`) is no setting here.
    Outside a git repository, only a symbolic link or such a file on the way counts."""
    from evalward.action.trusted.trust import untrusted_cache
    from evalward.files.inside import file_on_the_way, link_on_the_way
    from evalward.resources.reading.discover import relative
    from evalward.text.escaping import printable

    link = link_on_the_way(root, directory)
    blocked = file_on_the_way(root, directory) if in_the_way and link is None else None
    if blocked is not None:
        shown = printable(relative(directory, root))
        return file_in_the_way(printable(relative(blocked, root)), what or shown)
    try:
        return untrusted_cache(Git(root), root, directory, in_the_way=in_the_way)
    except GitError:
        return f"{link} is a symbolic link" if link is not None else None


def file_in_the_way(place: str, what: str) -> str:
    """A file at `place`, where evalward keeps `what` in a folder, and how to clear it: a
    run's refusal and a store that is neither read nor written say it alike."""
    return (
        f"{place} is a file, where evalward keeps {what} in a folder; move the file away or "
        "delete it (the folder is made when missing)"
    )


@dataclass(frozen=True)
class Kept:
    """What `evalward run` may read and write under `.evalward` (its result cache, the flaky
    records and scores beside it, its history), decided once: nothing there where the
    checkout could have filled it or sends it elsewhere (committed, a submodule, a symbolic
    link on the way), as the action does not read such a cache. A pull request that commits
    passing results of its own, or a link out of the repository, chooses nothing."""

    root: Path
    cache: Path | None
    """The result cache's folder; None: neither read nor written."""
    why: str = ""

    @classmethod
    def at(cls, root: Path, err: TextIO) -> Kept:
        """`root`'s, said to `err` when nothing is kept there."""
        why = distrusted(root, root / KEPT, what=f"its result cache and history ({KEPT})")
        if why:
            print(
                f"evalward: warning: {KEPT}/ is neither read nor written (no result cache, "
                f"no history): {why}",
                file=err,
            )
        return cls(root, None if why else root / KEPT / "cache", why or "")

    def replies(self, config: ProvidersConfig, err: TextIO) -> ProvidersConfig:
        """The repository's provider settings with the response cache off where its folder
        is not to be trusted (its replies would decide the runs: the result cache's rule),
        said to `err`."""
        if config.cache.mode is CacheMode.off:
            return config
        directory = self.root / config.cache.dir  # an absolute `dir` stays as it is
        why = distrusted(self.root, directory, in_the_way=False)  # it says what it loses
        if not why:
            return config
        print(f"evalward: warning: response cache not used: {why}", file=err)
        off = config.cache.model_copy(update={"mode": CacheMode.off})
        return config.model_copy(update={"cache": off})


def repository(path: str) -> Path:
    """The top of the git working tree the folder `path` is in, as git takes it from any
    folder inside one: the definitions, the paths they name and `--base`'s files are the
    whole repository's, read from there. Outside a git repository, `path` itself."""
    start = Path(path)
    if not start.is_dir():
        raise ConfigError(
            f"{start}: not a directory; give a folder of the repository (default: the current one)"
        )
    here = start.resolve()
    try:
        top = Git(here).top()
    except GitError:  # no git on this machine: the folder is the root
        return here
    return top.resolve() if top is not None else here


def compared(git: Git, base: str | None, head: str = "") -> dict[str, str]:
    """results.json's `run.head_sha` and `base_sha` of a run on the command line: the commit
    its head side was (`head`, else the checkout's), and `--base`'s ("" without one)."""
    return {
        "head_sha": head or git.commit_of("HEAD") or "",
        "base_sha": (git.commit_of(base) or "") if base else "",
    }


def check_base(git: Git, base: str | None) -> None:
    """`--base` names a commit of a git repository that has one: a mistake in the command line
    (exit 2) is not a missing history in a workflow's checkout (git.py's words)."""
    if base is None:
        return
    if not git.run("rev-parse", "--git-dir", check=False).strip():
        raise ConfigError(
            f"--base {base}: {git.repo} is not in a git repository, so there is nothing to "
            "compare with; run evalward in a clone, or leave out --base to run every Eval"
        )
    for ref, what in ((base, f"--base {base}"), ("HEAD", "HEAD")):
        if git.commit_of(ref) is None:
            missing = (
                _unborn_branch(git)
                if ref == "HEAD" or _is_unborn_branch(git, ref)
                else f"no branch, tag or commit {base!r} in {git.repo}{_nearest_ref(git, base)}"
            )
            raise ConfigError(
                f"{what}: {missing}; give a branch, tag or commit it has (`git branch -a` "
                "lists the branches), or leave out --base to run every Eval"
            )
    if not git.run("merge-base", base, "HEAD", check=False).strip():
        _no_merge_base(git, base)


def _nearest_ref(git: Git, name: str) -> str:
    """` (did you mean 'main'?)` where a branch or tag is close to the `name` given."""
    out = git.run(
        "for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/remotes", "refs/tags",
        check=False,
    )  # fmt: skip
    return did_you_mean(name, [ref for ref in out.splitlines() if ref])


def _no_merge_base(git: Git, base: str) -> NoReturn:
    """Why `base` and HEAD meet nowhere, said for a clone on this machine (git.py's words are
    for the action's checkout): the history is cut short, or they share none."""
    if git.run("rev-parse", "--is-shallow-repository", check=False).strip() == "true":
        raise GitError(
            f"--base {base}: no merge base between {base} and HEAD: {git.repo} is a shallow "
            "clone, and the history where they meet was not fetched. Fetch it with `git fetch "
            "--unshallow` (or `git fetch --deepen=N` for N more commits), then run again; in a "
            "GitHub workflow, check out with `actions/checkout`'s `fetch-depth: 0`"
        )
    raise ConfigError(
        f"--base {base}: {base} and HEAD have no commit in common (unrelated histories), so "
        "there is no merge base to compare with; give the branch HEAD was made from, or leave "
        "out --base to run every Eval"
    )


def _is_unborn_branch(git: Git, ref: str) -> bool:
    """Whether `ref` names the branch HEAD is on, which has no commit yet (a new repository's
    `main`): git knows no such ref, but the user named a branch that is there, only empty."""
    branch = git.run("symbolic-ref", "-q", "HEAD", check=False).strip()
    names = {branch, branch.removeprefix("refs/"), branch.removeprefix("refs/heads/")}
    return bool(branch) and ref in names


def _unborn_branch(git: Git) -> str:
    """Why HEAD names no commit once `--base` named one: its branch (an orphan) has none."""
    branch = git.run("symbolic-ref", "--short", "-q", "HEAD", check=False).strip() or "HEAD"
    return f"the branch {branch} has no commit yet (check out one that has, or commit first)"
