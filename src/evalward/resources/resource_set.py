"""The loaded resources of one tree: each by kind and name, with where it was defined."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from evalward.errors import NotCommitted, Problem
from evalward.files.committed import RepoFiles
from evalward.files.inside import reference_candidates
from evalward.resources.models import KINDS, Agent, Eval, EvalFixture, JudgeCalibration
from evalward.resources.reading.problems import did_you_mean
from evalward.resources.reading.yamlsource import PathKey
from evalward.text.escaping import printable

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class Located(Generic[R]):
    """A validated resource and where it was defined (path relative to the root)."""

    resource: R
    file: str
    line: int
    document: int = 0
    """Index of the document in its file (for locating fields later)."""


class ProblemReporter(Protocol):
    """Records a problem (or, with `warning=True`, a warning) at a field of a loaded resource."""

    def __call__(
        self,
        located: Located[Any],
        loc: PathKey,
        message: str,
        *,
        warning: bool = False,
        consequence: bool = False,
    ) -> None: ...


@dataclass(frozen=True)
class NotLoaded:
    """A resource of the tree that does not load: where its first problem is (`file:line`),
    and the labels it gives itself (what a fixture selector would have matched)."""

    where: str
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class ResourceSet:
    """Every resource found under one root, by kind and name."""

    root: Path
    door: RepoFiles | None = field(default=None, compare=False)
    """How the files its definitions name are read (files/committed.py); None: the working
    tree at `root` (`files`)."""
    agents: dict[str, Located[Agent]] = field(default_factory=dict)
    fixtures: dict[str, Located[EvalFixture]] = field(default_factory=dict)
    evals: dict[str, Located[Eval]] = field(default_factory=dict)
    calibrations: dict[str, Located[JudgeCalibration]] = field(default_factory=dict)
    warnings: list[Problem] = field(default_factory=list)
    not_loaded: dict[tuple[str, str], NotLoaded] = field(default_factory=dict)
    """Documents of a known kind and name that do not load, by (kind, name): what names one
    says it is invalid and where, never that it is not defined."""
    unparsed: list[str] = field(default_factory=list)
    """Files that look like evalward's and are not YAML it can read: what they define is
    unknown, so a name no resource has may be theirs."""
    lost_roots: list[str] = field(default_factory=list)
    """Each root `evalward.yaml` lists that is no folder of the repository, with where
    (`'agent' (evalward.yaml:1:9)`): the folder it meant was not read, so a name no
    resource has may be defined there."""
    agentv_files: set[str] = field(default_factory=set)
    """Files read as AgentV: what they load depends on the files they reference."""
    reads: dict[str, set[str]] = field(default_factory=dict)
    """For each file whose resources depend on other files (an AgentV suite's cases file,
    content parts, grader prompts), every repository path they depend on
    (`paths.looked_up`): the file's resources are what they were only while none changed."""

    _label_index: dict[tuple[str, str], set[str]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _indexed: int = field(default=-1, init=False, repr=False, compare=False)
    _system_sizes: dict[str, int] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def files(self) -> RepoFiles:
        """The one door to the files its definitions name (files/committed.py)."""
        if self.door is None:
            self.door = RepoFiles.working_tree(self.root)
        return self.door

    def tables(self) -> dict[str, dict[str, Located[Any]]]:
        """Its resources by kind (as `kind:` names it), then by name."""
        return {
            "Agent": self.agents,
            "EvalFixture": self.fixtures,
            "Eval": self.evals,
            "JudgeCalibration": self.calibrations,
        }

    def definition_files(self) -> set[str]:
        """Every file a resource was read from, AgentV's among them."""
        tables = self.tables().values()
        return {located.file for table in tables for located in table.values()} | self.agentv_files

    def note_not_loaded(self, data: dict[str, Any], file: str, problems: list[Problem]) -> None:
        """Note a document of a known kind and name that does not load, at its first problem,
        when it names both and says why it does not load."""
        metadata = data.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        kind, name, labels = data.get("kind"), metadata.get("name"), metadata.get("labels")
        if kind not in KINDS or not isinstance(name, str) or not problems:
            return
        first = min(problems, key=Problem.order)
        where = printable(file) + (f":{first.line}" if first.line is not None else "")
        labels = labels if isinstance(labels, dict) else {}
        kept = {str(k): str(v) for k, v in labels.items() if isinstance(v, str | int | float)}
        self.not_loaded.setdefault((str(kind), name), NotLoaded(where, kept))

    def unresolved(self, kind: str, name: str, names: Iterable[str]) -> tuple[str, bool]:
        """How a reference to `name`, a `kind` that is not in `names`, ends its message, and
        whether it is the consequence of another problem: a resource that does not load is
        invalid, where its own problem says why (never "not defined", nor another's name), and
        one a file that did not parse, or a root of evalward.yaml that is no folder, may define
        follows that problem."""
        broken = self.not_loaded.get((kind, name))
        if broken is not None:
            return f", which is invalid: see {broken.where}", True
        if self.unparsed:
            files = ", ".join(printable(file) for file in self.unparsed[:3])
            more = f" and {len(self.unparsed) - 3} more" if len(self.unparsed) > 3 else ""
            return f", which is not defined: {files}{more} did not parse, and may define it", True
        if self.lost_roots:
            return f", which is not defined: {self.unread_roots()} may define it", True
        return f", which is not defined{did_you_mean(name, names)}", False

    def unread_roots(self) -> str:
        """The roots of evalward.yaml that are no folder (`lost_roots`), as the cause a name
        no resource has is told to follow: "... and the folder it meant"."""
        roots = " and ".join(self.lost_roots)
        return (
            f"no folder of the repository is at the root evalward.yaml lists as {roots}, and "
            "the folder it meant"
        )

    def fixtures_of(self, eval_def: Eval) -> list[Located[EvalFixture]]:
        """The union of the Eval's label selector and explicit list, in a stable order.

        Selection goes through an index of (label, value) -> fixture names, so selecting for
        every Eval of a large repository stays linear in what is selected.
        """
        names: set[str] = set()
        selector = eval_def.spec.fixture_selector
        if selector is not None and selector.match_labels:
            index = self._labels()
            sets = [index.get(pair, set()) for pair in selector.match_labels.items()]
            names = set.intersection(*sorted(sets, key=len))
        names.update(name for name in eval_def.spec.fixtures if name in self.fixtures)
        return [self.fixtures[name] for name in sorted(names)]

    def _labels(self) -> dict[tuple[str, str], set[str]]:
        if self._indexed != len(self.fixtures):
            index: dict[tuple[str, str], set[str]] = {}
            for name, fixture in self.fixtures.items():
                for pair in fixture.resource.metadata.labels.items():
                    index.setdefault(pair, set()).add(name)
            self._label_index, self._indexed = index, len(self.fixtures)
        return self._label_index

    def system_size(self, agent: str) -> int:
        """How long the system prompt is that the Agent `agent` sends, for the estimate: its
        `system`'s characters, or its `systemFile`'s bytes in this side's files (the door,
        files/committed.py: a commit's blob, never the working tree in a gate). The files of
        every Agent not asked before are asked of the door at once; one it cannot read counts
        nothing (the agent's runs are errors, which call no model)."""
        if agent not in self._system_sizes:
            self._measure_systems()
        return self._system_sizes.get(agent, 0)

    def _measure_systems(self) -> None:
        """`system_size` of every Agent not measured yet: git is asked of every one's
        `systemFile` at once (a base commit's thousand agents asked one by one started two
        thousand git processes)."""
        files: dict[str, str] = {}
        wanted = {
            candidate
            for name, located in self.agents.items()
            if name not in self._system_sizes and located.resource.spec.system_file
            for candidate in reference_candidates(located.file, located.resource.spec.system_file)
        }
        if wanted:
            self.files.prefetch(sorted(wanted))
        for name, located in self.agents.items():
            spec = located.resource.spec
            if name in self._system_sizes:
                continue
            if not spec.system_file:
                self._system_sizes[name] = len(spec.system or "")
                continue
            try:
                files[name] = self.files.agent_reference(spec.system_file, located.file).path
            except NotCommitted:
                self._system_sizes[name] = 0
        sizes = self.files.sizes(sorted(set(files.values()))) if files else {}
        self._system_sizes.update((name, sizes.get(path, 0)) for name, path in files.items())

    def depending_on(self, changed: set[str]) -> set[str]:
        """The files whose resources read one of the `changed` paths."""
        return {file for file, paths in self.reads.items() if not paths.isdisjoint(changed)}

    def evals_targeting(self, agent: str) -> list[Located[Eval]]:
        return [e for _, e in sorted(self.evals.items()) if e.resource.spec.target_agent == agent]


def user_files(trees: Iterable[ResourceSet]) -> set[str]:
    """The files (relative to their checkout) that define a simulated user: left out of the
    agents' working copies, so no agent reads a persona's goal or hidden facts. A definition
    read through a symbolic link is left out with the file the link leads to, which holds
    the same words."""
    found: set[str] = set()
    for tree in trees:
        for located in tree.fixtures.values():
            conversation = located.resource.spec.conversation
            if conversation is None or conversation.user is None:
                continue
            found.add(located.file)
            try:
                found.add(tree.files.find(located.file))
            except NotCommitted:
                continue  # read as it loaded: a file its side's door no longer names
    return found
