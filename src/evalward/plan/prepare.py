"""A change prepared for its runs: both sides' resources, the plan, and the trees the runs
read — before anything runs, and for as long as the runs need them.

The head is the working tree, or a worktree of the head commit where the working tree is
another commit or does not hold it where the change is read (`_head_side`); the merge base's
resources are parsed only from the files the change touched (`load_base`); the base
branch's tip, under `gate-config: base`, decides what gates. The base side's tree holds what
any base run of the job may read (`plan/reach.py`), written before the first one.
"""

from __future__ import annotations

import dataclasses
import posixpath
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from evalward.definitions.loader import load_changed_resources, load_resources, needs_full_load
from evalward.errors import ResourceError
from evalward.files.committed import RepoFiles
from evalward.files.inside import watched_folders
from evalward.git import FileChange, Git, folders_of
from evalward.plan.changes import (
    UPDATE_THE_BRANCH,
    ChangeSet,
    agents_changed,
    changed_paths,
    detect_changes,
)
from evalward.plan.fingerprint import (
    NOT_READ,
    FileIndex,
    agent_reads,
    read_globs,
)
from evalward.plan.plan import (
    Checkout,
    Plan,
    PlanFor,
    base_side_resources,
    build_plan,
    gate_resources,
    undefined,
)
from evalward.plan.playgrounds import uses_playgrounds, world_names
from evalward.plan.preflight.preflight import warning_notes
from evalward.plan.preflight.tool_refs import gate_guards
from evalward.plan.reach import joined, reach_of_each, world_reach
from evalward.plan.run_setup import RunSetup
from evalward.resources import ResourceSet
from evalward.resources.reading.repo_config import (
    CONFIG_FILE,
    RepoConfig,
    load_config,
    parse_config,
)
from evalward.resources.references import unknown_default_agent
from evalward.rundata.sides import GateConfig, Side


@dataclass
class Prepared:
    """A change detected and planned, with both sides' trees on disk, before anything runs."""

    changes: ChangeSet
    plan: Plan
    checkouts: dict[Side, Checkout]
    notes: list[str]


@contextmanager
def prepare_change(setup: RunSetup) -> Iterator[Prepared]:
    """Detect the change and plan it; the base worktree lives as long as the context."""
    git, revisions, options = setup.git, setup.revisions, setup.options
    from_base = options.gate_config is GateConfig.base
    with ExitStack() as stack:
        tip = git.resolve(revisions.base) if revisions.base is not None else None
        merge_base = git.merge_base(tip, git.resolve(revisions.head or "HEAD")) if tip else None
        # Where resources live, what is skipped and the Evals' defaults decide what gates:
        # the pull request's own `evalward.yaml` must not choose them.
        config = config_at(git, tip) if tip is not None and from_base else None
        head_root, head, index, dirty = _head_side(
            setup, stack, config, tip, compared=merge_base is not None
        )
        if setup.started is not None:
            setup.started()
        bases = _Bases(git, stack, head, head_root, config, from_base, setup.unloadable_base)
        if tip is not None and merge_base is not None:
            bases.load(revisions.head, tip, merge_base, index, dirty)
        changes = detect_changes(bases.changed, head, bases.base, bases.gating, index)
        if from_base and bases.base is not None:
            bases.base = base_side_resources(bases.base, bases.gating)
        gate = gate_resources(head, bases.gating, options.gate_config)
        made = PlanFor(
            head=head,
            gating=bases.gating,
            config=options.gate_config,
            run_all=options.run_all or revisions.base is None,
            regressions=options.regressions,
        )
        plan = build_plan(changes, gate, bases.base, made)
        if from_base and bases.gating is not None and tip is not None:
            plan.undefined = undefined(bases.gating, f"the base branch ({tip[:12]})", config)
        else:
            plan.undefined = undefined(head, "the checkout", config or load_config(head_root))
        if setup.select is not None:
            plan.evals = [name for name in plan.evals if setup.select(name)]
            plan.runs = [run for run in plan.runs if setup.select(run.eval)]
        head_sha = git.commit_of(revisions.head or "HEAD") or ""
        world, names = bases.world(tip, plan, gate)
        # An agent user's copy of the head holds what that agent's runs may read, as the
        # base's does; a program that names no `watch` gets it all.
        each = reach_of_each(gate, plan.may_run(Side.head), index.listed)
        gated = bases.gating.fixtures if from_base and bases.gating is not None else {}
        # what a renamed tool makes vacuous: known before a run where both sides' agents are
        # declarative, else as a program's runs end (its base runs first)
        removed, offered = (
            gate_guards(gate, bases.base, gated)
            if gated and bases.base is not None
            else ({}, frozenset())
        )
        plan.base_first(offered)
        checkouts = {
            Side.head: Checkout(
                Side.head,
                head_root,
                gate,
                index,
                sha=head_sha,
                world=world,
                world_names=names,
                world_files=bases.gating.files if world is not None and bases.gating else None,
                reads=joined(each.values()).copied,
                agent_reads={name: reach.copied for name, reach in each.items()},
                gate_fixtures=frozenset(gated),  # the base's fixtures, scored as the base
                removed_tools=removed,
            )
        }
        if (base_checkout := bases.checkout(merge_base, plan)) is not None:
            if world is not None:  # the base side runs the same definitions: the same seeds
                base_checkout = dataclasses.replace(
                    base_checkout,
                    world=world,
                    world_names=names,
                    world_files=checkouts[Side.head].world_files,
                )
            checkouts[Side.base] = base_checkout
            plan.base_behind = bases.behind(tip, base_checkout, plan)
        if setup.shape is not None:
            plan = setup.shape(plan, {side: c.resources for side, c in checkouts.items()})
        # the defaults the head's definitions were read with, as `validate` warns of them
        told = unknown_default_agent(config or load_config(head_root), head)
        yield Prepared(changes, plan, checkouts, warning_notes(told) + bases.notes)


@dataclass
class _Bases:
    """The base side of a change: the merge base's resources (what the change is diffed from
    and what the base side runs) and the ones that gate (the base branch's tip)."""

    git: Git
    stack: ExitStack
    head: ResourceSet
    head_root: Path
    config: RepoConfig | None
    from_base: bool
    instead: str
    """What else to do when the base branch's definitions do not load (`_unloadable`)."""
    changed: list[FileChange] = field(default_factory=list)
    base: ResourceSet | None = None
    root: Path | None = None
    whole: bool = False
    """`root` is a whole checkout of the merge base (the base loaded from one)."""
    gating: ResourceSet | None = None
    notes: list[str] = field(default_factory=list)

    def checkout(self, merge_base: str | None, plan: Plan) -> Checkout | None:
        """The base side's checkout, when it has resources: the merge base's tree limited to
        what any base run of this job may read (planned now or added by a later round),
        written before the first one starts, and what each agent's runs read of it."""
        if self.base is None or self.root is None:
            return None
        if merge_base is None:
            return Checkout(Side.base, self.root, self.base, FileIndex(self.root))
        listing = partial(self.git.under, merge_base)
        each = reach_of_each(self.base, plan.may_run(Side.base), listing)
        reach = joined(each.values())
        if not self.whole:
            self.root = self.stack.enter_context(self.git.worktree(merge_base, reach.checkout))
        return Checkout(
            Side.base,
            self.root,
            self.base,
            FileIndex(self.root),
            sha=merge_base,
            reads=reach.copied,
            agent_reads={name: own.copied for name, own in each.items()},
        )

    def behind(self, tip: str | None, base: Checkout, plan: Plan) -> dict[str, str]:
        """`Plan.base_behind`: the planned Evals whose base side's agent (the merge base's,
        `base`) the base branch has changed since, at `tip`; none where the merge base is
        the tip, or where the tip's definitions do not gate (`gate-config: head`)."""
        if not self.from_base or self.gating is None or tip is None or tip == base.sha:
            return {}
        return behind_tip(self.git, tip, base, self.gating, plan.evals)

    def world(
        self, tip: str | None, plan: Plan, gate: ResourceSet
    ) -> tuple[Path | None, frozenset[str]]:
        """The base branch's tree, with what either side's playgrounds read of it, when they
        are ones the base branch defines (`gate-config: base`): they are made from it, not
        from the head, nor from the merge base, whose definitions do not gate."""
        gating = self.gating
        if not self.from_base or gating is None or tip is None:
            return None, frozenset()
        base = self.base
        if not uses_playgrounds(plan, gate, Side.head) and not (
            base is not None and uses_playgrounds(plan, base, Side.base)
        ):
            return None, frozenset()
        reach = world_reach(gating, [*plan.may_run(Side.head), *plan.may_run(Side.base)])
        return self.stack.enter_context(self.git.worktree(tip, reach.checkout)), world_names(gating)

    def load(
        self, head_commit: str | None, tip: str, merge_base: str, index: FileIndex, dirty: set[str]
    ) -> None:
        """The merge base's resources and the base branch's tip's; `dirty`, what the working
        tree changed where the change is read (`_where_changes_count`)."""
        git = self.git
        config = self.config or load_config(self.head_root)
        if head_commit is None and not dirty:
            # A working tree clean where the definitions look is its commit: diffing the
            # trees reads what changed, not every file of the checkout (git stats them all to
            # diff against a working tree).
            head_commit = "HEAD"
        self.changed = git.changed_files(merge_base, head_commit)
        try:
            differs = changed_paths(self.changed) | dirty
            loaded = load_base(git, merge_base, self.head, differs, self.stack, config)
            self.base, self.root, self.whole = loaded.resources, loaded.root, loaded.whole
        except ResourceError as exc:
            if self.from_base:
                raise self._base_refusal(exc, merge_base, tip, head_commit, dirty, config) from None
            self.notes.append(
                f"the base branch's resources do not load, so there is no baseline: "
                f"{exc.problems[0].render()}"
            )
        if not self.from_base or tip == merge_base:
            self.gating = self.base
            return
        # What gates is the base branch as it is now, not as it was when the pull request
        # branched off: the merge base is only what the change is diffed from and what the
        # base side runs.
        differs = changed_paths(git.changed_files(tip, head_commit)) | dirty
        try:
            self.gating = load_base(git, tip, self.head, differs, self.stack, config).resources
        except ResourceError as exc:
            raise _unloadable(exc, tip, self.instead) from None

    def _base_refusal(
        self,
        exc: ResourceError,
        merge_base: str,
        tip: str,
        head: str | None,
        dirty: set[str],
        config: RepoConfig,
    ) -> ResourceError:
        """The merge base's definitions do not load, so nothing can gate. Where the base
        branch has moved on and they load at its tip, the base branch is whole: this branch
        was made before they did (before the repository had them, or before a mend), and the
        base side runs its branch point, so updating the branch is the way on, not mending
        the base branch or a bypass."""
        if tip != merge_base:
            differs = changed_paths(self.git.changed_files(tip, head)) | dirty
            try:
                load_base(self.git, tip, self.head, differs, self.stack, config)
            except ResourceError:
                pass
            else:
                return ResourceError(
                    exc.problems,
                    source=f"the commit this branch was made from ({merge_base[:12]})",
                    after=(
                        "The base branch's definitions load as they are now, not as they were "
                        "where this branch was made from it, which the gate's base side runs. "
                        + UPDATE_THE_BRANCH,
                    ),
                )
        return _unloadable(exc, merge_base, self.instead)


def behind_tip(
    git: Git, tip: str, base: Checkout, gating: ResourceSet, evals: list[str]
) -> dict[str, str]:
    """Of `evals`, those whose base side's agent differs at `tip` from the merge base's
    (`base.sha`), each with that agent: change detection's rule (`changes.agents_changed`)
    on the diff between the two, reading the agent's files as the base side's keys do
    (`base.index`). An agent the merge base lacks and the tip has, or one the tip lacks,
    has changed: only the same agent at both lets the merge base's stand for the tip's."""
    resources = base.resources
    targets = {
        name: resources.evals[name].resource.spec.target_agent
        for name in evals
        if name in resources.evals
    }
    ran = {
        agent: resources.agents[agent] for agent in targets.values() if agent in resources.agents
    }
    changed = {agent for agent in targets.values() if agent not in ran and agent in gating.agents}
    if ran:
        index = base.index or FileIndex(base.root)
        only = dataclasses.replace(resources, agents=ran)
        changed |= set(agents_changed(git.changed_files(base.sha, tip), only, gating, index))
    return {name: agent for name, agent in targets.items() if agent in changed}


# The merge base's resources, parsed from only what a change touched when that is safe.


@dataclass(frozen=True)
class LoadedBase:
    """The merge base's resources and the folder they were loaded from: a whole checkout of
    it (`whole`), or an overlay of the YAML files the change touched."""

    resources: ResourceSet
    root: Path
    whole: bool


def load_base(
    git: Git,
    merge_base: str,
    head: ResourceSet,
    differs: set[str],
    stack: ExitStack,
    config: RepoConfig,
) -> LoadedBase:
    """The merge base's resources, parsing only what the change touched.

    A resource is the head's only while everything it was made from is unchanged: its file
    and every file it reads (`ResourceSet.reads`). Then it is reused; the base versions of
    the changed YAML files are read from git into a small overlay directory and parsed. When
    the change touches what an unchanged resource reads (the overlay holds none of that), a
    symbolic link, `evalward.yaml` or a `.gitattributes` (which decides what the head's
    checkout wrote), the base is checked out and loaded whole; the caller checks one out
    later with what the base side's runs read (`plan/reach.py`).
    """
    door = RepoFiles.at_commit(git, git.resolve(merge_base))
    wanted = sorted(p for p in differs if p.endswith((".yaml", ".yml")))
    if not (
        needs_full_load(differs)
        or head.depending_on(differs)
        or any(posixpath.basename(p) == ".gitattributes" for p in differs)
        or _linked(head)
        or door.links_among(wanted)
    ):
        overlay = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="evalward-base-")))
        for path, content in door.contents(wanted).items():
            target = overlay / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        try:
            base = load_changed_resources(
                overlay, head, differs, config, check_files=False, door=door
            )
        except ResourceError:
            pass  # e.g. an AgentV file whose references the overlay lacks: load it whole
        else:
            return LoadedBase(base, overlay, whole=False)
    root = stack.enter_context(git.worktree(merge_base))
    door = RepoFiles.at_commit(git, door.commit or merge_base, root)
    return LoadedBase(load_resources(root, config=config, door=door), root, whole=True)


def _linked(resources: ResourceSet) -> bool:
    """Whether a resource file is a symbolic link: its content can change while its path does
    not, so the overlay (which reuses unchanged paths) cannot be trusted with it."""
    return any((resources.root / file).is_symlink() for file in resources.definition_files())


def _where_changes_count(
    head: ResourceSet, index: FileIndex, config: RepoConfig
) -> tuple[set[str] | None, list[str]]:
    """Where an uncommitted change can alter what the change is (`Git.dirty_paths`): the
    folders of the head's definition files and of every path they read (the links on the
    way and where they lead), the folders agents watch or name, `evalward.yaml`; among
    tracked files also any definition under the resource roots (one deleted from the working
    tree is in no file the head names) and any `.gitattributes`. None: everywhere (a watch
    glob that may match any path, or the root folder named). An untracked file elsewhere
    changes nothing: the base is loaded from git and change detection reads only these
    paths. Folders, not each file: git matches every path of its index against every
    pathspec it is given."""
    root = head.root
    named = {CONFIG_FILE, *head.definition_files()}
    read: set[str] = set().union(*head.reads.values())
    folders: set[str] = set()
    # every agent's watched folders listed in one git call, not one each
    index.prefetch(glob for located in head.agents.values() for glob in read_globs(located, index))
    for located in head.agents.values():
        watched = watched_folders(read_globs(located, index))
        if "" in watched:
            return None, []
        folders.update(watched)
        for path in agent_reads(located, index):
            read |= index.looked_up(path)
    # A folder on the way to a read path counts for its links, which are files to git.
    named.update(p for p in read if index.is_link(p) or not (root / p).is_dir())
    folders.update(posixpath.dirname(path) or path for path in named)
    tracked = ["**/.gitattributes"]
    for folder in {posixpath.normpath(r).strip("/") for r in config.roots}:
        if folder in ("", ".") or (root / folder).is_symlink():
            tracked += ["**/*.yaml", "**/*.yml"]
        else:
            folders.add(folder)
    return {f for f in folders if not folders_of(f) & folders}, sorted(set(tracked))


def _head_side(
    setup: RunSetup,
    stack: ExitStack,
    config: RepoConfig | None,
    tip: str | None,
    *,
    compared: bool,
) -> tuple[Path, ResourceSet, FileIndex, set[str]]:
    """The head's tree, its resources, its listing (one reading of it: changes and cache
    keys) and what the working tree changed where the change is read (`_where_changes_count`;
    asked where it counts: a head commit's run, or one `compared` with a base).

    The working tree stands for a head commit it is checked out at only while it holds that
    commit where the change is read: a step of the job before evalward (an install that runs
    the pull request's code) may have written there, and the head's keys hash the files of
    its tree while its runs read the commit's (`RepoFiles.at_commit`). A result the base made
    would then answer a head whose tree was put back to the base's files. So such a head is
    read from a worktree of its commit instead."""
    git, commit = setup.git, setup.revisions.head
    root = stack.enter_context(_tree(git, commit))
    head = _load_head(git, commit, root, config, tip)
    index = FileIndex(root)
    if root != git.repo or (commit is None and not compared):
        return root, head, index, set()
    where = _where_changes_count(head, index, config or load_config(root))
    dirty = git.dirty_paths(*where, unchecked=commit is not None)
    # evalward's own folder (its cache, its outputs) is in no listing and no run's copy
    if commit is None or all(path.split("/", 1)[0] == NOT_READ for path in dirty):
        return root, head, index, dirty
    root = stack.enter_context(git.worktree(commit))
    head = _load_head(git, commit, root, config, tip)
    return root, head, FileIndex(root), set()


def _load_head(
    git: Git, commit: str | None, root: Path, config: RepoConfig | None, tip: str | None
) -> ResourceSet:
    """The head's resources, from `root` through the head's door (`_head_files`); a
    problem at the base branch's `evalward.yaml` (`config`, read at `tip`) says whose it is."""
    try:
        return load_resources(root, config=config, door=_head_files(git, commit, root))
    except ResourceError as exc:
        raise _with_whose_config(exc, config, tip) from None


def _head_files(git: Git, head: str | None, root: Path) -> RepoFiles:
    """The head's door (files/committed.py): its commit's files, or the working tree's when
    no head commit is asked for (the user's own uncommitted code, run as themselves)."""
    if head is None:
        return RepoFiles.working_tree(root)
    return RepoFiles.at_commit(git, git.resolve(head), root)


def config_at(git: Git, commit: str) -> RepoConfig:
    """The `evalward.yaml` of a commit (defaults when it has none)."""
    return parse_config(RepoFiles.at_commit(git, commit).contents([CONFIG_FILE]).get(CONFIG_FILE))


def _with_whose_config(
    exc: ResourceError, config: RepoConfig | None, tip: str | None
) -> ResourceError:
    """`exc`, where a problem is at `evalward.yaml` that is the base branch's (`config`,
    read in place of the pull request's), with a line that says so: its roots are where the
    pull request's resources are looked for, and an edit of the pull request's own file
    changes nothing until it is merged."""
    if config is None or tip is None or not any(p.file == CONFIG_FILE for p in exc.problems):
        return exc
    said = (
        f"evalward.yaml above is the base branch's (at {tip[:12]}), read in place of this "
        "change's: where resources live decides what gates. Keep them where its roots look, "
        "or change the roots on the base branch first."
    )
    return ResourceError(exc.problems, source=exc.source, after=(*exc.after, said))


BASE_FIRST = (
    "The base branch's definitions decide the gate, so nothing can gate until they load: fix "
    "them on the base branch first"
)
"""The way on when the base branch's definitions do not load, for every front end: a change
that mends them is gated by them too. Each adds its own other way (`RunSetup.unloadable_base`)."""


def _unloadable(exc: ResourceError, commit: str, instead: str) -> ResourceError:
    """The base branch's definitions decide what gates; when they do not load, nothing can:
    the problems, then what to do (`BASE_FIRST`, or `instead`)."""
    way = f"{BASE_FIRST}, or {instead}." if instead else f"{BASE_FIRST}."
    return ResourceError(exc.problems, source=f"the base branch ({commit[:12]})", after=(way,))


@contextmanager
def _tree(git: Git, commit: str | None) -> Iterator[Path]:
    """The working tree when it already is `commit` (or no commit is asked for), else a worktree."""
    if commit is None or git.resolve("HEAD") == git.resolve(commit):
        yield git.repo
        return
    with git.worktree(commit) as path:
        yield path
