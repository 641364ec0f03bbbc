"""An agent's change split into hunks (attribution/hunks.py), on real repositories: text
hunks with the head's lines a review comment points at, the agent's YAML by field."""

from __future__ import annotations

import os
from collections.abc import Iterable

import pytest
import yaml

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
from evalward.attribution.hunks import AgentFiles, Hunk, split_change
from evalward.attribution.variants import build_variant
from evalward.git import Git
from evalward.resources import Agent, Located
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


def where(hunks: tuple[Hunk, ...]) -> list[tuple[str, int, str, int, int, str]]:
    return [(h.path, h.index, h.kind, h.first, h.last, h.field_name) for h in hunks]


def built(repo: GitRepo, base: str, head: str, agent: AgentFiles, hunks: Iterable[Hunk]) -> str:
    """The commit of the head with `hunks` taken back, which must build."""
    variant = build_variant(Git(repo.path), base, head, agent, hunks)
    assert isinstance(variant, str), variant
    return variant


def test_a_prompt_splits_into_its_changed_blocks_and_the_yaml_into_fields(change: Change) -> None:
    hunks = split_change(change.git, change.base, change.head, SUPPORT)
    assert where(hunks) == [
        ("agents/support.yaml", 1, "field", 7, 7, "spec.models"),
        ("agents/support.yaml", 2, "field", 12, 12, "spec.tools[lookup_order].description"),
        ("agents/support.yaml", 3, "field", 22, 25, "spec.tools[refund]"),
        ("prompts/support.md", 1, "text", 2, 2, ""),
        ("prompts/support.md", 2, "text", 6, 7, ""),
        ("prompts/support.md", 3, "text", 11, 11, ""),
    ]
    models, described, added, reworded, new, deleted = hunks
    assert models.base_lines == ("  models: [openai/gpt-4.1-mini]   # the cheap one\n",)
    assert models.head_lines == ("  models: [openai/gpt-4.1]   # the cheap one\n",)
    assert added.base_lines == () and added.head_lines[0] == "    - name: refund\n"
    assert described.describe() == (
        "hunk 2 of agents/support.yaml (spec.tools[lookup_order].description), line 12"
    )
    assert reworded.base_lines == ("Rule 2.\n",)
    assert reworded.head_lines == ("Rule 2, said more firmly.\n",)
    assert new.base_lines == () and new.head_lines == ("A new rule.\n", "An example of it.\n")
    assert new.at == 5 and new.describe() == "hunk 2 of prompts/support.md, lines 6-7"
    # a deletion points at the head's line after it
    assert deleted.base_lines == ("Rule 9.\n",) and deleted.head_lines == ()
    assert HEAD_PROMPT.splitlines()[deleted.first - 1] == "Rule 10."


def test_a_yaml_change_that_changes_no_field_is_no_hunk(repo: GitRepo) -> None:
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT})
    reformatted = BASE_AGENT.replace("# The support agent.", "# Reformatted.").replace(
        "{ order_id: { type: string } }", "\n          order_id:\n            type: string"
    )
    head = repo.commit("head", {"agents/support.yaml": reformatted})
    assert split_change(Git(repo.path), base, head, SUPPORT) == ()


def test_removed_fields_point_at_the_heads_line_where_they_were(repo: GitRepo) -> None:
    """A field the head removed is said on the head's line after where it was, as a removed
    block of a prompt is: that line is in the diff, beside the lines it took out."""
    with_servers = BASE_AGENT + "  mcpServers:\n    docs:\n      url: http://127.0.0.1:9/mcp\n"
    base = repo.commit("base", {"agents/support.yaml": with_servers})
    head_text = (
        BASE_AGENT.replace("  temperature: 0\n", "")
        .replace(
            "    - name: clarify\n      description: Ask the customer.\n"
            "      mock:\n        output: damaged\n",
            "",
        )
        .replace("name: support\n", "name: support\n  description: answers customers\n")
    )
    head_text += "  mcpServers:\n    docs:\n      url: http://127.0.0.1:10/mcp\n"
    head = repo.commit("head", {"agents/support.yaml": head_text})
    hunks = split_change(Git(repo.path), base, head, SUPPORT)
    lines = head_text.splitlines()
    assert [(h.field_name, h.first, h.last) for h in hunks] == [
        ("metadata.description", 6, 6),
        ("spec.temperature", 9, 9),  # gone: the head's line after it stands for it
        ("spec.tools[clarify]", 18, 18),  # gone: the line after the last tool
        ("spec.mcpServers.docs", 19, 20),
    ]
    named = {h.field_name: h for h in hunks}
    assert lines[named["spec.temperature"].first - 1] == "  systemFile: prompts/support.md"
    assert lines[named["spec.tools[clarify]"].first - 1] == "  mcpServers:"
    docs = named["spec.mcpServers.docs"]
    assert lines[docs.first - 1 : docs.last] == ["    docs:", "      url: http://127.0.0.1:10/mcp"]
    assert named["spec.tools[clarify]"].head_lines == ()
    assert named["spec.tools[clarify]"].base_lines[0] == "    - name: clarify\n"


def test_a_removed_tool_is_commented_on_a_line_of_the_diff_not_far_above_it(
    repo: GitRepo,
) -> None:
    """The last tool removed, below a tool of seven lines: the head's `tools:` line is far
    above the lines the diff shows, and GitHub refuses a comment there (and the whole review
    with it)."""
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT})
    clarify = "    - name: clarify\n      description: Ask the customer.\n"
    head_text = BASE_AGENT.replace(clarify + "      mock:\n        output: damaged\n", "")
    head = repo.commit("head", {"agents/support.yaml": head_text})
    (hunk,) = split_change(Git(repo.path), base, head, SUPPORT)
    assert (hunk.field_name, hunk.first, hunk.last) == ("spec.tools[clarify]", 17, 17)
    first, last = hunk.changed
    (block,) = repo.diff_blocks(base, head, "agents/support.yaml")
    assert {first, last} <= block, (hunk.changed, block)


def test_a_binary_or_new_file_is_one_hunk_whole(repo: GitRepo) -> None:
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT})
    (repo.path / "tools").mkdir()
    (repo.path / "tools/lookup.bin").write_bytes(b"\x7fELF\0\x01")
    base = repo.commit("binary")
    (repo.path / "tools/lookup.bin").write_bytes(b"\x7fELF\0\x02")
    head = repo.commit("head", {"tools/refund.py": "print('refunded')\nprint('done')\n"})
    files = AgentFiles("support", "agents/support.yaml", ("tools/refund.py", "tools/lookup.bin"))
    hunks = split_change(Git(repo.path), base, head, files)
    assert where(hunks) == [
        ("tools/lookup.bin", 1, "file", 0, 0, ""),
        ("tools/refund.py", 1, "file", 1, 2, ""),
    ]
    assert hunks[1].base_lines == () and len(hunks[1].head_lines) == 2


def test_a_prompt_reached_through_a_link_is_split_where_it_is(repo: GitRepo) -> None:
    repo.write({"prompts/real.md": "one\ntwo\n"})
    (repo.path / "prompts/support.md").symlink_to("real.md")
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT})
    head = repo.commit("head", {"prompts/real.md": "one\n2\n"})
    hunks = split_change(Git(repo.path), base, head, SUPPORT)
    assert where(hunks) == [("prompts/real.md", 1, "text", 2, 2, "")]


def test_the_head_agent_that_is_not_yaml_of_it_is_split_as_text(change: Change) -> None:
    """A definition ruamel cannot read as the agent (here: it is renamed) is compared as the
    text it is; a variant that breaks it then does not build, and says so."""
    renamed = HEAD_AGENT.replace("name: support\n", "name: helper\n")
    head = change.repo.commit("rename", {"agents/support.yaml": renamed})
    hunks = split_change(change.git, change.base, head, SUPPORT)
    assert {h.kind for h in hunks if h.path == "agents/support.yaml"} == {"text"}


def test_a_block_fields_lines_end_before_the_next_key_or_item(repo: GitRepo) -> None:
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT})
    head_text = BASE_AGENT.replace(
        "        properties: { order_id: { type: string } }\n",
        "        properties: { order_id: { type: string } }\n        required: [order_id]\n",
    ).replace("output: shipped", "output: delayed")
    head = repo.commit("head", {"agents/support.yaml": head_text})
    hunks = split_change(Git(repo.path), base, head, SUPPORT)
    assert [(h.field_name, h.first, h.last) for h in hunks] == [
        ("spec.tools[lookup_order].parameters", 13, 16),  # not the `mock:` line after it
        ("spec.tools[lookup_order].mock", 17, 18),  # not the next tool's `- name:` line
    ]
    assert hunks[1].head_lines == ("      mock:\n", "        output: delayed\n")


def test_a_prompt_written_in_the_yaml_as_a_block_splits_into_its_changed_lines(
    repo: GitRepo,
) -> None:
    """`system: |` and a tool's `description: >` are split as a prompt file is, each changed
    block of lines a hunk on its own lines, named by the field it lies in; the fields beside
    them stay one hunk each."""
    base = repo.commit("base", {"agents/support.yaml": INLINE_BASE})
    head = repo.commit("head", {"agents/support.yaml": INLINE_HEAD})
    hunks = split_change(Git(repo.path), base, head, INLINE)
    assert where(hunks) == [
        ("agents/support.yaml", 1, "field", 7, 7, "spec.temperature"),
        ("agents/support.yaml", 2, "text", 10, 10, "spec.system"),
        ("agents/support.yaml", 3, "text", 13, 13, "spec.system"),
        ("agents/support.yaml", 4, "text", 18, 18, "spec.tools[lookup_order].description"),
    ]
    _, rule, added, described = hunks
    lines = INLINE_HEAD.splitlines()
    assert lines[rule.first - 1] == "    Refund at once."
    assert rule.base_lines == ("    Ask why before you refund.\n",)
    assert rule.head_lines == ("    Refund at once.\n",) and rule.at == 9
    assert added.base_lines == () and added.head_lines == ("    Never apologise.\n",)
    assert described.head_lines == ("        by its id or email.\n",)
    assert rule.describe() == "hunk 2 of agents/support.yaml (spec.system), line 10"


@pytest.mark.parametrize(
    "head_text",
    [
        INLINE_BASE.replace("system: |", "system: |-").replace("Be brief.", "Be terse."),
        INLINE_BASE.replace(
            "    You are the support agent.\n    Ask why before you refund.\n"
            "    Be brief.\n    Sign with your name.\n",
            "      You are the support agent.\n      Ask why before you refund.\n"
            "      Be terse.\n      Sign with your name.\n",
        ),
        INLINE_BASE.replace(
            "  system: |\n    You are the support agent.\n    Ask why before you refund.\n"
            "    Be brief.\n    Sign with your name.\n",
            '  system: "You are the support agent.\\nRefund at once.\\n"\n',
        ),
        INLINE_BASE.replace(
            "    Sign with your name.\n", "    Sign with your name.\n    # v1\n"
        ).replace("Be brief.", "Be terse."),
    ],
    ids=[
        "its key line changes",
        "its indentation changes",
        "it is no longer a block",
        "its last line looks like a comment",
    ],
)
def test_a_block_whose_lines_cannot_be_taken_back_alone_is_one_field(
    repo: GitRepo, head_text: str
) -> None:
    """Lines of the base put in the head's block would then read as other text (its key
    line or indentation changed, it is no longer a block), or its last line, `# v1`, is
    text that a field's place leaves out: the field is taken back whole."""
    base_text = INLINE_BASE
    if "# v1" in head_text:  # the base has it too, as `# v0`
        base_text = head_text.replace("# v1", "# v0").replace("Be terse.", "Be brief.")
    base = repo.commit("base", {"agents/support.yaml": base_text})
    head = repo.commit("head", {"agents/support.yaml": head_text})
    hunks = split_change(Git(repo.path), base, head, INLINE)
    assert [(h.kind, h.field_name) for h in hunks] == [("field", "spec.system")]


def test_a_field_s_changed_lines_are_the_ones_that_differ(repo: GitRepo) -> None:
    """A review comment may sit only on lines of the diff: a field of many lines with one
    changed is that line; changes further apart than one block of the diff holds, the
    first of them; an added field, all of its lines."""
    schema = "".join(f"          p{n}: {{ type: string }}\n" for n in range(12))
    base_text = BASE_AGENT.replace(
        "        properties: { order_id: { type: string } }\n",
        f"        properties:\n{schema}",
    )
    base = repo.commit("base", {"agents/support.yaml": base_text})
    one = repo.commit(
        "one",
        {"agents/support.yaml": base_text.replace("p5: { type: string }", "p5: { type: integer }")},
    )
    two = repo.commit(
        "two",
        {
            "agents/support.yaml": base_text.replace(
                "p1: { type: string }", "p1: { type: integer }"
            ).replace("p11: { type: string }", "p11: { type: integer }")
        },
    )
    git = Git(repo.path)
    (parameters,) = split_change(git, base, one, SUPPORT)
    assert (parameters.field_name, parameters.first, parameters.last) == (
        "spec.tools[lookup_order].parameters",
        13,
        27,
    )
    lines = base_text.splitlines()
    assert parameters.changed == (21, 21) and "p5" in lines[20]
    (apart,) = split_change(git, base, two, SUPPORT)
    assert apart.changed == (17, 17)  # p1's line: p11's, ten lines on, is a block of its own
    added = split_change(
        git, base, repo.commit("add", {"agents/support.yaml": HEAD_AGENT}), SUPPORT
    )
    refund = next(h for h in added if h.field_name == "spec.tools[refund]")
    assert refund.changed == (refund.first, refund.last)


def _paragraphs(count: int) -> list[str]:
    """A prompt of `count` rules, each followed by a blank line (lines that repeat)."""
    return [line for n in range(count) for line in (f"Rule {n}: answer in full.\n", "\n")]


def _prompt_change(repo: GitRepo, before: list[str], after: list[str]) -> tuple[Hunk, ...]:
    repo.write({"prompts/support.md": "".join(before)})
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT})
    head = repo.commit("head", {"prompts/support.md": "".join(after)})
    return split_change(Git(repo.path), base, head, SUPPORT)


def test_a_long_prompt_is_split_line_by_line_between_what_both_sides_keep(repo: GitRepo) -> None:
    """1,500 rules (3,000 lines a side, more than difflib is given at once): two changes ten
    lines apart are two hunks, as in a short prompt."""
    before = _paragraphs(1_500)
    after = list(before)
    after[1500], after[1510] = "Rule 750: refuse.\n", "Rule 755: refuse.\n"
    hunks = _prompt_change(repo, before, after)
    assert where(hunks) == [
        ("prompts/support.md", 1, "text", 1501, 1501, ""),
        ("prompts/support.md", 2, "text", 1511, 1511, ""),
    ]


def test_a_prompt_padded_with_a_hundred_thousand_lines_is_split_as_git_s_diff_shows_it(
    repo: GitRepo,
) -> None:
    """The pull request keeps the base's first rules and pads the rest with a hundred
    thousand blank lines between dashes (matched line by line by a quadratic matcher, each of
    the base's blank lines would walk all of the head's): git's diff splits it at once, each
    hunk is on one block of it, and taking every hunk back restores the base."""
    before = _paragraphs(300)
    after = before[:4] + ["-\n", "\n"] * 100_000 + ["NEVER REFUND.\n"]
    hunks = _prompt_change(repo, before, after)
    base, head = repo.git("rev-parse", "HEAD~1"), repo.head()
    blocks = repo.diff_blocks(base, head, SUPPORT.files[0])
    assert len(hunks) > 1 and hunks[0].first == 5
    assert all(any({*h.changed} <= block for block in blocks) for h in hunks)
    variant = built(repo, base, head, SUPPORT, hunks)
    assert repo.git("show", f"{variant}:prompts/support.md") == "".join(before).rstrip("\n")


def test_two_changes_far_apart_in_a_long_prompt_are_each_on_a_block_of_the_diff(
    repo: GitRepo,
) -> None:
    """Two rules changed 700 lines apart in a prompt of 3,000 lines: git's diff shows them
    as two blocks, and GitHub refuses a comment whose lines span both (and the whole review
    with it)."""
    before = _paragraphs(1_500)
    after = list(before)
    after[10], after[710] = "Rule 5: refuse.\n", "Rule 355: refuse.\n"
    hunks = _prompt_change(repo, before, after)
    assert where(hunks) == [
        ("prompts/support.md", 1, "text", 11, 11, ""),
        ("prompts/support.md", 2, "text", 711, 711, ""),
    ]
    base, head = repo.git("rev-parse", "HEAD~1"), repo.head()
    blocks = repo.diff_blocks(base, head, SUPPORT.files[0])
    assert all(any({*h.changed} <= block for block in blocks) for h in hunks)


def test_a_file_the_base_holds_as_binary_has_no_line_of_the_diff(repo: GitRepo) -> None:
    """A program that was a binary and is now a script: GitHub's diff of it is no lines at
    all, so a review comment on any of its lines is refused (and the whole review with it)."""
    (repo.path / "tools").mkdir()
    (repo.path / "tools/refund").write_bytes(b"\x7fELF\0\x01")
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT})
    head = repo.commit("head", {"tools/refund": "#!/bin/sh\necho refunded\n"})
    files = AgentFiles("support", "agents/support.yaml", ("tools/refund",))
    hunks = split_change(Git(repo.path), base, head, files)
    assert where(hunks) == [("tools/refund", 1, "file", 0, 0, "")]
    assert repo.diff_blocks(base, head, "tools/refund") == []
    assert len(hunks[0].head_lines) == 2  # taken back whole all the same


DESK = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: desk }
spec:
  models: [openai/gpt-4.1-mini]
  system: Answer the customer.
  tools:
    - name: t0
      description: Look it up.
      mock: { output: found }
"""


def _tools(count: int) -> str:
    return "".join(
        f"    - name: t{n}\n      description: Look it up.\n      mock: {{ output: found }}\n"
        for n in range(1, count + 1)
    )


def test_an_agent_yaml_that_changes_more_fields_than_are_split_is_split_as_text(
    repo: GitRepo,
) -> None:
    """Each field is found, and taken back, among all the others: a change of more than a
    hundred fields is split as a text file is (here one block of added lines)."""
    base = repo.commit("one tool", {"agents/desk.yaml": DESK})
    head = repo.commit("more tools", {"agents/desk.yaml": DESK + _tools(150)})
    hunks = split_change(Git(repo.path), base, head, AgentFiles("desk", "agents/desk.yaml"))
    end = DESK.count("\n") + 3 * 150
    assert where(hunks) == [("agents/desk.yaml", 1, "text", 11, end, "")]


def test_an_agent_yaml_too_large_to_read_field_by_field_is_split_as_text(repo: GitRepo) -> None:
    """A YAML over 64 KiB (ruamel, which keeps every comment and mark, would take seconds a
    side): its changed lines are hunks of the file, not of the field they lie in."""
    rules = "".join(f"    Rule {n}: answer the customer in full, politely.\n" for n in range(1_500))
    agent = DESK.replace("  system: Answer the customer.\n", "  system: |\n" + rules)
    assert len(agent) > 64 * 1024
    base = repo.commit("a long prompt", {"agents/desk.yaml": agent})
    changed = agent.replace("Rule 750: answer", "Rule 750: never answer")
    head = repo.commit("one rule", {"agents/desk.yaml": changed})
    hunks = split_change(Git(repo.path), base, head, AgentFiles("desk", "agents/desk.yaml"))
    assert where(hunks) == [("agents/desk.yaml", 1, "text", 757, 757, "")]


def test_an_agent_yaml_with_a_hundred_changed_fields_is_split_by_field(repo: GitRepo) -> None:
    base = repo.commit("one tool", {"agents/desk.yaml": DESK})
    head = repo.commit("more tools", {"agents/desk.yaml": DESK + _tools(100)})
    hunks = split_change(Git(repo.path), base, head, AgentFiles("desk", "agents/desk.yaml"))
    assert [h.kind for h in hunks] == ["field"] * 100
    assert hunks[0].field_name == "spec.tools[t1]"


def test_an_agent_that_names_an_anchor_is_split_as_text_on_the_lines_the_diff_shows(
    repo: GitRepo,
) -> None:
    """A tool's description written as an alias (`*desc`) changes with its anchor's value,
    on a line the diff shows; the alias's own line is unchanged. As fields, the change would
    be the description's, on a line nobody edited, and taking back the anchor's field alone
    would leave the description as the head has it: the file is split as text, one hunk on
    the anchor's line, whose taking back takes the description back too."""
    agent = BASE_AGENT.replace(
        "  temperature: 0\n", "  temperature: 0\n  x-words: &desc Look up an order.\n"
    ).replace("description: Look up an order.", "description: *desc")
    base = repo.commit("base", {"agents/support.yaml": agent, "prompts/support.md": "Hi.\n"})
    head = repo.commit(
        "head", {"agents/support.yaml": agent.replace("&desc Look up", "&desc Never look up")}
    )
    hunks = split_change(Git(repo.path), base, head, SUPPORT)
    assert [(h.path, h.field_name, h.changed) for h in hunks] == [
        ("agents/support.yaml", "", (9, 9))
    ]


def test_a_prompt_renamed_with_a_change_is_the_rename_and_the_change_on_its_diff_s_lines(
    repo: GitRepo,
) -> None:
    """The head renames the prompt and adds a rule to it: GitHub's diff shows the file as
    renamed, with that one line changed. The rename is one hunk (on no line: the diff shows
    none for a name) and the rule another, on its line; the file the base named is taken
    back with the rename, not apart. Each can be taken back alone: the rule alone leaves
    the renamed file with the base's text, the rename alone puts the head's text back at
    the base's name, both make the base."""
    base = repo.commit(
        "base", {"agents/support.yaml": BASE_AGENT, "prompts/support.md": BASE_PROMPT}
    )
    repo.remove("prompts/support.md")
    ruled = BASE_PROMPT.replace("Rule 5.\n", "Rule 5.\nNever refund.\n")
    head = repo.commit(
        "renamed",
        {
            "prompts/desk.md": ruled,
            "agents/support.yaml": BASE_AGENT.replace("support.md", "desk.md"),
        },
    )
    assert {f["filename"]: f["status"] for f in repo.pull_files(base, head)} == {
        "agents/support.yaml": "modified",
        "prompts/desk.md": "renamed",
    }
    # as targets_files gives them: the head's files, then those the base named
    agent = AgentFiles("support", "agents/support.yaml", ("prompts/desk.md", "prompts/support.md"))
    git = Git(repo.path)

    hunks = split_change(git, base, head, agent)

    shown = [(h.path, h.kind, h.first, h.last, h.changed, h.renamed_from) for h in hunks]
    assert shown == [
        ("agents/support.yaml", "field", 9, 9, (9, 9), ""),
        ("prompts/desk.md", "rename", 0, 0, (0, 0), "prompts/support.md"),
        ("prompts/desk.md", "text", 6, 6, (6, 6), "prompts/support.md"),
    ]
    blocks = repo.diff_blocks(base, head, "prompts/desk.md")
    assert any({6} <= block for block in blocks)
    field, rename, rule = hunks
    assert rename.describe() == "hunk 1 of prompts/desk.md (renamed from prompts/support.md)"
    everything = built(repo, base, head, agent, hunks)
    assert repo.git("diff", "--name-only", base, everything) == ""
    without_rule = built(repo, base, head, agent, [rule])
    assert repo.git("show", f"{without_rule}:prompts/desk.md") == BASE_PROMPT.rstrip("\n")
    only_rule = built(repo, base, head, agent, [field, rename])
    assert repo.git("diff", "--name-only", base, only_rule) == "prompts/support.md"
    assert repo.git("show", f"{only_rule}:prompts/support.md") == ruled.rstrip("\n")


def test_an_agent_s_yaml_renamed_with_a_change_is_the_rename_and_its_changed_field(
    repo: GitRepo,
) -> None:
    """The head moves the agent's YAML and raises its temperature: the rename and the field
    are hunks apart. The field alone taken back leaves the moved YAML as the base wrote it;
    the rename alone puts the head's YAML, temperature and all, back at the base's name,
    where the variant's agent still loads."""
    base = repo.commit(
        "base", {"agents/support.yaml": BASE_AGENT, "prompts/support.md": BASE_PROMPT}
    )
    repo.remove("agents/support.yaml")
    warmer = BASE_AGENT.replace("temperature: 0", "temperature: 0.7")
    head = repo.commit("moved", {"agents/desk/support.yaml": warmer})
    assert {f["filename"]: f["status"] for f in repo.pull_files(base, head)} == {
        "agents/desk/support.yaml": "renamed",
    }
    # as targets_files gives them: the head's definition and files, then the base's
    agent = AgentFiles(
        "support", "agents/desk/support.yaml", ("prompts/support.md", "agents/support.yaml")
    )
    git = Git(repo.path)

    hunks = split_change(git, base, head, agent)

    shown = [(h.path, h.kind, h.field_name, h.changed, h.renamed_from) for h in hunks]
    assert shown == [
        ("agents/desk/support.yaml", "rename", "", (0, 0), "agents/support.yaml"),
        ("agents/desk/support.yaml", "field", "spec.temperature", (8, 8), "agents/support.yaml"),
    ]
    rename, field = hunks
    everything = built(repo, base, head, agent, hunks)
    assert repo.git("diff", "--name-only", base, everything) == ""
    cooler = built(repo, base, head, agent, [field])
    assert repo.git("show", f"{cooler}:agents/desk/support.yaml") == BASE_AGENT.rstrip("\n")
    back = built(repo, base, head, agent, [rename])
    assert repo.git("diff", "--name-only", base, back) == "agents/support.yaml"
    assert repo.git("show", f"{back}:agents/support.yaml") == warmer.rstrip("\n")


def test_the_files_an_agent_s_watch_covers_are_its_hunks_and_no_others(repo: GitRepo) -> None:
    """A program agent names `agent/main.py` and watches `agent/*.py` (its own modules) and,
    through a folder its command line names, `web/`: a change there is the agent's, a
    change beside them (a README, another agent's module) is not, and a module renamed
    within the watched folder is its rename."""
    desk = (
        "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: desk }\nspec:\n"
        "  runtime: { command: { run: [python3, agent/main.py, --static, web/] } }\n"
        "  watch: ['agent/*.py']\n"
    )
    agent = AgentFiles.of(
        Located(Agent.model_validate(yaml.safe_load(desk)), "agents/desk.yaml", 1)
    )
    assert agent.watch == ("agent/*.py", "agent/main.py/**", "web/**")
    files = {
        "agents/desk.yaml": desk,
        "agent/main.py": "print('main')\n",
        "agent/rules.py": "RULES = 'approve'\n",
        "agent/old_name.py": "A = 1\nB = 2\nC = 3\nD = 4\n",
        "web/index.html": "<p>hi</p>\n",
        "README.md": "desk\n",
        "other/agent.py": "x = 1\n",
    }
    base = repo.commit("base", files)
    repo.remove("agent/old_name.py")
    head = repo.commit(
        "head",
        {
            "agent/rules.py": "RULES = 'refuse'\n",
            "agent/new_name.py": "A = 1\nB = 2\nC = 3\nD = 5\n",
            "web/index.html": "<p>hello</p>\n",
            "README.md": "the desk\n",
            "other/agent.py": "x = 2\n",
        },
    )

    hunks = split_change(Git(repo.path), base, head, agent)

    assert [(h.path, h.kind, h.first, h.renamed_from) for h in hunks] == [
        ("agent/new_name.py", "rename", 0, "agent/old_name.py"),
        ("agent/new_name.py", "text", 4, "agent/old_name.py"),
        ("agent/rules.py", "text", 1, ""),
        ("web/index.html", "text", 1, ""),
    ]


def test_a_pull_request_s_hostile_watch_globs_split_every_change_they_match_and_no_more(
    repo: GitRepo,
) -> None:
    """The pull request's agent watches everything (`**`), with a glob that is not one (`[`)
    and one made to backtrack (`*a*a…b`), and its change holds a file whose name is not
    UTF-8: each changed file is a hunk once, the name as git gives it, and nothing fails."""
    base = repo.commit("base", {"agents/desk.yaml": "x: 1\n", "evals/e.yaml": "a: 1\n"})
    with open(os.fsencode(repo.path) + b"/caf\xe9.md", "wb") as stream:
        stream.write(b"new\n")
    head = repo.commit("head", {"agents/desk.yaml": "x: 2\n", "evals/e.yaml": "a: 2\n"})
    watch = ("**", "[", "*a" * 200 + "b")
    agent = AgentFiles("desk", "agents/desk.yaml", (), watch)

    hunks = split_change(Git(repo.path), base, head, agent)

    assert sorted(os.fsencode(h.path) for h in hunks) == [
        b"agents/desk.yaml",
        b"caf\xe9.md",
        b"evals/e.yaml",
    ]


def _link(repo: GitRepo, path: str, target: str) -> None:
    where = repo.path / path
    where.parent.mkdir(parents=True, exist_ok=True)
    if where.is_symlink():
        where.unlink()
    where.symlink_to(target)


def test_a_change_reached_through_a_link_the_watch_covers_is_a_hunk_of_its_target(
    repo: GitRepo,
) -> None:
    """The desk watches `agent/**`: `agent/rules.md` leads to `shared/rules.md`, through
    `shared/firm.md` to `common/firm.md`, and `agent/prompts` to the folder `lib/prompts`. A
    change at each target is the desk's hunk, named at the file the change touched, as its
    diff shows it; a change beside them (a file no link leads to), a link that leads out of
    the repository, to an absolute path or round in a loop are none."""
    files = {
        "agents/desk.yaml": "x: 1\n",
        "shared/rules.md": "one\ntwo\n",
        "common/firm.md": "firm\n",
        "lib/prompts/greet.md": "hello\n",
        "lib/other.md": "other\n",
        "agent/node_modules/pkg/cli.js": "run()\n",
    }
    repo.write(files)
    _link(repo, "shared/firm.md", "../common/firm.md")
    _link(repo, "agent/rules.md", "../shared/rules.md")
    _link(repo, "agent/firm.md", "../shared/firm.md")
    _link(repo, "agent/prompts", "../lib/prompts")
    _link(repo, "agent/out.md", "../../outside.md")
    _link(repo, "agent/loop-a", "loop-b")
    _link(repo, "agent/loop-b", "loop-a")
    _link(repo, "agent/root", "/etc")
    _link(repo, "agent/node_modules/.bin/cli", "../pkg/cli.js")
    base = repo.commit("base")
    head = repo.commit(
        "head",
        {
            "shared/rules.md": "one\nTWO\n",
            "common/firm.md": "firmer\n",
            "lib/prompts/greet.md": "hello there\n",
            "lib/other.md": "another\n",
        },
    )
    agent = AgentFiles("desk", "agents/desk.yaml", (), ("agent/**",))

    hunks = split_change(Git(repo.path), base, head, agent)

    assert [(h.path, h.kind, h.first) for h in hunks] == [
        ("common/firm.md", "text", 1),
        ("lib/prompts/greet.md", "text", 1),
        ("shared/rules.md", "text", 2),
    ]


def test_a_file_watched_by_its_name_and_through_a_link_is_one_change(repo: GitRepo) -> None:
    """`watch: ['**']` covers `shared/rules.md` itself and `agent/rules.md`, a link to it:
    its change is one set of hunks, taken back once."""
    repo.write({"agents/desk.yaml": "x: 1\n", "shared/rules.md": "one\ntwo\n"})
    _link(repo, "agent/rules.md", "../shared/rules.md")
    base = repo.commit("base")
    head = repo.commit("head", {"shared/rules.md": "ONE\ntwo\n"})
    agent = AgentFiles("desk", "agents/desk.yaml", (), ("**",))

    hunks = split_change(Git(repo.path), base, head, agent)

    assert [(h.path, h.index, h.first) for h in hunks] == [("shared/rules.md", 1, 1)]


def test_a_link_and_the_file_it_leads_to_both_removed_are_two_changes(repo: GitRepo) -> None:
    """The change removes `shared/rules.md` and `agent/rules.md`, a link to it, both watched:
    each is taken back at its own name, so the variant with both back reads the base's text
    at both names again."""
    repo.write({"agents/desk.yaml": "x: 1\n", "shared/rules.md": "one\ntwo\n"})
    _link(repo, "agent/rules.md", "../shared/rules.md")
    base = repo.commit("base")
    repo.remove("shared/rules.md", "agent/rules.md")
    head = repo.commit("head")
    agent = AgentFiles("desk", "agents/desk.yaml", (), ("**",))

    hunks = split_change(Git(repo.path), base, head, agent)

    assert sorted(h.path for h in hunks) == ["agent/rules.md", "shared/rules.md"]
    everything = built(repo, base, head, agent, hunks)
    for path in ("agent/rules.md", "shared/rules.md"):
        assert repo.git("show", f"{everything}:{path}") == "one\ntwo"


def test_a_hunk_in_words_names_its_files_as_a_message_names_a_file() -> None:
    """A file's name is the pull request's bytes: a variant that does not build says which
    hunk in these words (results.json's `notBuilt`, the comment), where a byte that is not
    UTF-8 was a lone surrogate and a line break began a line of its own."""
    hunk = Hunk("prompts/caf\udce9.md", 1, "rename", 0, 0, renamed_from="prompts/a\n# b.md")

    assert hunk.describe() == 'hunk 1 of "prompts/caf\\xe9.md" (renamed from "prompts/a\\n# b.md")'
