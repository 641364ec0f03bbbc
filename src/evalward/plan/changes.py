"""From a base..head diff to the agents it changes and the Evals it affects.

Definitions are compared as parsed resources, not as text: reformatting a YAML file or editing
its comments is "no semantic change", as is moving it, unless where it now is makes the paths
it names mean other files (a `systemFile` relative to it). An agent also changes when a file
it references or a path its `watch` globs cover changes, or a `.gitattributes` above those
files does (it decides what the checkout writes for them). A changed, added or removed
fixture or Eval affects the Evals that select it.

A base agent is also where it was defined: when its file (or git's rename of it) now defines
an agent it did not define before, in its place, that agent is the base agent renamed, even
where the head defines the old name in another file (a copy of the base's definition would
otherwise stand in for the agent the pull request changed). Its Evals do not run, as where
it is gone.
"""

from __future__ import annotations

import posixpath
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from evalward.errors import ConfigError, NotCommitted
from evalward.files.committed import RepoFiles
from evalward.files.inside import glob_matches, literal_start
from evalward.git import FileChange
from evalward.plan.fingerprint import (
    FileIndex,
    agent_reads,
    imports_from_root,
    may_cover,
    paths_under,
    read_globs,
    reads_everything,
    referenced_files,
    root_modules,
)
from evalward.resources import Located, ResourceSet
from evalward.resources.models import Agent
from evalward.text.escaping import printable


@dataclass
class ChangeSet:
    """Why each agent counts as changed and why each Eval must run."""

    changed_files: list[FileChange] = field(default_factory=list)
    changed_agents: dict[str, list[str]] = field(default_factory=dict)
    cosmetic_agents: list[str] = field(default_factory=list)
    """Agents whose file changed with no semantic change (reformatting, comments)."""
    removed_agents: list[str] = field(default_factory=list)
    renamed_agents: dict[str, str] = field(default_factory=dict)
    """Removed agent -> the agent defined in its place (same file, or git's rename of it)."""
    displaced_agents: dict[str, str] = field(default_factory=dict)
    """Agent the head defines in another file -> why its Evals do not run: the file that
    defined it now defines another agent in its place, which is the base agent renamed."""
    affected_evals: dict[str, list[str]] = field(default_factory=dict)
    removed_evals: list[str] = field(default_factory=list)
    gate_changes: list[str] = field(default_factory=list)
    """How the PR changes its own gate: Evals, fixtures and calibrations it edits."""

    def note_agent(self, agent: str, reason: str) -> None:
        reasons = self.changed_agents.setdefault(agent, [])
        if reason not in reasons:
            reasons.append(reason)

    def note_eval(self, name: str, reason: str) -> None:
        reasons = self.affected_evals.setdefault(name, [])
        if reason not in reasons:
            reasons.append(reason)

    def why_gone(self, agent: str) -> str:
        """Why the head has no agent of that name (the change renamed or removed it), or why
        the one it has is not the base's (its file now defines another agent)."""
        displaced = self.displaced_agents.get(agent)
        if displaced:
            return displaced
        renamed = self.renamed_agents.get(agent)
        if renamed:
            return f"agent {agent} was renamed to {renamed}"
        if agent in self.removed_agents:
            return f"agent {agent} was removed"
        return f"agent {agent} is not on the head"


def detect_changes(
    changed_files: list[FileChange],
    head: ResourceSet,
    base: ResourceSet | None,
    gating: ResourceSet | None = None,
    index: FileIndex | None = None,
) -> ChangeSet:
    """What the change from `base` (the merge base) to `head` touches. `gating` (the base
    branch's definitions that gate, when newer than the merge base) adds its Evals of the
    agents the change touches: an Eval the base branch gained since still gates them.
    `index` lists the head's checkout (the one the result cache's keys read, when given)."""
    result = ChangeSet(changed_files=changed_files)
    _agents(result, changed_paths(changed_files), head, base, index or FileIndex(head.root))
    if base is not None and gating is not None and gating is not base:
        _behind_the_base_branch(result, base, gating)
    if base is not None:
        _gate_resources(result, head, base)
    # An Eval the pull request deleted or renamed still covers the agent it changed: the base's
    # definitions count as much as the head's.
    definitions = [d for d in (base, gating) if d is not None]
    for name in result.changed_agents:
        for resources in (head, *definitions):
            for eval_def in resources.evals_targeting(name):
                result.note_eval(eval_def.resource.metadata.name, f"agent {name} changed")
    for name in result.removed_agents:
        for resources in definitions:
            for eval_def in resources.evals_targeting(name):
                result.note_eval(eval_def.resource.metadata.name, result.why_gone(name))
    for name, why in result.displaced_agents.items():
        for resources in definitions:
            for eval_def in resources.evals_targeting(name):
                result.note_eval(eval_def.resource.metadata.name, why)
    return result


def agents_changed(
    changed_files: list[FileChange], agents: ResourceSet, other: ResourceSet, index: FileIndex
) -> dict[str, list[str]]:
    """The agents of `agents` that differ in `other`, by the rule that finds a change's
    changed agents (their definitions compared, and what they read, through `index`, a
    listing of `agents`' tree, against `changed_files`, the diff between the two): an agent
    `other` lacks is changed."""
    result = ChangeSet(changed_files=changed_files)
    _agents(result, changed_paths(changed_files), agents, other, index)
    return result.changed_agents


def changed_paths(changed: list[FileChange]) -> set[str]:
    """The paths a change touches: each file's, and a renamed file's old one."""
    return {c.path for c in changed} | {c.old_path for c in changed if c.old_path}


def _agents(
    result: ChangeSet,
    touched: set[str],
    head: ResourceSet,
    base: ResourceSet | None,
    index: FileIndex,
) -> None:
    ordered = sorted(touched)
    attribute_files = _attribute_files(touched)
    index.prefetch(glob for located in head.agents.values() for glob in read_globs(located, index))
    for name, located in sorted(head.agents.items()):
        before = base.agents.get(name) if base is not None else None
        _definition(result, located, before, touched)
        read = _reads(result, located, index, touched, ordered)
        for attributes in attribute_files:
            if _reads_below(posixpath.dirname(attributes), located, read):
                result.note_agent(
                    name,
                    f"{printable(attributes)} changed: it decides how the agent's files are "
                    "checked out",
                )
    if base is not None:
        result.removed_agents = sorted(set(base.agents) - set(head.agents))
        _renames(result, head, base)
    result.cosmetic_agents = [
        a
        for a in result.cosmetic_agents
        if a not in result.changed_agents and a not in result.displaced_agents
    ]


UPDATE_THE_BRANCH = (
    "Merge or rebase the base branch into this branch, so that the gate runs the agents as "
    "they will be merged, against the Evals the base branch has for them now."
)


def _behind_the_base_branch(result: ChangeSet, base: ResourceSet, gating: ResourceSet) -> None:
    """Refuse a change that the base branch has moved the agents of since it branched off
    (`base`: the merge base's definitions; `gating`: the base branch's now), for then the
    agents it merges into are not the ones it changes, and their Evals would not run: an
    agent it changes that the base branch has renamed or removed (its Evals there target the
    new name, or are gone), or a file it touches that an agent of the base branch reads as
    defined there now and not as defined where it branched off (an agent added since, or
    one whose definition was changed to read it). ConfigError: nothing is gated."""
    gone = [n for n in sorted(result.changed_agents) if n in base.agents and n not in gating.agents]
    if gone:
        raise ConfigError(
            f"agent {gone[0]}, which this change changes, is no longer defined on the base "
            "branch: it was renamed or removed there after this branch was made, so no Eval "
            f"of the base branch targets it by that name. {UPDATE_THE_BRANCH}"
        )
    ordered = sorted(changed_paths(result.changed_files))
    for name, located in sorted(gating.agents.items()):
        before = base.agents.get(name)
        if name in result.changed_agents or (
            before is not None
            and before.resource.spec == located.resource.spec
            and referenced_files(before) == referenced_files(located)
        ):
            continue
        hit = _read_by(located, ordered, gating.files)
        if hit:
            how = "added" if before is None else "changed"
            raise ConfigError(
                f"{printable(hit)}, which this change touches, is read by agent {name} as the "
                f"base branch defines it now ({printable(located.file)}), not as this branch "
                f"does: the base branch {how} the agent after this branch was made. "
                f"{UPDATE_THE_BRANCH}"
            )


def _read_by(located: Located[Agent], ordered: list[str], door: RepoFiles) -> str:
    """The first of the sorted `ordered` paths the agent reads, as change detection finds
    them (`_reads`): a file or folder it names (the root among them), or where a link it
    names leads in `door`'s tree (its definitions'), one its `watch` covers, a module at
    the root where Python runs it from there, any where it runs a program and names no
    `watch`; "" for none."""
    spec = located.resource.spec
    if ordered and (reads_everything(spec) or "." in referenced_files(located)):
        return ordered[0]
    for named in sorted(referenced_files(located)):
        for path in dict.fromkeys((named, _led_to(door, named))):
            hit = next(iter(_below(ordered, path)), path if path in ordered else None)
            if hit is not None:
                return hit
    for pattern in spec.watch:
        hit = _first_matching(ordered, pattern)
        if hit is not None:
            return hit
    return next(iter(root_modules(ordered) if imports_from_root(spec) else []), "")


def _led_to(door: RepoFiles, path: str) -> str:
    """The repository path `path` leads to in the door's tree, links followed (inside the
    repository only); `path` itself where it leads nowhere there."""
    try:
        return door.place(path)[0]
    except NotCommitted:
        return path


def _definition(
    result: ChangeSet, located: Located[Agent], before: Located[Agent] | None, touched: set[str]
) -> None:
    """Whether the agent's definition changed: new, its spec, or moved where it reads other
    files; a definition only reformatted or moved is cosmetic."""
    name, spec = located.resource.metadata.name, located.resource.spec
    if before is None:
        result.note_agent(name, "new agent")
    elif before.resource.spec != spec:
        fields = _changed_fields(before.resource.spec, spec)
        result.note_agent(name, f"{', '.join(fields)} changed in {printable(located.file)}")
    elif _moved_elsewhere(before, located):
        moved = f"{printable(before.file)} to {printable(located.file)}"
        result.note_agent(name, f"definition moved from {moved}: it names other files")
    elif located.file in touched or before.file != located.file:
        result.cosmetic_agents.append(name)


def _reads(
    result: ChangeSet,
    located: Located[Agent],
    index: FileIndex,
    touched: set[str],
    ordered: list[str],
) -> set[str]:
    """Note what the change touched of the files the agent reads; return every path those
    reads look up (the links on the way and where they lead)."""
    name = located.resource.metadata.name
    # What the result cache hashes (`fingerprint.agent_reads`), read the same way: a path
    # changes when it, or a link on its way or where one leads, does.
    referenced = set(referenced_files(located))
    read: set[str] = set()
    for path in agent_reads(located, index):
        looked = index.looked_up(path)
        read |= looked
        hits = sorted(looked & touched)
        if not hits:
            continue
        if path in referenced:
            result.note_agent(name, f"{printable(hits[-1])} changed")
        elif hits != [path]:
            shown = f"{printable(hits[-1])}, through a symbolic link"
            result.note_agent(name, f"watched path {printable(path)} changed ({shown})")
    noted = False
    for named in sorted(referenced - {"."}):
        # What a named folder held: a file the head removed from it is in no listing.
        hit = next(iter(_below(ordered, named)), None)
        if hit is not None:
            result.note_agent(name, f"{printable(hit)} changed")
            noted = True
    if "." in referenced and ordered and not noted:
        why = ""
        if reads_everything(located.resource.spec):
            why = " (it runs a program and names no `watch`: any file may change it)"
        result.note_agent(name, f"{printable(ordered[0])} changed{why}")
    for pattern in located.resource.spec.watch:
        hit = _first_matching(ordered, pattern)
        if hit is not None:
            result.note_agent(name, f"watched path {printable(hit)} changed")
    if imports_from_root(located.resource.spec):
        # A module the head removed from the root is in no listing of the head.
        for hit in root_modules(ordered)[:1]:
            result.note_agent(
                name, f"{printable(hit)} changed (Python run with -m or -c imports from the root)"
            )
    return read


def _first_matching(ordered: list[str], pattern: str) -> str | None:
    """The first of the sorted `ordered` paths the `watch` glob `pattern` matches."""
    return next((p for p in _starting(ordered, pattern) if glob_matches(p, pattern)), None)


def _starting(ordered: list[str], pattern: str) -> Iterator[str]:
    """The paths of the sorted `ordered` that begin with the glob's literal start, in order:
    no other can match it, and they stand together, found by bisection (each agent's
    `watch` is matched against the change's paths: the cost follows what may match)."""
    literal = literal_start(pattern)
    for path in ordered[bisect_left(ordered, literal) :]:
        if not path.startswith(literal):
            return
        yield path


def _below(ordered: list[str], named: str) -> list[str]:
    """The paths of the sorted `ordered` under the folder `named` ("." for the root)."""
    return ordered if named == "." else [p for p in paths_under(ordered, named) if p != named]


def _moved_elsewhere(before: Located[Agent], after: Located[Agent]) -> bool:
    """Whether a definition moved to where the same spec reads other files: a `systemFile`
    written the old way is read relative to the file that names it, so moving the file
    beside another prompt changes what the agent reads (and its cache key, which hashes
    those paths)."""
    return before.file != after.file and referenced_files(before) != referenced_files(after)


def _attribute_files(touched: set[str]) -> list[str]:
    """The `.gitattributes` files the change touches. Their `eol`, `ident` or
    `working-tree-encoding` rewrite the files below them on checkout: an agent's program or
    prompt can read differently with no change to its own blob."""
    return sorted(p for p in touched if posixpath.basename(p) == ".gitattributes")


def _reads_below(folder: str, located: Located[Agent], read: set[str]) -> bool:
    """Whether the agent names or watches a file under `folder` ("" for the root), or reads
    one there through a link (`read`: every path its reads look up, where links lead
    included). A watch glob may match under `folder` when its literal start (before its
    first wildcard) and the folder are one the other's beginning: `packages/*/src/**` for
    `packages/core`."""
    if not folder:
        return bool(referenced_files(located) or located.resource.spec.watch)
    if any(p.startswith(f"{folder}/") for p in (*referenced_files(located), *read)):
        return True
    return may_cover(folder, located.resource.spec.watch)


def _renames(result: ChangeSet, head: ResourceSet, base: ResourceSet) -> None:
    """The base agents whose file (the same path, or git's rename of it) no longer defines
    them and now defines an agent it did not define on the base, a new one or one the change
    changed: that agent took its place, so it is the base agent renamed (two agents that
    trade files unchanged took no one's place). Where the head still defines the base
    agent's name, in another file, that is not the base's agent but a copy of its name: its
    Evals do not run on it (`displaced_agents`), as they do not run where it is gone
    (`renamed_agents`)."""
    moved = {c.old_path: c.path for c in result.changed_files if c.old_path}
    held: dict[str, set[str]] = {}
    for name, located in base.agents.items():
        held.setdefault(located.file, set()).add(name)
    defines: dict[str, list[str]] = {}
    for name, located in sorted(head.agents.items()):
        defines.setdefault(located.file, []).append(name)
    for name, before in sorted(base.agents.items()):
        places = {before.file, moved.get(before.file, before.file)}
        now = head.agents.get(name)
        if now is not None and now.file in places:
            continue
        taken = sorted(
            n
            for p in places
            for n in defines.get(p, [])
            if n not in held[before.file] and (n not in base.agents or n in result.changed_agents)
        )
        if not taken:
            continue
        if now is None:
            result.renamed_agents[name] = taken[0]
        else:
            result.displaced_agents[name] = (
                f"agent {name}'s file {printable(before.file)} now defines {taken[0]}, and "
                f"{name} is defined in {printable(now.file)}"
            )


def _gate_resources(result: ChangeSet, head: ResourceSet, base: ResourceSet) -> None:
    """Fixtures, Evals and calibrations the PR adds, edits or removes, and the Evals they affect."""
    fixtures = _diff("fixture", head.fixtures, base.fixtures, result)
    calibrations = _diff("JudgeCalibration", head.calibrations, base.calibrations, result)
    evals = _diff("Eval", head.evals, base.evals, result)
    result.removed_evals = sorted(set(base.evals) - set(head.evals))
    for name, located in sorted(head.evals.items()):
        if name in evals:
            result.note_eval(name, f"the Eval is {evals[name]}")
        selected = {f.resource.metadata.name for f in head.fixtures_of(located.resource)}
        before = base.evals.get(name)
        if before is not None:
            selected |= {f.resource.metadata.name for f in base.fixtures_of(before.resource)}
        for fixture in sorted(selected & set(fixtures)):
            result.note_eval(name, f"fixture {fixture} is {fixtures[fixture]}")
        calibration = located.resource.spec.judge.calibration
        if calibration in calibrations:
            result.note_eval(
                name, f"judge calibration {calibration} is {calibrations[calibration]}"
            )


def _diff(
    kind: str,
    head: Mapping[str, Located[Any]],
    base: Mapping[str, Located[Any]],
    result: ChangeSet,
) -> dict[str, str]:
    """name -> 'new' | 'removed' | 'changed', and a gate-change line for each."""
    out: dict[str, str] = {}
    for name in sorted(set(head) | set(base)):
        now, before = head.get(name), base.get(name)
        if before is None:
            out[name] = "new"
        elif now is None:
            out[name] = "removed"
            result.gate_changes.append(f"{kind} {name} removed")
        elif now.resource != before.resource:
            out[name] = "changed"
            fields = _changed_fields(before.resource, now.resource)
            result.gate_changes.append(f"{kind} {name}: {', '.join(fields)} changed")
    return out


def _changed_fields(before: BaseModel, after: BaseModel, limit: int = 4) -> list[str]:
    """The dotted camelCase paths whose values differ, the most specific first."""
    paths = sorted(_differences(_dump(before), _dump(after), ""))
    return paths[:limit] + ([f"{len(paths) - limit} more"] if len(paths) > limit else [])


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def _differences(before: Any, after: Any, path: str) -> Iterable[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            yield from _differences(
                before.get(key), after.get(key), f"{path}.{key}" if path else key
            )
    elif before != after:
        yield path or "definition"
