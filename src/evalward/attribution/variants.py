"""A variant of the head: the head's commit with some hunks taken back to the base.

A variant is made as a real commit (blobs, trees and a commit written into the repository's
objects, the head its parent), so it is checked out, read through RepoFiles and run exactly
as the head is: nothing about it is a working tree another step could have touched. Only the
files of the hunks taken back differ from the head; the same hunks of the same head make the
same commit (git.py's `commit_tree`), so a variant is found again across runs.

A prompt the change moved between the agent's YAML and a file, its move taken back, is
written back where the base had it (the base's `system: |` block, or the file the base's
`systemFile` named) with the variant's text of it, and the head's place of it is gone.

A revert can leave the agent's YAML invalid (the base's `system` put back beside the head's
`systemFile`, say): such a variant is not buildable, and says why, rather than failing the
run.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pydantic import ValidationError

from evalward.attribution.field_revert import revert_fields
from evalward.attribution.fields import (
    AgentYaml,
    is_agent,
    place_of,
    read_agent_yaml,
    value_at,
)
from evalward.attribution.hunks import (
    SYSTEM,
    SYSTEM_FILE,
    AgentFiles,
    Hunk,
    block_lines,
    in_diff_order,
    lines_of,
    read_side,
    text_of,
)
from evalward.errors import YamlSyntaxError, printable
from evalward.files.committed import RepoFiles
from evalward.git import Git
from evalward.resources.models import Agent
from evalward.resources.reading.yamlsource import load_documents
from evalward.text.counts import first_few
from evalward.text.cuts import cap_chars


@dataclass(frozen=True)
class NotBuildable:
    """A variant that cannot be run, and why (in words for the report)."""

    reason: str


class _Unbuildable(Exception):
    """Why one file of a variant cannot be written."""


def build_variant(
    git: Git, base: str, head: str, agent: AgentFiles, reverted: Iterable[Hunk]
) -> str | NotBuildable:
    """The commit of the head with each hunk of `reverted` as the base has it (the head itself
    when none is)."""
    taken = frozenset(reverted)
    if not taken:
        return head
    before, after = RepoFiles.at_commit(git, base), RepoFiles.at_commit(git, head)
    by_path: dict[str, list[Hunk]] = {}
    for hunk in in_diff_order(taken):
        by_path.setdefault(hunk.path, []).append(hunk)
    definition = read_side(after, agent.definition)
    # every file's two sides read at once: a change to thousands of files is a few git calls;
    # a renamed file's base side is the file at its base name
    paths = list(by_path)
    named = {path: hunks[0].renamed_from or path for path, hunks in by_path.items()}
    found = before.contents(list(dict.fromkeys(named.values())))
    olds = {path: found[there] for path, there in named.items() if there in found}
    sides = _Sides(olds, after.contents(paths))
    files: dict[str, bytes | None] = {}
    modes: dict[str, str] = {}
    moved_back: dict[str, str] = {}
    moved = ""
    where = ""
    try:
        for where, hunks in by_path.items():
            files[where] = _reverted(sides, where, hunks, agent.agent)
            if any(h.kind == "moved" for h in hunks):
                moved = where  # the prompt's move taken back, below: its text is read here
            if any(h.kind == "rename" for h in hunks):
                # the rename taken back: the file is at the base's name, with the base's
                # mode, and holds what the head's does but for the other hunks taken back
                moved_back[where] = named[where]
                files[named[where]], files[where] = files[where], None
                where = named[where]
            if files[where] is not None and (
                where in moved_back.values() or any(h.kind in ("file", "mode") for h in hunks)
            ):
                # a file taken back whole is the base's, mode and all: a program the head
                # deleted, or made not executable, runs again; so is its mode taken back
                modes[where] = "100755" if before.is_executable(where) else "100644"
        if moved:
            where = definition.path if definition is not None else agent.definition
            head_yaml = files[where] if where in files else getattr(definition, "content", None)
            base_yaml = before.contents([agent.definition]).get(agent.definition)
            restored = _move_taken_back(files, moved, where, (base_yaml, head_yaml), agent.agent)
            if restored:  # the base's file again, mode and all
                modes[restored] = "100755" if before.is_executable(restored) else "100644"
        if definition is not None and definition.path in files:
            where = moved_back.get(definition.path, definition.path)
            _check_agent(files[where], agent.agent)
    except _Unbuildable as exc:
        return NotBuildable(f"{printable(where)}: {exc}")
    tree = git.tree_with(head, files, modes)
    return git.commit_tree(tree, head, f"{head[:12]} with {_named(taken)} taken back")


MESSAGE_HUNKS = 3
"""The hunks a variant's commit message names; the rest are counted. The message is one
argument of `git commit-tree`, which the system bounds (128 KiB on Linux): a change of
thousands of hunks, or of a few in files with names of 4 KiB, would not fit in it."""


def _named(taken: frozenset[Hunk]) -> str:
    """The hunks taken back, as the variant's commit message names them."""
    hunks = in_diff_order(taken)
    named = [cap_chars(printable(h.describe()), 300) for h in hunks[:MESSAGE_HUNKS]]
    return first_few(named, MESSAGE_HUNKS, total=len(hunks))


def with_only(
    git: Git,
    base: str,
    head: str,
    agent: AgentFiles,
    hunks: Iterable[Hunk],
    applied: Iterable[Hunk],
) -> str | NotBuildable:
    """The base's agent with only `applied` of the change's `hunks`: the head with every
    other hunk taken back (what confirms that `applied` alone brings a regression back)."""
    kept = frozenset(applied)
    return build_variant(git, base, head, agent, (h for h in hunks if h not in kept))


@dataclass(frozen=True)
class _Sides:
    """The contents of the files a variant takes hunks back in, as each side has them (a
    file a side lacks left out), links followed."""

    base: Mapping[str, bytes]
    head: Mapping[str, bytes]


def _reverted(sides: _Sides, path: str, hunks: list[Hunk], agent: str) -> bytes | None:
    """The file at `path` with `hunks` taken back; None: the base has no such file."""
    if any(h.kind == "file" for h in hunks):
        return sides.base.get(path)
    head_text = text_of(sides.head.get(path))
    if head_text is None:
        raise _Unbuildable("the head's file is not text, as it was when it was split")
    # text hunks first, at the head's lines they were split at; then fields, on what they left
    lines = lines_of(head_text)
    for hunk in sorted((h for h in hunks if h.kind == "text"), key=lambda h: h.at, reverse=True):
        end = hunk.at + len(hunk.head_lines)
        if tuple(lines[hunk.at : end]) != hunk.head_lines:
            raise _Unbuildable(f"{hunk.describe()} is not the head's")
        lines[hunk.at : end] = hunk.base_lines
    text = "".join(lines)
    fields = [h.field for h in hunks if h.kind == "field"]
    if fields:
        base_doc, head_doc = _documents(sides.base.get(path), text.encode(), agent)
        text = revert_fields(base_doc, head_doc, fields)
    return text.encode()


def _move_taken_back(
    files: dict[str, bytes | None],
    moved: str,
    definition: str,
    yaml: tuple[bytes | None, bytes | None],
    agent: str,
) -> str:
    """Take back the move of the agent's prompt whose hunk is at `moved` in `files` (the
    variant's files so far, `definition` its YAML; `yaml` the base's YAML and the variant's):
    a prompt moved into the YAML goes back into the file the base named (returned), and one
    moved out into a file goes back into the YAML, each with the variant's text of it."""
    base, head = yaml
    if moved == definition:
        named, files[named], files[definition] = _prompt_back_in_its_file(base, head, agent)
        return named
    prompt, files[moved] = files[moved], None
    files[definition] = _prompt_back_in_the_yaml(base, head, agent, text_of(prompt) or "")
    return ""


def _prompt_back_in_its_file(
    base: bytes | None, head: bytes | None, agent: str
) -> tuple[str, bytes, bytes]:
    """The file the base read the agent's prompt from (its `systemFile`), holding the prompt
    of the YAML `head` (the variant's, where a change moved it into the YAML), and `head`
    with the base's `systemFile` again and no `system`."""
    base_doc, head_doc = _documents(base, head, agent)
    named, prompt = value_at(base_doc.data, SYSTEM_FILE), value_at(head_doc.data, SYSTEM)
    if not isinstance(named, str) or not isinstance(prompt, str):
        raise _Unbuildable(f"the agent {agent}'s prompt is not where the change moved it")
    text = revert_fields(base_doc, head_doc, [SYSTEM, SYSTEM_FILE])
    return posixpath.normpath(named), prompt.encode(), text.encode()


def _prompt_back_in_the_yaml(
    base: bytes | None, head: bytes | None, agent: str, prompt: str
) -> bytes:
    """The agent's YAML `head` with the prompt a change moved out of it back in the base's
    `system: |` block, holding `prompt` (the variant's text of the file it was moved to),
    and no `systemFile`; the rest as the head has it."""
    base_doc, head_doc = _documents(base, head, agent)
    place = place_of(base_doc, SYSTEM)
    if place is None:
        raise _Unbuildable(f"the agent {agent}'s document cannot be read on both sides")
    lines = base_doc.lines
    block = block_lines(lines[place.first + 1 : place.last + 1], prompt)
    written = "\n".join([*lines[: place.first + 1], *block, *lines[place.last + 1 :]])
    with_prompt = read_agent_yaml(written, agent)
    if with_prompt is None or value_at(with_prompt.data, SYSTEM) != prompt:
        raise _Unbuildable(
            "its prompt cannot be written back into the YAML's `system: |` block as the file "
            "holds it"
        )
    return revert_fields(with_prompt, head_doc, [SYSTEM, SYSTEM_FILE]).encode()


def _documents(base: bytes | None, head: bytes | None, agent: str) -> tuple[AgentYaml, AgentYaml]:
    """The agent's document in the base's YAML and the variant's; _Unbuildable where either
    cannot be read."""
    base_text, head_text = text_of(base), text_of(head)
    base_doc = read_agent_yaml(base_text, agent) if base_text is not None else None
    head_doc = read_agent_yaml(head_text, agent) if head_text is not None else None
    if base_doc is None or head_doc is None:
        raise _Unbuildable(f"the agent {agent}'s document cannot be read on both sides")
    return base_doc, head_doc


def _check_agent(content: bytes | None, agent: str) -> None:
    """Refuse a definition from which the Agent no longer loads as the loader reads it."""
    text = text_of(content)
    if text is None:
        raise _Unbuildable(f"the agent {agent}'s file is gone or not text")
    try:
        documents = load_documents(text)
    except YamlSyntaxError as exc:
        raise _Unbuildable(f"it is no longer valid YAML ({exc})") from None
    found = [d.data for d in documents if is_agent(d.data, agent)]
    if not found:
        raise _Unbuildable(f"it no longer defines the agent {agent}")
    try:
        Agent.model_validate(found[0])
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'the agent'}: {e['msg']}"
            for e in exc.errors()[:3]
        )
        raise _Unbuildable(f"the agent {agent} no longer loads ({errors})") from None
