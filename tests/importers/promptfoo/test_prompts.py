"""promptfoo's `prompts:` read as promptfoo reads them (`importers/promptfoo/prompts.py`):
texts, files of prompts split at `---`, a chat template in JSON or YAML, labels from a map or
an object, and a prompt a program builds refused with what to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.errors import Refused
from evalward.importers.promptfoo.prompts import entries, prompts_of
from evalward.importers.promptfoo.source import Files, Node, Source
from evalward.resources.reading.yamlsource import parse_documents

pytestmark = pytest.mark.unit


def _prompts(repo: Path, prompts_yaml: str) -> list[tuple[str, str]]:
    """The prompts of a configuration in `repo` whose `prompts:` is `prompts_yaml`."""
    (document,) = parse_documents(f"prompts:\n{prompts_yaml}")
    node = Node(document.data["prompts"], Source("promptfooconfig.yaml", document), ("prompts",))
    files = Files(base=repo, root=repo, shown_from=repo)
    found = []
    for item, label in entries(node):
        found += [(p.label, p.template) for p in prompts_of(item, label, files)]
    return found


def test_texts_and_raw_objects_are_prompts_labelled_by_themselves_or_their_label(
    tmp_path: Path,
) -> None:
    assert _prompts(
        tmp_path, "  - 'Answer {{q}}'\n  - {raw: 'Be brief: {{q}}', label: brief}\n"
    ) == [("Answer {{q}}", "Answer {{q}}"), ("brief", "Be brief: {{q}}")]


def test_a_text_file_of_several_prompts_is_split_at_its_separators(tmp_path: Path) -> None:
    (tmp_path / "prompts.txt").write_text("First {{q}}\n---\nSecond {{q}}\n", encoding="utf-8")
    assert _prompts(tmp_path, "  - file://prompts.txt\n") == [
        ("prompts.txt-1", "First {{q}}"),
        ("prompts.txt-2", "Second {{q}}"),
    ]


def test_a_map_of_file_to_label_labels_each_file(tmp_path: Path) -> None:
    (tmp_path / "chat.json").write_text('[{"role": "user", "content": "{{q}}"}]', "utf-8")
    (tmp_path / "chat.yaml").write_text("- role: user\n  content: '{{q}}'\n", "utf-8")
    assert _prompts(tmp_path, "  file://chat.json: as-json\n  file://chat.yaml: as-yaml\n") == [
        ("as-json", '[{"role": "user", "content": "{{q}}"}]'),
        ("as-yaml", '[{"role":"user","content":"{{q}}"}]'),  # the JSON of its value
    ]


def test_a_glob_names_every_matching_file_in_order(tmp_path: Path) -> None:
    for name in ("b.txt", "a.txt"):
        (tmp_path / name).write_text(f"prompt {name}", encoding="utf-8")
    assert [label for label, _ in _prompts(tmp_path, "  - file://*.txt\n")] == ["a.txt", "b.txt"]


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("  - file://build.py\n", "build.py: a prompt built by a program; evalward does not run"),
        ("  - {label: x}\n", "a prompt needs `raw` text or an `id` naming a file"),
        ("  - 42\n", "expected a prompt: a text, or file:// naming a file of prompts"),
        ("  - file://../outside.txt\n", "is outside the repository"),
    ],
)
def test_what_cannot_be_a_prompt_is_refused_at_its_line(
    tmp_path: Path, written: str, message: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "build.py").write_text("print('prompt')", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("secret", encoding="utf-8")
    with pytest.raises(Refused) as raised:
        _prompts(repo, written)
    assert message in raised.value.problem.message
    assert (raised.value.problem.file, raised.value.problem.line) == ("promptfooconfig.yaml", 2)
