"""From a base..head diff to the agents it changes and the Evals it affects."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatch

from evalward.git import FileChange
from evalward.resources import ResourceSet


@dataclass
class ChangeSet:
    """Why each agent counts as changed and why each Eval must run."""

    changed_files: list[FileChange] = field(default_factory=list)
    changed_agents: dict[str, list[str]] = field(default_factory=dict)
    affected_evals: dict[str, list[str]] = field(default_factory=dict)

    def note_agent(self, agent: str, reason: str) -> None:
        self.changed_agents.setdefault(agent, []).append(reason)

    def note_eval(self, evaluation: str, reason: str) -> None:
        reasons = self.affected_evals.setdefault(evaluation, [])
        if reason not in reasons:
            reasons.append(reason)


def detect_changes(
    changed_files: list[FileChange], head: ResourceSet, base: ResourceSet | None
) -> ChangeSet:
    """An agent changed when its definition differs, a file it uses changed, or a watch glob hit.

    Definitions are compared as parsed resources, so reformatting or comment edits in a YAML
    file do not count as a change.
    """
    result = ChangeSet(changed_files=changed_files)
    touched = {c.path for c in changed_files} | {c.old_path for c in changed_files if c.old_path}
    for name, located in sorted(head.agents.items()):
        spec = located.resource.spec
        before = base.agents.get(name) if base is not None else None
        if before is None:
            result.note_agent(name, "new agent")
        elif before.resource.spec != spec:
            result.note_agent(name, f"definition changed in {located.file}")
        if spec.system_file and _resolve(located.file, spec.system_file) in touched:
            result.note_agent(name, f"system prompt file {spec.system_file} changed")
        for pattern in spec.watch:
            hit = next((p for p in sorted(touched) if fnmatch(p, pattern)), None)
            if hit is not None:
                result.note_agent(name, f"watched path {hit} changed")
    for name in result.changed_agents:
        for evaluation in head.evals_targeting(name):
            result.note_eval(evaluation.resource.metadata.name, f"agent {name} changed")
    return result


def _resolve(resource_file: str, reference: str) -> str:
    """A path referenced from a resource file, relative to the repository root."""
    import posixpath

    if reference.startswith("/"):
        return reference.lstrip("/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(resource_file), reference))
