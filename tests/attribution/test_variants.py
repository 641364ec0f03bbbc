"""Variants of the head with hunks taken back (attribution/variants.py), made as commits of a
real repository: only the hunks' lines change, the YAML's other lines stay as written, and a
revert that leaves the agent invalid is said so."""

from __future__ import annotations

import pytest

from attribution.conftest import (
    BASE_AGENT,
    BASE_PROMPT,
    HEAD_AGENT,
    HEAD_PROMPT,
    INLINE,
    INLINE_BASE,
    INLINE_HEAD,
    SUPPORT,
    Change,
)
from evalward.attribution.fields import plain, round_trip
from evalward.attribution.hunks import AgentFiles, Hunk, lines_of, split_change
from evalward.attribution.variants import NotBuildable, build_variant, with_only
from evalward.git import Git
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


def variant(change: Change, *reverted: Hunk, files: AgentFiles = SUPPORT) -> str:
    built = build_variant(change.git, change.base, change.head, files, reverted)
    assert isinstance(built, str), built
    return built


def show(change: Change, commit: str, path: str) -> str:
    return change.repo.git("show", f"{commit}:{path}") + "\n"


def changed(change: Change, commit: str) -> list[str]:
    return change.repo.git("diff", "--name-only", change.head, commit).splitlines()


def by_name(hunks: tuple[Hunk, ...]) -> dict[str, Hunk]:
    return {h.field_name or f"{h.path} {h.index}": h for h in hunks}


def test_a_prompt_hunk_taken_back_changes_its_lines_only(change: Change) -> None:
    hunks = by_name(split_change(change.git, change.base, change.head, SUPPORT))
    built = variant(change, hunks["prompts/support.md 2"])
    assert change.repo.git("rev-parse", f"{built}^") == change.head
    assert changed(change, built) == ["prompts/support.md"]
    expected = HEAD_PROMPT.replace("A new rule.\nAn example of it.\n", "")
    assert show(change, built, "prompts/support.md") == expected
    # the same hunks of the same head are the same commit
    assert variant(change, hunks["prompts/support.md 2"]) == built
    both = variant(change, hunks["prompts/support.md 1"], hunks["prompts/support.md 3"])
    assert show(change, both, "prompts/support.md") == (
        HEAD_PROMPT.replace("Rule 2, said more firmly.", "Rule 2.").replace(
            "Rule 10.", "Rule 9.\nRule 10."
        )
    )
    assert variant(change) == change.head  # nothing taken back: the head itself


def test_fields_taken_back_rewrite_their_own_lines_only(change: Change) -> None:
    hunks = by_name(split_change(change.git, change.base, change.head, SUPPORT))
    built = variant(
        change,
        hunks["spec.models"],
        hunks["spec.tools[lookup_order].description"],
        hunks["spec.tools[refund]"],
    )
    assert changed(change, built) == ["agents/support.yaml"]
    # every field back as the base has it; the head's comment line stays the head's
    assert show(change, built, "agents/support.yaml") == BASE_AGENT.replace(
        "# The support agent.", "# The support agent, answering refunds too."
    )
    model_only = variant(change, hunks["spec.models"])
    assert show(change, model_only, "agents/support.yaml") == HEAD_AGENT.replace(
        "[openai/gpt-4.1]", "[openai/gpt-4.1-mini]"
    )


def test_removed_fields_come_back_where_the_base_had_them(repo: GitRepo) -> None:
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT})
    clarify = "    - name: clarify\n      description: Ask the customer.\n"
    head_text = (
        BASE_AGENT.replace("  temperature: 0\n", "")
        .replace(clarify, "")
        .replace("      mock:\n        output: damaged\n", "")
    )
    head = repo.commit("head", {"agents/support.yaml": head_text})
    change = Change(repo, Git(repo.path), base, head)
    hunks = split_change(change.git, base, head, SUPPORT)
    assert [h.field_name for h in hunks] == ["spec.temperature", "spec.tools[clarify]"]
    built = variant(change, *hunks)
    assert show(change, built, "agents/support.yaml") == BASE_AGENT


def test_a_field_in_a_flow_mapping_is_written_back_as_data(repo: GitRepo) -> None:
    """A field that shares its line with others cannot be spliced: the document is written
    again, and holds exactly the head's data with the base's field."""
    flow = "  tools: [{name: lookup_order, description: Look up an order., mock: {output: x}}]\n"
    start = BASE_AGENT[: BASE_AGENT.index("  tools:")]
    base = repo.commit("base", {"agents/support.yaml": start + flow})
    changed_flow = flow.replace("an order.", "an order now.").replace("output: x", "output: y")
    head = repo.commit("head", {"agents/support.yaml": start + changed_flow})
    change = Change(repo, Git(repo.path), base, head)
    hunks = by_name(split_change(change.git, base, head, SUPPORT))
    assert set(hunks) == {"spec.tools[lookup_order].description", "spec.tools[lookup_order].mock"}
    built = variant(change, hunks["spec.tools[lookup_order].description"])
    written = plain(round_trip().load(show(change, built, "agents/support.yaml")))
    assert written == plain(round_trip().load(start + flow.replace("output: x", "output: y")))


def test_a_revert_that_leaves_the_agent_invalid_does_not_build(repo: GitRepo) -> None:
    system = BASE_AGENT.replace("  systemFile: prompts/support.md\n", "  system: Be kind.\n")
    base = repo.commit("base", {"agents/support.yaml": system})
    head = repo.commit("head", {"agents/support.yaml": BASE_AGENT})
    hunks = by_name(split_change(Git(repo.path), base, head, SUPPORT))
    assert set(hunks) == {"spec.system", "spec.systemFile"}
    built = build_variant(Git(repo.path), base, head, SUPPORT, [hunks["spec.system"]])
    assert isinstance(built, NotBuildable)
    assert built.reason.startswith("agents/support.yaml: the agent support no longer loads")
    assert "set either `system` or `systemFile`, not both" in built.reason
    both = build_variant(Git(repo.path), base, head, SUPPORT, hunks.values())
    assert isinstance(both, str)


def test_the_base_with_only_some_hunks_is_the_head_with_the_others_back(change: Change) -> None:
    hunks = split_change(change.git, change.base, change.head, SUPPORT)
    added = by_name(hunks)["prompts/support.md 2"]
    built = with_only(change.git, change.base, change.head, SUPPORT, hunks, [added])
    assert isinstance(built, str)
    assert show(change, built, "prompts/support.md") == BASE_PROMPT.replace(
        "Rule 6.", "A new rule.\nAn example of it.\nRule 6."
    )
    written = plain(round_trip().load(show(change, built, "agents/support.yaml")))
    assert written == plain(round_trip().load(BASE_AGENT))


def test_whole_files_are_taken_back_restored_or_removed(repo: GitRepo) -> None:
    (repo.path / "tools").mkdir()
    (repo.path / "tools/lookup.bin").write_bytes(b"\x7fELF\0\x01")
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT, "tools/old.sh": "echo\n"})
    (repo.path / "tools/lookup.bin").write_bytes(b"\x7fELF\0\x02")
    repo.remove("tools/old.sh")
    head = repo.commit("head", {"tools/new/refund.py": "print('refunded')\n"})
    named = ("tools/lookup.bin", "tools/new/refund.py", "tools/old.sh")
    files = AgentFiles("support", "agents/support.yaml", named)
    change = Change(repo, Git(repo.path), base, head)
    hunks = split_change(change.git, base, head, files)
    assert [(h.path, h.kind, h.first) for h in hunks] == [
        ("tools/lookup.bin", "file", 0),  # not text: no line to point at
        ("tools/new/refund.py", "file", 1),
        ("tools/old.sh", "file", 0),  # gone from the head
    ]
    built = variant(change, *hunks, files=files)
    assert repo.git("diff", "--name-status", base, built) == ""
    assert "tools/new" not in repo.git("ls-tree", "-r", "--name-only", built)
    only_binary = variant(change, hunks[0], files=files)
    assert repo.git("diff", "--name-status", head, only_binary) == "M\ttools/lookup.bin"


def test_a_program_the_head_deleted_comes_back_executable(repo: GitRepo) -> None:
    """Taken back, the agent's program is the base's, mode and all: written back as a plain
    file, it could not run, and the variant with every hunk taken back still regressed (the
    search said the regression was in no hunk)."""
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT, "tools/run.sh": "echo\n"})
    (repo.path / "tools/run.sh").chmod(0o755)
    base = repo.commit("an executable program")
    repo.remove("tools/run.sh")
    head = repo.commit("head")
    files = AgentFiles("support", "agents/support.yaml", ("tools/run.sh",))
    change = Change(repo, Git(repo.path), base, head)
    (hunk,) = split_change(change.git, base, head, files)
    built = variant(change, hunk, files=files)
    assert repo.git("diff", "--name-status", base, built) == ""
    assert repo.git("ls-tree", built, "tools/run.sh").startswith("100755 ")


def test_a_program_made_not_executable_is_one_hunk_taken_back_with_its_mode(
    repo: GitRepo,
) -> None:
    """The same text, no longer executable: the agent cannot start it. The change is a hunk
    of its mode (it was none: the search had nothing to take back) with no line (the diff
    shows none), and taken back, the file is the base's, mode and all."""
    repo.write({"tools/run.sh": "echo\n"})
    (repo.path / "tools/run.sh").chmod(0o755)
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT})
    (repo.path / "tools/run.sh").chmod(0o644)
    head = repo.commit("head")
    files = AgentFiles("support", "agents/support.yaml", ("tools/run.sh",))
    change = Change(repo, Git(repo.path), base, head)
    hunks = split_change(change.git, base, head, files)
    assert [(h.path, h.kind, h.first) for h in hunks] == [("tools/run.sh", "mode", 0)]
    built = variant(change, *hunks, files=files)
    assert repo.git("diff", "--name-status", base, built) == ""


def test_tools_put_back_at_one_place_keep_the_bases_order(repo: GitRepo) -> None:
    """Two adjacent tools the head removed, named against the alphabet's order, come back
    in the base's order, on the lines they had."""
    extra = "".join(
        f"    - name: {name}\n      description: {name}.\n      mock:\n        output: x\n"
        for name in ("zeta", "alpha")
    )
    clarify = "    - name: clarify\n"
    with_extra = BASE_AGENT.replace(clarify, extra + clarify)
    base = repo.commit("base", {"agents/support.yaml": with_extra})
    head = repo.commit("head", {"agents/support.yaml": BASE_AGENT})
    change = Change(repo, Git(repo.path), base, head)
    hunks = split_change(change.git, base, head, SUPPORT)
    assert [h.field_name for h in hunks] == ["spec.tools[alpha]", "spec.tools[zeta]"]
    assert show(change, variant(change, *hunks), "agents/support.yaml") == with_extra


def test_a_block_prompts_lines_taken_back_beside_a_field_read_as_the_mixed_text(
    repo: GitRepo,
) -> None:
    """One block of `system: |` taken back with the temperature: the prompt reads as the
    head's with that line the base's, the temperature the base's; every other line stays
    as written."""
    base = repo.commit("base", {"agents/support.yaml": INLINE_BASE})
    head = repo.commit("head", {"agents/support.yaml": INLINE_HEAD})
    change = Change(repo, Git(repo.path), base, head)
    temperature, rule, added, described = split_change(change.git, base, head, INLINE)
    built = variant(change, rule, temperature, files=INLINE)
    text = show(change, built, "agents/support.yaml")
    assert text == INLINE_HEAD.replace("temperature: 0.3", "temperature: 0").replace(
        "    Refund at once.\n", "    Ask why before you refund.\n"
    )
    spec = plain(round_trip().load(text))["spec"]
    assert spec["system"] == (
        "You are the support agent.\nAsk why before you refund.\nBe brief.\n"
        "Sign with your name.\nNever apologise.\n"
    )
    assert spec["tools"][0]["description"] == "Look up an order by its id or email.\n"
    # every hunk taken back is the base, line for line
    everything = variant(change, temperature, rule, added, described, files=INLINE)
    assert show(change, everything, "agents/support.yaml") == INLINE_BASE


MOVED = AgentFiles("support", "agents/support.yaml", ("prompts/moved.md",))
"""The agent of INLINE_BASE whose pull request moves its prompt into `prompts/moved.md`."""


def _moved_out(repo: GitRepo, prompt: str) -> Change:
    """The base's prompt written in the YAML; the head's in a new file, `prompt`, which the
    YAML names instead, on the more costly model."""
    base = repo.commit("base", {"agents/support.yaml": INLINE_BASE})
    system = INLINE_BASE.split("  system: |\n")[1].split("  tools:\n")[0]
    yaml = INLINE_BASE.replace(system, "").replace(
        "  system: |\n", "  systemFile: prompts/moved.md\n"
    )
    yaml = yaml.replace("[openai/gpt-4.1-mini]", "[openai/gpt-4.1]")
    head = repo.commit("head", {"agents/support.yaml": yaml, "prompts/moved.md": prompt})
    return Change(repo, Git(repo.path), base, head)


def test_a_prompt_moved_out_of_the_yaml_comes_back_with_the_variant_s_text(
    repo: GitRepo,
) -> None:
    """The new file is split against the prompt it was moved from, beside the move: taken
    back, the move puts the file's text as the variant has it (its lines taken back or not)
    into the YAML's `system: |` again, and the file and its `systemFile` are gone; the
    base with only one line of it is the base's prompt with that line, in the YAML."""
    prompt = (
        "You are the support agent.\nRefund at once.\nBe brief.\n"
        "Sign with your name.\nNever apologise.\n"
    )
    change = _moved_out(repo, prompt)
    hunks = split_change(change.git, change.base, change.head, MOVED)
    assert [(h.path, h.kind, h.field_name, h.first) for h in hunks] == [
        ("agents/support.yaml", "field", "spec.models", 6),
        ("prompts/moved.md", "moved", "spec.system", 0),
        ("prompts/moved.md", "text", "", 2),
        ("prompts/moved.md", "text", "", 5),
    ]
    model, move, refund, never = hunks

    def spec(commit: str) -> dict[str, object]:
        found: dict[str, object] = plain(round_trip().load(show(change, commit, MOVED.definition)))
        assert isinstance(found["spec"], dict)
        return found["spec"]

    moved_back = variant(change, move, files=MOVED)
    assert "prompts/moved.md" not in change.repo.git("ls-tree", "-r", "--name-only", moved_back)
    assert spec(moved_back)["system"] == prompt
    assert "systemFile" not in spec(moved_back)
    assert spec(moved_back)["models"] == ["openai/gpt-4.1"]
    # the YAML's other lines as written: a variant is the head but for what it takes back
    assert show(change, moved_back, MOVED.definition).replace(
        prompt.replace("\n", "\n    ").rstrip(" "), ""
    ) == show(change, change.head, MOVED.definition).replace(
        "  systemFile: prompts/moved.md\n", "  system: |\n    "
    )
    kept = variant(change, refund, files=MOVED)
    assert show(change, kept, "prompts/moved.md") == prompt.replace(
        "Refund at once.", "Ask why before you refund."
    )
    both = variant(change, move, refund, files=MOVED)
    assert spec(both)["system"] == prompt.replace("Refund at once.", "Ask why before you refund.")
    only = with_only(change.git, change.base, change.head, MOVED, hunks, [never])
    assert isinstance(only, str), only
    assert spec(only)["system"] == (
        "You are the support agent.\nAsk why before you refund.\nBe brief.\n"
        "Sign with your name.\nNever apologise.\n"
    )
    assert spec(only)["models"] == ["openai/gpt-4.1-mini"]
    everything = variant(change, model, move, refund, never, files=MOVED)
    assert show(change, everything, MOVED.definition) == INLINE_BASE


def test_a_moved_prompt_the_yaml_s_block_cannot_hold_as_written_does_not_build(
    repo: GitRepo,
) -> None:
    """A file whose first line is indented reads otherwise written as the block's lines
    (YAML takes the first line's indentation for the block's): the move taken back is not
    buildable, and says why, rather than run as a prompt the change never had."""
    change = _moved_out(repo, "  You are the support agent.\nBe brief.\n")
    hunks = split_change(change.git, change.base, change.head, MOVED)
    (move,) = [h for h in hunks if h.kind == "moved"]
    built = build_variant(change.git, change.base, change.head, MOVED, [move])
    assert isinstance(built, NotBuildable), built
    assert built.reason == (
        "agents/support.yaml: its prompt cannot be written back into the YAML's `system: |` "
        "block as the file holds it"
    )


def test_a_prompt_moved_into_the_yaml_goes_back_into_its_file_with_the_variant_s_text(
    repo: GitRepo,
) -> None:
    """The reverse: the base's prompt file removed and its text, reworded, written in the
    YAML's `system: |`. The block is split against the file: taken back, the move writes
    the block's text as the variant has it into the file again, and the YAML names it."""
    base = repo.commit(
        "base", {"agents/support.yaml": BASE_AGENT, "prompts/support.md": BASE_PROMPT}
    )
    repo.remove("prompts/support.md")
    inline = "  system: |\n" + "".join(f"    {line}" for line in lines_of(HEAD_PROMPT))
    yaml = BASE_AGENT.replace("  systemFile: prompts/support.md\n", inline)
    head = repo.commit("head", {"agents/support.yaml": yaml})
    change = Change(repo, Git(repo.path), base, head)
    hunks = split_change(change.git, base, head, SUPPORT)
    assert [(h.path, h.kind, h.field_name, h.first) for h in hunks] == [
        ("agents/support.yaml", "moved", "spec.system", 0),
        ("agents/support.yaml", "text", "spec.system", 11),
        ("agents/support.yaml", "text", "spec.system", 15),
        ("agents/support.yaml", "text", "spec.system", 20),
    ]
    move, firmly, added, removed = hunks

    moved_back = variant(change, move)
    assert show(change, moved_back, "prompts/support.md") == HEAD_PROMPT
    assert show(change, moved_back, "agents/support.yaml") == BASE_AGENT
    both = variant(change, move, firmly)
    assert show(change, both, "prompts/support.md") == HEAD_PROMPT.replace(
        "Rule 2, said more firmly.", "Rule 2."
    )
    only = with_only(change.git, base, head, SUPPORT, hunks, [added])
    assert isinstance(only, str), only
    assert show(change, only, "prompts/support.md") == BASE_PROMPT.replace(
        "Rule 6.\n", "A new rule.\nAn example of it.\nRule 6.\n"
    )
    assert show(change, only, "agents/support.yaml") == BASE_AGENT
    assert show(change, variant(change, *hunks), "agents/support.yaml") == BASE_AGENT
    assert removed.base_lines == ("    Rule 9.\n",)
