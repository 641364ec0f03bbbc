"""What a side's runs read from a commit that is not the working tree: the paths its checkout
must hold, so that it is written once, before anything runs, with exactly those.

A run on the base side (or the head side's playgrounds, made from the base branch under
`gate-config: base`) can start at any point of a job: planned at the start, or added later by
adaptive reps, the base runs held until the head has run, a rerun. So the tree is decided
from everything the side *may* run (every Eval and fixture of the plan, whatever rep), never
from the first round alone, and written before the first run: what a run reads is then there
whenever it starts, and the result cache hashes the same files the run reads.

What a definition reads is docs/github.md's "What the base side reads" (a program that names
no `watch`, or a playground's service that names none, may read anything: the whole commit).
Each agent's runs get a copy of what that agent alone reads (`reach_of_each`): what it can
read is then what its cache key hashes, never a file only another agent of the plan names,
nor one only its playground's service reads, in a copy of its own (runtime/playground/
service.py). Code scorers,
AgentV cases, grader prompts and the like are read with their fixture, from git, and need no
checkout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from evalward.errors import GitError, TreeError
from evalward.files.inside import glob_matches, watched_folders
from evalward.plan.fingerprint import (
    imports_from_root,
    paths_under,
    reads_everything,
    referenced_files,
    root_modules,
)
from evalward.plan.plan import PlannedRun
from evalward.plan.playgrounds import defined_playground, snapshot_files
from evalward.resources import Located, ResourceSet
from evalward.resources.models import Agent
from evalward.resources.playground import Playground
from evalward.runtime.playground.service import service_reads


@dataclass
class Reach:
    """The paths a side's runs read, or why they need the whole commit."""

    paths: set[str] = field(default_factory=set)
    whole: str = ""
    """Why the whole commit is checked out and copied for its agents (the first definition
    that needs it); "" when `paths` is all."""
    made_from: set[str] = field(default_factory=set)
    """What its playgrounds are made from (seeds, snapshots, what a service reads): checked
    out, never in an agent's copy. evalward reads seeds and snapshots through the side's
    door, and a service runs in a copy of its own: a file only the playground reads is not
    the agent's to read, as its cache key does not hash it where the playground is made
    from another tree (the base branch's, under `gate-config: base`)."""
    tree: str = ""
    """Why the whole commit is checked out while its agents' copies hold `paths` alone: a
    playground's service that names no `watch` reads it all, in a copy of its own."""

    def everything(self, why: str) -> None:
        self.whole = self.whole or why

    @property
    def checkout(self) -> set[str] | None:
        """What to check out: the paths and what its playgrounds are made from, or None for
        the whole commit."""
        return None if self.whole or self.tree else self.paths | self.made_from

    @property
    def copied(self) -> frozenset[str] | None:
        """`checkout`, frozen: what a working copy holds (None: the whole commit)."""
        return None if self.whole else frozenset(self.paths)


def joined(reaches: Iterable[Reach]) -> Reach:
    """What several reaches read together (the tree that holds every one of them)."""
    together = Reach()
    for reach in reaches:
        together.paths |= reach.paths
        together.made_from |= reach.made_from
        together.everything(reach.whole)
        together.tree = together.tree or reach.tree
    return together


ListFiles = Callable[[list[str]], Iterable[str]]
"""The tree's files at or below some folders (`Git.under`, `FileIndex.listed`)."""


def reach_of_each(
    resources: ResourceSet, runs: Iterable[PlannedRun], listing: ListFiles
) -> dict[str, Reach]:
    """By agent, what its own runs of `runs` read (`agents_reach` of those alone): an
    agent's working copy holds this and no more, so a file another agent of the plan reads
    (a root `.env`, a `package.json` above its script) is not there for it to read."""
    by_agent: dict[str, list[PlannedRun]] = {}
    for run in runs:
        located_eval = resources.evals.get(run.eval)
        if located_eval is not None:
            by_agent.setdefault(located_eval.resource.spec.target_agent, []).append(run)
    listed = _listed_once(resources, by_agent, listing)
    return {name: agents_reach(resources, own, listed) for name, own in by_agent.items()}


def _listed_once(resources: ResourceSet, agents: Iterable[str], listing: ListFiles) -> ListFiles:
    """`listing` asked once, of every one of `agents`' watched folders (the root, where one
    imports from it): each agent's reach then reads its own folders of that answer, where a
    git call each made a thousand agents' plan start a thousand git processes."""
    located = [resources.agents[name] for name in agents if name in resources.agents]
    watched = [glob for agent in located for glob in agent.resource.spec.watch]
    folders = watched_folders(watched) if watched else []
    if any(imports_from_root(agent.resource.spec) for agent in located):
        folders.append("")
    ordered = sorted(listing(folders)) if folders else []

    def within(asked: list[str]) -> list[str]:
        return sorted({p for folder in asked for p in paths_under(ordered, folder.strip("/"))})

    return within


def agents_reach(resources: ResourceSet, runs: Iterable[PlannedRun], listing: ListFiles) -> Reach:
    """What `runs` (`Plan.may_run`: one of each Eval and fixture) read of `resources`'
    commit (its files below a folder listed by `listing`, only where a `watch` glob may
    match): their agents' files and their playgrounds'."""
    reach = Reach()
    agents: set[str] = set()
    for run in runs:
        eval_name, fixture = run.eval, run.fixture
        located_eval = resources.evals.get(eval_name)
        if located_eval is None or fixture not in resources.fixtures:
            continue
        agents.add(located_eval.resource.spec.target_agent)
        playground_reach(resources, eval_name, fixture, reach)
    located = [resources.agents[name] for name in sorted(agents) if name in resources.agents]
    watched = [glob for agent in located for glob in agent.resource.spec.watch]
    folders = watched_folders(watched) if watched else []
    if any(imports_from_root(agent.resource.spec) for agent in located):
        folders.append("")  # the root's modules: the whole listing, once
    listed = sorted(listing(folders)) if folders else []
    for agent in located:
        _agent(agent, listed, reach)
    return reach


def world_reach(gating: ResourceSet, runs: Iterable[PlannedRun]) -> Reach:
    """What either side's playgrounds read of the base branch's tree, under `gate-config:
    base`: those of the runs whose playground the base branch defines (an Eval's is made
    from it for the fixtures a pull request adds to it, too)."""
    reach = Reach()
    for run in runs:
        eval_name, fixture = run.eval, run.fixture
        located_eval = gating.evals.get(eval_name)
        if located_eval is None:
            continue
        if fixture in gating.fixtures:
            playground_reach(gating, eval_name, fixture, reach)
            continue
        spec = located_eval.resource.spec.playground
        if spec is not None:
            _made_from(gating, f"Eval {eval_name!r}", spec, [], reach)
    return reach


def playground_reach(resources: ResourceSet, eval_name: str, fixture: str, reach: Reach) -> None:
    """Add what the run's playground is made from to `reach`."""
    defined = defined_playground(resources, eval_name, fixture)
    if defined is None:
        return
    name, spec, kind = defined
    _made_from(resources, f"{kind} {name!r}", spec, snapshot_files(resources, fixture), reach)


def _made_from(
    resources: ResourceSet, named: str, spec: Playground, snapshots: list[str], reach: Reach
) -> None:
    """Add what a playground is made from of `resources`' tree to `reach`: its seeds, its
    snapshots, and what its service reads (the whole tree, for one that names no `watch`)."""
    if spec.reads_everything:
        reach.tree = reach.tree or f"{named}'s playground runs a service that names no `watch`"
    reach.made_from.update(path.lstrip("/") for path in [*spec.paths(), *snapshots])
    if spec.reads_everything or spec.service is None:
        return
    try:
        reads = service_reads(spec, resources.files)
    except (TreeError, OSError, GitError):  # its start says why; the tree holds it all
        reach.tree = reach.tree or f"{named}'s service's `watch` could not be listed"
        return
    reach.made_from.update(reads or ())


def _agent(located: Located[Agent], listed: list[str], reach: Reach) -> None:
    """Add what the agent reads to `reach`; `listed`: the sorted paths its globs may match."""
    spec = located.resource.spec
    name = located.resource.metadata.name
    reach.paths.update(referenced_files(located))
    if spec.environment is not None:
        reach.paths.update(spec.environment.folders())
        if "." in reach.paths:
            reach.everything(f"agent {name!r}'s environment is the repository's root folder")
    if reads_everything(spec):
        reach.everything(f"agent {name!r} runs a program and names no `watch`")
    if imports_from_root(spec):
        reach.paths.update(root_modules(listed))
    for folder in watched_folders(spec.watch):
        under = paths_under(listed, folder)
        reach.paths.update(path for path in under if any(glob_matches(path, p) for p in spec.watch))
