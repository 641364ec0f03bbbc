"""An agent's change between two commits, split into the hunks an author could take back one
by one.

A prompt or program file is split as git's diff shows it (and so GitHub's, whose lines a
review comment must lie on): each contiguous changed block (no context) is one hunk, with the
head's lines it spans. The
agent's own YAML is split by field (attribution/fields.py): a changed model, temperature or
system prompt, one tool's description or schema, one MCP server. A prompt written in the YAML
as a block (`system: |`, a tool's `description: >`) is split as a prompt file is, into the
changed blocks of its lines: most agents keep their prompt there, and "the system prompt" is
no answer to where a change of it broke them. A file that is not UTF-8 text, or is on one
side only, is one hunk whole, but a prompt moved between the YAML's `system: |` and a file
of its own that the change adds or removes: its move is a hunk (taken back, the prompt is
where the base had it again, with whatever the variant's text of it is) and its lines are
split against where it was. What `watch` reaches through a symbolic link is split where the
link leads, as the fingerprint watches it. Every file is read from the commits through
RepoFiles, the door to a commit's files.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

from evalward.attribution.fields import (
    MISSING,
    AgentYaml,
    FieldPath,
    changed_fields,
    display,
    place_of,
    read_agent_yaml,
    round_trip,
    value_at,
)
from evalward.errors import NotCommitted, printable
from evalward.files.committed import MAX_SYSTEM_BYTES, RepoFiles
from evalward.files.inside import glob_matches, watched_folders
from evalward.git import Block, FileChange, Git, TreeEntry, folders_of
from evalward.plan.fingerprint import referenced_files, under_globs
from evalward.plan.plan import Plan, head_targets
from evalward.resources import Agent, Located, ResourceSet
from evalward.rundata.sides import Side

DIFF_CONTEXT = 3
"""The unchanged lines a pull request's diff shows either side of a change (git's default,
GitHub's patches): changes further apart are separate blocks of the diff."""

HunkKind = Literal["text", "file", "field", "rename", "mode", "moved"]
"""A block of lines of a text file (or of a block of text in the agent's YAML); a whole
file; one field of the agent's YAML; a file's new name (taken back, the file is at the
base's name again, with whatever the variant's text of it is); a file's mode (taken back,
whether it may be run is the base's, whatever its text); the agent's prompt moved between
its YAML's `system: |` and a file of its own (`field`: `spec.system`; at the one that holds
it on the head; taken back, it is where the base had it, with whatever the variant's text
of it is, and the head's place of it is gone)."""
SYSTEM: FieldPath = ("spec", "system")
SYSTEM_FILE: FieldPath = ("spec", "systemFile")


ProgramReach = Literal["none", "watched", "everything"]
"""What an agent's programs may read of its checkout (`AgentFiles.programs`)."""


@dataclass(frozen=True)
class AgentFiles:
    """What an agent is made of: its name, the YAML file that defines it, the files it
    reads (its system prompt's file, its programs), repository paths, and the globs of what
    else it reads (`watch`: a program's own modules, the files under a folder it names),
    which the change's paths are matched against as the fingerprint matches them."""

    agent: str
    definition: str
    files: tuple[str, ...] = ()
    watch: tuple[str, ...] = ()
    programs: ProgramReach = "none"
    """What a program of the agent may read from its checkout: nothing (it starts none),
    what `watch` names, or everything (it names no `watch`)."""
    not_its_own: frozenset[str] = frozenset()
    """Files `watch` may cover that define other resources (Evals, fixtures, another agent):
    never the agent's hunks. Taken back, an Eval's change changes nothing where the base's
    Evals gate, and is no part of the agent where the head's do, so a trial of one (`watch:
    ['**']`) would cost runs and name no cause."""

    @classmethod
    def of(cls, located: Located[Agent]) -> AgentFiles:
        """An agent's files as its loaded definition names them."""
        agent, named = located.resource.metadata.name, referenced_files(located)
        spec = located.resource.spec
        watch = (*spec.watch, *under_globs(named))
        programs: ProgramReach = (
            "none" if not spec.runs_programs else "watched" if spec.watch else "everything"
        )
        return cls(agent, located.file, tuple(named), watch, programs)

    def watches(self, path: str) -> bool:
        """Whether the change of `path` is the agent's through its `watch`."""
        return path not in self.not_its_own and any(glob_matches(path, g) for g in self.watch)

    def programs_may_read(self, ignored: Iterable[str]) -> list[str]:
        """Of the paths git ignores in the working tree (`Revisions.ignored`, a folder
        once), those among the agent's files, which a program of it may read and no variant
        holds: none where it starts no program; every one where it names no `watch`; else
        those at or under what its globs may match. A `__pycache__` is passed over: Python's
        cache of the sources beside it, read only while they are what it was made from."""
        if self.programs == "none":
            return []
        folders = watched_folders(list(self.watch))

        def among(path: str) -> bool:
            if "__pycache__" in path.split("/"):
                return False
            if self.programs == "everything" or self.watches(path):
                return True
            # at or under a folder a glob may match in, or a folder holding one
            return any(
                not f or f == path or path.startswith(f"{f}/") or f.startswith(f"{path}/")
                for f in folders
            )

        return [path for path in ignored if among(path)]


def targets_files(plan: Plan, resources: Mapping[Side, ResourceSet]) -> dict[str, AgentFiles]:
    """The files of each agent the plan's Evals target at the head, as the run loaded them:
    what attribution splits, with no second load of the head's definitions. With them, the
    files its base definition names that the head's no longer does (a prompt renamed or
    removed): taken back, they are the base's again, else the head with every hunk taken
    back is not the base, and names a file it lacks. What either side's `watch` covers is
    the agent's too, but for the files either side's resources are defined in."""
    head, base = resources[Side.head], resources.get(Side.base)
    defined = _definition_files(resources.values())
    found: dict[str, AgentFiles] = {}
    for name in head_targets(plan, head):
        files = AgentFiles.of(head.agents[name])
        if base is not None and name in base.agents:
            was = AgentFiles.of(base.agents[name])
            named = {files.definition, *files.files}
            gone = tuple(p for p in dict.fromkeys((was.definition, *was.files)) if p not in named)
            watched = tuple(dict.fromkeys((*files.watch, *was.watch)))
            files = dataclasses.replace(files, files=files.files + gone, watch=watched)
        own = {files.definition, *files.files}
        found[name] = dataclasses.replace(files, not_its_own=frozenset(defined - own))
    return found


def _definition_files(sides: Iterable[ResourceSet]) -> set[str]:
    """Every file a resource of these sides is defined in, or read from (an AgentV suite's
    cases)."""
    return {path for side in sides for path in side.definition_files().union(*side.reads.values())}


@dataclass(frozen=True)
class Hunk:
    """One part of the change that can be taken back alone.

    `first`..`last` are the head's lines it spans (1-based: a review comment's `start_line`
    and `line` on the RIGHT side); a pure deletion points at the head's line next to it, and
    0 means the head has no line to point at (a file it removed or that is not text). A
    retargeted link is its one line, where it leads, as its diff shows it.
    `at` is where `head_lines` start in the head's file (0-based), for a text hunk's revert;
    `field` is a field hunk's path, or the path of the block of text a text hunk lies in;
    `shown`, a field's lines that changed as one block of the diff holds them (`changed`);
    `renamed_from`, the file's name in the base where git pairs it as renamed (the rename's
    own hunk, kind `rename`, takes the name back; the others change its text)."""

    path: str
    index: int
    kind: HunkKind
    first: int
    last: int
    base_lines: tuple[str, ...] = ()
    head_lines: tuple[str, ...] = ()
    at: int = 0
    field: FieldPath = ()
    shown: tuple[int, int] | None = None
    renamed_from: str = ""

    @property
    def field_name(self) -> str:
        """The field's dotted path (`spec.tools[lookup_order].description`), "" for text."""
        return display(self.field)

    @property
    def changed(self) -> tuple[int, int]:
        """The head's lines of the hunk that differ from the base's: `first`..`last`, but for
        a field, narrowed to its lines that changed (a tool's schema of twenty lines with one
        line changed is that line), within one block of the diff, as a review comment's lines
        must be; (0, 0) for a field whose own lines the diff does not show."""
        return self.shown if self.shown is not None else (self.first, self.last)

    def describe(self) -> str:
        """The hunk in words: `hunk 2 of prompts/support.md, lines 14-16`, its names as
        `printable` shows a name (they are the pull request's bytes)."""
        what = f" ({self.field_name})" if self.field else ""
        if self.kind == "rename":
            what = f" (renamed from {printable(self.renamed_from)})"
        if self.kind == "mode":
            what = " (whether it may be run)"
        if self.kind == "moved":
            what = f" (the prompt's move to or from {self.field_name})"
        if not self.first:
            where = ""
        elif self.first == self.last:
            where = f", line {self.first}"
        else:
            where = f", lines {self.first}-{self.last}"
        return f"hunk {self.index} of {printable(self.path)}{what}{where}"


def split_change(git: Git, base: str, head: str, agent: AgentFiles) -> tuple[Hunk, ...]:
    """Every hunk of `agent`'s change from `base` to `head`, by path then position."""
    before, after = RepoFiles.at_commit(git, base), RepoFiles.at_commit(git, head)
    named = (agent.definition, *agent.files)
    # the change's paths, asked of git once: those `watch` covers, and renames
    listed = git.changed_files(base, head) if agent.watch else None
    touched = [p for change in listed or () for p in (change.path, change.old_path) if p]
    watched = [path for path in touched if agent.watches(path)]
    if touched:
        watched += _watched_through_links((before, after), agent, set(touched))
    paths = list(dict.fromkeys((*named, *watched)))
    olds, news = read_sides(before, paths), read_sides(after, paths)
    changed = _once_each([path for path in paths if olds.get(path) != news.get(path)], olds, news)
    added = {path: news[path] for path in changed if path not in olds and path in news}
    if added and listed is None:
        listed = git.changed_files(base, head)
    moved = _moved_from(listed or [], before, added, olds)
    renames = _renames(olds, news, moved)
    renamed = set(renames.values())
    # the changed blocks of every file both sides hold as text, in a few git calls for all
    texts = [
        (path, old.path, new.path)
        for path in changed
        if (old := olds.get(path) or moved.get(path)) is not None
        if (new := news.get(path)) is not None
        if text_of(old.content) is not None and text_of(new.content) is not None
    ]
    old_ids = before.blob_ids([there for _, there, _ in texts])
    new_ids = after.blob_ids([there for _, _, there in texts])
    pairs = [(old_ids[there], new_ids[here]) for _, there, here in texts]
    blocks = dict(zip([path for path, _, _ in texts], git.changed_blocks(pairs), strict=True))
    move = _prompt_move(agent, olds, news, blocks.get(agent.definition))
    hunks = [] if move is None else move.hunks
    for path in changed:
        if path in renamed or (move is not None and path in move.paths):
            continue  # the rename of its file takes it back; a moved prompt is split above
        old, new = olds.get(path), news.get(path)
        # the file the head's name leads to; where the head's leads nowhere (removed, or a
        # link now dangling or leading out of the repository), the name itself: taken back,
        # the base's text is written there, not at the file the base's link led to, which
        # the head may hold unchanged (a revert that changes nothing)
        where = new.path if new is not None else path
        old_content = old.content if old is not None else None
        new_content = new.content if new is not None else None
        if new is not None and _retargeted(before, path, old, new):
            # a link now leads to a file the base already holds: the change is the link's,
            # not that file's lines (someone else's, or diffed on the pull request against
            # that file's own base); taken back, the base's text (or no file, where the
            # base had none at the name)
            hunks.append(_link(path, after, text_of(old_content), text_of(new_content)))
        elif old is not None and new is not None and old.executable != new.executable:
            defines = agent.agent if path == agent.definition else None
            hunks += _mode_changed(where, old_content, new_content, defines, blocks.get(path))
        elif path == agent.definition and old is not None and new is not None:
            hunks += _definition_hunks(
                where, old_content, new_content, agent.agent, blocks.get(path)
            )
        elif path in renames:
            # the rename, then the change of its text as any file's (the agent's YAML by
            # field), against the base's file at its old name, on the lines its diff shows
            was = moved[path].content
            if path == agent.definition:
                inner = _definition_hunks(where, was, new_content, agent.agent, blocks.get(path))
            else:
                inner = _file_hunks(where, was, new_content, blocks.get(path))
            hunks += [
                Hunk(path, 1, "rename", 0, 0, renamed_from=renames[path]),
                *(
                    dataclasses.replace(h, index=h.index + 1, renamed_from=renames[path])
                    for h in inner
                ),
            ]
        elif path in moved:
            # taken back whole (the base has no file at the name), on the lines the diff of
            # the rename shows: none where only the name changed
            whole = _whole(where, None, text_of(new_content))
            shown = _shown(blocks.get(path, []), 0, whole.last - 1, whole.last)
            hunks.append(dataclasses.replace(whole, shown=shown))
        else:
            hunks += _file_hunks(
                where, old_content, new_content, blocks.get(path), had=old is not None
            )
    return in_diff_order(hunks)


@dataclass(frozen=True)
class _PromptMove:
    """The agent's prompt moved between its YAML's `system: |` block and a file of its own
    (`paths`: the YAML, and the file the change adds or removes): the move, the changed
    blocks of the prompt's lines against where it was, and the YAML's other fields."""

    hunks: list[Hunk]
    paths: tuple[str, ...]


def _prompt_move(
    agent: AgentFiles,
    olds: Mapping[str, SideFile],
    news: Mapping[str, SideFile],
    blocks: list[Block] | None,
) -> _PromptMove | None:
    """The hunks of a prompt moved out of the agent's YAML (a literal block, `system: |`)
    into a file the change adds and names as its `systemFile`, or from such a file the
    change removes into the YAML, where the YAML is split by field on both sides; None for
    any other change (the file is then one hunk whole, and `system` and `systemFile` hunks
    of their own)."""
    old, new = olds.get(agent.definition), news.get(agent.definition)
    if old is None or new is None or old.digest == new.digest or old.executable != new.executable:
        return None
    before, after = text_of(old.content), text_of(new.content)
    base = read_agent_yaml(before, agent.agent) if before is not None else None
    head = read_agent_yaml(after, agent.agent) if after is not None else None
    if base is None or head is None:
        return None
    out = _prompt_file(base, head, news, olds, agent.files)
    if out is not None:
        kept = _other_fields(agent.agent, old, new, blocks)
        if kept is None:
            return None
        path, prompt, text = out
        moved = _prompt_hunks(path, prompt, text)
        return _PromptMove([*_numbered(kept), *moved], (agent.definition, path))
    into = _moved_in(base, head, news, olds, agent.files)
    kept = _other_fields(agent.agent, old, new, blocks) if into is not None else None
    if into is None or kept is None:
        return None
    path, virtual, start, end = into
    was, now = lines_of(virtual), lines_of(head.text)
    last = len(now) - (len(was) - end)  # the block's last line in the head (1-based)
    inside = _blocks_between(was, now, start, end)
    lines = [
        dataclasses.replace(h, field=SYSTEM)
        for h in text_hunks(new.path, virtual, head.text, inside, end=last)
    ]
    move = Hunk(new.path, 0, "moved", 0, 0, field=SYSTEM)
    return _PromptMove(_numbered([*kept, move, *lines]), (agent.definition, path))


def _other_fields(
    agent: str, old: SideFile, new: SideFile, blocks: list[Block] | None
) -> list[Hunk] | None:
    """The hunks of the agent's YAML but its prompt's `system` and `systemFile`; None where
    it is split as a file (the move's fields are then no hunks of their own)."""
    fields = _definition_hunks(new.path, old.content, new.content, agent, blocks)
    if any(h.kind != "field" and not h.field for h in fields):
        return None
    return [h for h in fields if h.field not in (SYSTEM, SYSTEM_FILE)]


def _prompt_file(
    inline: AgentYaml,
    filed: AgentYaml,
    there: Mapping[str, SideFile],
    elsewhere: Mapping[str, SideFile],
    files: tuple[str, ...],
) -> tuple[str, str, str] | None:
    """Where one side writes the agent's prompt in its YAML as a literal block (`inline`)
    and the other reads it from a file (`filed`, its `systemFile`) that only its side holds
    (`there`, not `elsewhere`): the file's path (one of the agent's `files`, as its loaded
    definition named it), the block's prompt and the file's text."""
    prompt, named = value_at(inline.data, SYSTEM), value_at(filed.data, SYSTEM_FILE)
    if not isinstance(prompt, LiteralScalarString) or not isinstance(named, str):
        return None
    if (
        value_at(inline.data, SYSTEM_FILE) is not MISSING
        or value_at(filed.data, SYSTEM) is not MISSING
    ):
        return None
    path = posixpath.normpath(named)
    file = there.get(path)
    text = text_of(file.content) if file is not None else None
    if path not in files or file is None or path in elsewhere or file.path != path:
        return None
    return (path, str(prompt), text) if text is not None else None


def _moved_in(
    base: AgentYaml,
    head: AgentYaml,
    news: Mapping[str, SideFile],
    olds: Mapping[str, SideFile],
    files: tuple[str, ...],
) -> tuple[str, str, int, int] | None:
    """The file the base read its prompt from that the change removes, where the head
    writes it in the YAML: its path, the head's YAML with the block holding the file's text
    instead (what the block's lines are split against) and the block's lines (0-based,
    half-open, after its key)."""
    found, here = _prompt_file(head, base, olds, news, files), place_of(head, SYSTEM)
    if found is None or here is None:
        return None
    path, prompt, text = found
    lines = head.lines
    block = lines[here.first : here.last + 1]
    written = block_lines(block[1:], text)
    if not (_holds(block, here.column, prompt) and _holds([block[0], *written], here.column, text)):
        return None  # the block's lines are not its text alone, or cannot hold the file's
    virtual = "\n".join([*lines[: here.first + 1], *written, *lines[here.last + 1 :]])
    return path, virtual, here.first + 1, here.first + 1 + len(written)


def _prompt_hunks(path: str, prompt: str, text: str) -> list[Hunk]:
    """A prompt moved into the file at `path`: the move, then the changed blocks of the
    file's `text` against the `prompt` it was."""
    old, now = lines_of(prompt), lines_of(text)
    blocks = _blocks_between(old, now, 0, len(old))
    inner = text_hunks(path, prompt, text, blocks)
    return _numbered([Hunk(path, 0, "moved", 0, 0, field=SYSTEM), *inner])


def _blocks_between(old: list[str], new: list[str], start: int, end: int) -> list[Block]:
    """The changed blocks of lines from `old` to `new` where they differ only within `old`'s
    lines `start`:`end` (the rest the same lines at the same places): Python's own diff of
    the lines, which a new file's or block's every line shows on the pull request anyway."""
    after = len(new) - (len(old) - end)
    matcher = difflib.SequenceMatcher(None, old[start:end], new[start:after], autojunk=False)
    return [
        (i1 + start, i2 + start, j1 + start, j2 + start)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _numbered(hunks: list[Hunk]) -> list[Hunk]:
    """`hunks` of one file in the order of its lines (a hunk on no line first), numbered."""
    ordered = sorted(hunks, key=lambda h: (h.first, h.last, h.kind != "moved", h.at))
    return [dataclasses.replace(h, index=index) for index, h in enumerate(ordered, start=1)]


def _mode_changed(
    where: str,
    old: bytes | None,
    new: bytes | None,
    defines: str | None,
    blocks: list[Block] | None,
) -> list[Hunk]:
    """A file made executable or not: its mode, then its text's hunks (the agent's YAML by
    field, where it `defines` that agent), each taken back alone, so that a mode
    changed beside them cannot hide which line did it; a file that is not text on both
    sides is taken back whole, mode and all, on no line."""
    before, after = text_of(old), text_of(new)
    if before is None or after is None:
        return [_whole(where, before, after, shown=False)]
    inner = (
        _definition_hunks(where, old, new, defines, blocks)
        if defines is not None
        else _file_hunks(where, old, new, blocks)
    )
    return [
        Hunk(where, 1, "mode", 0, 0),
        *(dataclasses.replace(h, index=h.index + 1) for h in inner),
    ]


def _watched_through_links(
    sides: tuple[RepoFiles, RepoFiles], agent: AgentFiles, touched: set[str]
) -> list[str]:
    """The paths `watch` covers through a symbolic link whose target the change `touched`,
    named under the link as the fingerprint watches them: a prompt or module shared from
    outside the agent's folder (`agent/rules.py` leading to `shared/rules.py`), or a file
    under a linked folder. Either side's links count (one the change removed, too)."""
    folders = watched_folders(list(agent.watch))
    found: list[str] = []
    for files in sides:
        listed, links = files.links_within(folders)
        around = _WatchedAndTouched(listed, touched)
        for link, target in sorted(links.items()):
            if not around.may_reach(link, target):
                continue
            try:
                real, folder = files.place(link)
            except NotCommitted:
                continue  # leads nowhere, or out of the repository
            if not folder:
                found += [link] if real in touched and agent.watches(link) else []
                continue
            prefix = f"{real}/" if real else ""
            named = (f"{link}/{p[len(prefix) :]}" for p in touched if p.startswith(prefix))
            found += [path for path in named if agent.watches(path)]
    return found


class _WatchedAndTouched:
    """What the watched folders hold (`listed`, and the folders they are in) and what the
    change touched (paths, and the folders they are in)."""

    def __init__(self, listed: Mapping[str, TreeEntry], touched: set[str]) -> None:
        self.listed, self.touched = listed, touched
        self.listed_folders = {folder for path in listed for folder in folders_of(path)}
        self.touched_folders = {folder for path in touched for folder in folders_of(path)}

    def may_reach(self, link: str, target: bytes | None) -> bool:
        """Whether `link` may lead to a path the change touched, by its first step alone:
        not where it leads to a file or folder of the watched folders that the change left
        alone (a committed `node_modules/.bin` is hundreds of such links), so only the rest
        are followed, a git call or two each."""
        if target is None or target.startswith(b"/"):
            return False  # out of the repository: the fingerprint does not follow it either
        step = posixpath.normpath(posixpath.join(posixpath.dirname(link), os.fsdecode(target)))
        if step in self.touched or step in self.touched_folders:
            return True
        entry = self.listed.get(step)
        if entry is not None:
            return entry.is_link  # a file the change left alone, or a link on
        return step not in self.listed_folders  # elsewhere: followed


def _once_each(
    changed: list[str], olds: Mapping[str, SideFile], news: Mapping[str, SideFile]
) -> list[str]:
    """`changed` but for a path that leads to the files an earlier one leads to, on both
    sides: a file watched under its own name and through a link to it (or named and
    watched through one) is one change, taken back once, with one set of hunks. A path the
    head no longer has is its own change (taken back at its own name)."""
    seen: set[tuple[str | None, str]] = set()
    kept: list[str] = []
    for path in changed:
        old, new = olds.get(path), news.get(path)
        leads = (old.path if old else None, new.path) if new is not None else None
        if leads is None or leads not in seen:
            kept.append(path)
        if leads is not None:
            seen.add(leads)
    return kept


def _moved_from(
    listed: list[FileChange],
    before: RepoFiles,
    added: Mapping[str, SideFile],
    olds: Mapping[str, SideFile],
) -> dict[str, SideFile]:
    """The base's file each file the head adds is renamed from, as git's diff (and GitHub's,
    whose lines a review comment must lie on) pairs them (`listed`): its diff shows only the
    lines the rename changed. A source the split read already (`olds`: the agent's files,
    a watched folder moved whole) is not read again."""
    if not added:
        return {}
    renamed = {c.path: c.old_path for c in listed if c.status == "R"}
    sources = {path: old for path, new in added.items() if (old := renamed.get(new.path))}
    found = {**read_sides(before, [s for s in sources.values() if s not in olds]), **olds}
    return {path: found[old] for path, old in sources.items() if old in found}


def _renames(
    olds: Mapping[str, SideFile], news: Mapping[str, SideFile], moved: Mapping[str, SideFile]
) -> dict[str, str]:
    """The head's name of each file of the agent renamed from one its base named, with the
    base's name: split as the rename and the change of its text (a prompt renamed and
    edited, the edit taken back alone, or applied alone to the base's name). Only where
    both sides are text under their own names (no link) and of the same mode; any other
    rename is the new file whole and the old one gone."""
    found: dict[str, str] = {}
    for path, old in moved.items():
        new, was = news[path], olds.get(old.path)
        if new.path != path or was is None or old.path in news:
            continue
        if was.path != old.path or old.executable != new.executable:
            continue
        if text_of(old.content) is not None and text_of(new.content) is not None:
            found[path] = old.path
    return found


def _retargeted(before: RepoFiles, path: str, old: SideFile | None, new: SideFile) -> bool:
    """Whether the head's name `path` is a link to another file than the base's name led
    to (or than none, where the base had no file there), one the base already holds
    (changed or not: its lines in the diff are its own change, not the text that replaced
    the old target's)."""
    if new.path == path or (old is not None and old.path == new.path):
        return False
    return read_side(before, new.path) is not None


def _link(path: str, after: RepoFiles, before: str | None, now: str | None) -> Hunk:
    """A retargeted link whole, on the one line the diff shows of it (where it leads) when
    `path` is itself the link; else (a folder on the way was retargeted) on no line."""
    line = 1 if after.links_among([path]) else 0
    return Hunk(
        path, 1, "file", line, line, tuple(lines_of(before or "")), tuple(lines_of(now or ""))
    )


def in_diff_order(hunks: Iterable[Hunk]) -> tuple[Hunk, ...]:
    """`hunks` as a diff shows them: by path, then by place in the file."""
    return tuple(sorted(hunks, key=lambda h: (h.path, h.index)))


@dataclass(frozen=True)
class SideFile:
    """A file as one side has it: the repository path a name leads to (links followed), its
    content (None: larger than a prompt may be, so compared and taken back whole), what it
    is compared by (git's object id, through RepoFiles.digest) and whether it may be run."""

    path: str
    content: bytes | None
    digest: str
    executable: bool = False


def read_side(files: RepoFiles, path: str) -> SideFile | None:
    """The file `path` names on this side; None when the side has none."""
    return read_sides(files, [path]).get(path)


def read_sides(files: RepoFiles, paths: list[str]) -> dict[str, SideFile]:
    """The file each of `paths` names on this side, those it has. Looked up and read in a
    few git calls for all: an agent names as many files as its pull request writes in its
    programs' arguments, and a few calls each would take minutes for tens of thousands."""
    files.prefetch(paths)
    real: dict[str, str] = {}
    for path in paths:
        try:
            real[path] = files.find(path)
        except NotCommitted:
            continue
    found = files.read_committed(list(dict.fromkeys(real.values())), MAX_SYSTEM_BYTES)
    return {
        path: SideFile(there, found[there].content, files.digest(there), files.is_executable(there))
        for path, there in real.items()
        if there in found
    }


def text_of(content: bytes | None) -> str | None:
    """The content as text, or None when it is not UTF-8 text."""
    if content is None or b"\0" in content:
        return None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def lines_of(text: str) -> list[str]:
    """The lines of `text` as a diff counts them (on `\\n`), each with its line ending."""
    parts = text.split("\n")
    return [f"{part}\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _file_hunks(
    path: str, old: bytes | None, new: bytes | None, blocks: list[Block] | None, *, had: bool = True
) -> list[Hunk]:
    """The text hunks of a file both sides hold as text, its changed `blocks`; else the file
    whole (`had`: the base holds the file, whatever it is)."""
    before, after = text_of(old), text_of(new)
    if blocks is None or before is None or after is None:
        return [_whole(path, before, after, shown=not had or before is not None)]
    return text_hunks(path, before, after, blocks)


def _whole(path: str, before: str | None, after: str | None, *, shown: bool = True) -> Hunk:
    """A file whole, on the head's lines when it is text and `shown`: a file the base holds
    as something other than text (binary, not UTF-8, larger than a prompt may be) has no
    line of the diff to point at (GitHub shows a binary file's change as no lines at all)."""
    old, new = lines_of(before or ""), lines_of(after or "")
    last = len(new) if shown else 0
    return Hunk(path, 1, "file", 1 if last else 0, last, tuple(old), tuple(new))


def text_hunks(
    path: str, before: str, after: str, blocks: Iterable[Block], end: int | None = None
) -> list[Hunk]:
    """One hunk for each of `blocks`, the changed blocks of lines from `before` to `after`
    (`Git.changed_blocks`); a deletion points at the head's line after it, or at the last
    line at the end of the text or at `end` (1-based: the last line of a block of text)."""
    old, new = lines_of(before), lines_of(after)
    last_line = len(new) if end is None else end
    hunks: list[Hunk] = []
    for i1, i2, j1, j2 in blocks:
        if j2 > j1:
            first, last = j1 + 1, j2
        else:
            first = last = min(j1 + 1, last_line)
        block = (tuple(old[i1:i2]), tuple(new[j1:j2]))
        hunks.append(Hunk(path, len(hunks) + 1, "text", first, last, *block, at=j1))
    return hunks


MAX_FIELD_HUNKS = 100
"""The most fields of an agent's YAML split one hunk each. Each is found, and taken back, by
walking the fields around it (a tool by its name among all the tools), so a change of more
fields (a pull request that adds six thousand tools) is split as a text file is instead."""
MAX_FIELD_BYTES = 64 * 1024
"""The largest agent's YAML split by field. ruamel reads a YAML of many small fields at about
100 KiB a second, keeping every comment and mark, and each variant reads it again: a larger
one (a resource file may hold 5 MiB) is split as text."""


def _definition_hunks(
    path: str, old: bytes | None, new: bytes | None, agent: str, blocks: list[Block] | None
) -> list[Hunk]:
    """The agent's YAML by field; as a file when either side is not a YAML document of it
    that ruamel reads (then a variant that breaks it does not build, and says so), larger
    than `MAX_FIELD_BYTES`, or with more than `MAX_FIELD_HUNKS` of its fields changed."""
    before, after = text_of(old), text_of(new)
    if max(len(old or b""), len(new or b"")) > MAX_FIELD_BYTES:
        return _file_hunks(path, old, new, blocks)
    head = read_agent_yaml(after, agent) if after is not None else None
    base = read_agent_yaml(before, agent) if before is not None else None
    if blocks is None or head is None or base is None:
        return _file_hunks(path, old, new, blocks)
    fields = changed_fields(base.data, head.data)
    if len(fields) > MAX_FIELD_HUNKS:
        return _file_hunks(path, old, new, blocks)
    found: list[Hunk] = []
    head_lines = len(lines_of(head.text))
    for field in fields:
        prose = _block_hunks(path, base, head, field, blocks)
        if prose is not None:
            found += prose
            continue
        first, last = _lines(head, field)
        if place_of(head, field) is None:
            first = last = _removed_at(base, field, blocks, head_lines, first)
        text = _field_text(base, field), _field_text(head, field)
        shown = _shown(blocks, first, last, head_lines)
        found.append(Hunk(path, 0, "field", first + 1, last + 1, *text, field=field, shown=shown))
    found.sort(key=lambda h: (h.first, h.last, h.field, h.at))
    return [dataclasses.replace(h, index=index) for index, h in enumerate(found, start=1)]


def _shown(blocks: list[Block], first: int, last: int, lines: int) -> tuple[int, int]:
    """The lines (1-based) of a field's changes, the head's lines `first`..`last` (0-based),
    as one block of the diff holds them: from its first changed line, on through changes
    whose unchanged lines between are few enough for the diff to show them together
    (`DIFF_CONTEXT` either side); (0, 0) where the diff shows none of its lines."""
    spans: list[tuple[int, int, Block]] = []
    for block in blocks:
        _, _, j1, j2 = block
        start, end = (j1, j2 - 1) if j2 > j1 else (min(j1, lines - 1),) * 2
        if start <= last and first <= end:
            spans.append((max(start, first), min(end, last), block))
    if not spans:
        return 0, 0
    start, end, previous = spans[0]
    for _, later_end, block in spans[1:]:
        if block[2] - previous[3] > 2 * DIFF_CONTEXT:
            break
        end, previous = later_end, block
    return start + 1, end + 1


BLOCKS = (LiteralScalarString, FoldedScalarString)
"""Text written in YAML as a block (`|`, `>`): its value's lines are the file's lines, each
indented alike."""


def _block_hunks(
    path: str, base: AgentYaml, head: AgentYaml, field: FieldPath, blocks: list[Block]
) -> list[Hunk] | None:
    """The text hunks of a field that both sides write as the same kind of block, under the
    same key line and indentation: the file's changed `blocks` that lie within its lines,
    taking one back puts the base's lines in place of the head's, and the block still
    reads as text whose other lines are the head's. None where the field is one hunk (not
    such a block on both sides, its key line or indentation changed, or a block of the
    diff reaching beyond its lines)."""
    old, new = value_at(base.data, field), value_at(head.data, field)
    if not isinstance(new, BLOCKS) or type(old) is not type(new):
        return None
    there, here = place_of(base, field), place_of(head, field)
    if there is None or here is None:
        return None
    before = base.lines[there.first : there.last + 1]
    after = head.lines[here.first : here.last + 1]
    if before[0] != after[0] or _indentation(before[1:]) != _indentation(after[1:]):
        return None
    if not (_holds(before, there.column, old) and _holds(after, here.column, new)):
        return None
    # the block's lines, after its key's (0-based, half-open)
    inside = _within(blocks, (there.first + 1, there.last + 1), (here.first + 1, here.last + 1))
    if not inside:
        return None
    hunks = text_hunks(path, base.text, head.text, inside, end=here.last + 1)
    return [dataclasses.replace(hunk, field=field) for hunk in hunks]


def _within(
    blocks: list[Block], base: tuple[int, int], head: tuple[int, int]
) -> list[Block] | None:
    """The blocks that lie within the base's lines `base` and the head's `head` (0-based,
    half-open); None when one reaches across their edges."""
    inside: list[Block] = []
    for block in blocks:
        i1, i2, j1, j2 = block
        if base[0] <= i1 and i2 <= base[1] and head[0] <= j1 and j2 <= head[1]:
            inside.append(block)
        elif _touches(i1, i2, base) or _touches(j1, j2, head):
            return None
    return inside


def _touches(start: int, end: int, lines: tuple[int, int]) -> bool:
    """Whether lines `start:end` (an empty range: a place between lines) meet `lines`."""
    if start == end:
        return lines[0] < start < lines[1]
    return start < lines[1] and lines[0] < end


def _holds(lines: list[str], column: int, value: str) -> bool:
    """Whether a field's lines, read alone, are its whole value: lines its place leaves out
    (a last line of the block that looks like a comment) would be a change no hunk holds.
    Read alone, so each block costs a read of its own lines, not of the file."""
    if any(line[:column].strip() for line in lines):
        return False  # a list item's first key (`- description: |`): taken back whole
    try:
        data = round_trip().load("".join(f"{line[column:]}\n" for line in lines))
    except (YAMLError, ValueError):
        return False
    return isinstance(data, Mapping) and list(data.values()) == [value]


def block_lines(content: list[str], text: str) -> list[str]:
    """`text` written as the lines of a YAML block (`|`) whose lines are now `content`, at
    their indentation (the first line's that is not blank, as YAML reads it): each line of
    the text indented, a blank one left empty."""
    pad = " " * (_indentation(content) or 2)
    return [f"{pad}{line}" if line else "" for line in text.removesuffix("\n").split("\n")]


def _indentation(lines: list[str]) -> int | None:
    """The indentation of a block's first line that is not blank (None: all are)."""
    return next((len(line) - len(line.lstrip(" ")) for line in lines if line.strip()), None)


def _lines(doc: AgentYaml, field: FieldPath) -> tuple[int, int]:
    """The head's lines of `field` (0-based); where the head lacks it, the line of the
    nearest field above it that the head has."""
    for end in range(len(field), 0, -1):
        place = place_of(doc, field[:end])
        if place is not None:
            return (place.first, place.last) if end == len(field) else (place.first, place.first)
    start = int(doc.node.start_mark.line)
    return start, start


def _removed_at(
    base: AgentYaml, field: FieldPath, blocks: list[Block], lines: int, above: int
) -> int:
    """The head's line (0-based) where the diff shows a field the head removed: the first
    line of the change (`blocks`, the file's changed blocks) that took its base lines out,
    or the line after a deletion (the last line where it was at the end), as a removed
    block of a prompt is; `above` (the line of the nearest field the head has, which can be
    many lines above any block of the diff) where no change does."""
    there = place_of(base, field)
    if there is None:
        return above
    for i1, i2, j1, _ in blocks:
        if i1 <= there.last and there.first < i2:
            return min(j1, lines - 1)
    return above


def _field_text(doc: AgentYaml, field: FieldPath) -> tuple[str, ...]:
    place = place_of(doc, field)
    if place is None:
        return ()
    return tuple(f"{line}\n" for line in doc.lines[place.first : place.last + 1])
