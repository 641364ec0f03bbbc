"""promptfoo's `prompts:`: texts, files of prompts (`---` between them in a text file, a chat
template in a JSON or YAML file, a YAML one read as the JSON of its value, as promptfoo reads
it), maps of file to label and `{raw|id, label}` objects.
A prompt built by a program (`.js`, `.py`) is refused: its output is what to write instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalward.importers.promptfoo.source import Files, Node
from evalward.importers.promptfoo.templates import stringify

PROMPT_FILES = (".txt", ".md", ".json", ".yaml", ".yml", ".j2", ".jinja", ".jinja2")
SEPARATOR = re.compile(r"^\s*---\s*$", re.MULTILINE)


@dataclass
class Prompt:
    label: str
    template: str
    node: Node


def entries(node: Node) -> list[tuple[Node, str | None]]:
    """Each entry of `prompts:` with the label a `{file: label}` map gives it."""
    if isinstance(node.value, dict) and not {"raw", "id"} & set(node.value):
        return [
            (Node(key, node.source, node.path), str(label.value)) for key, label in node.items()
        ]
    return [(item, None) for item in node.elements()]


def prompts_of(item: Node, label: str | None, files: Files) -> list[Prompt]:
    """The prompts one entry stands for (a file of several gives several)."""
    value = item.value
    if isinstance(value, dict):
        raw, ref, label_node = item.get("raw"), item.get("id"), item.get("label")
        label = str(label_node.value) if label_node is not None else label
        if raw is not None and isinstance(raw.value, str):
            return [Prompt(label or raw.value, raw.value, raw)]
        if ref is None or not isinstance(ref.value, str):
            raise item.refuse("a prompt needs `raw` text or an `id` naming a file")
        item, value = ref, ref.value
    if not isinstance(value, str):
        raise item.refuse("expected a prompt: a text, or file:// naming a file of prompts")
    name = value.removeprefix("file://")
    is_file = value.startswith("file://") or (
        "\n" not in value and value.endswith(PROMPT_FILES) and (files.base / name).is_file()
    )
    if not is_file:
        return [Prompt(label or value, value, item)]
    found: list[Prompt] = []
    for path in files.glob(item, name):
        if path.suffix not in PROMPT_FILES:
            raise item.refuse(
                f"{path.name}: a prompt built by a program; evalward does not run code to "
                "build prompts: run it once and write the prompts it returns"
            )
        shown = label or files.shown(path)
        if path.suffix in (".yaml", ".yml"):  # promptfoo reads it as the JSON of its value
            found.append(Prompt(shown, stringify(files.document(item, path).value), item))
            continue
        text = files.text(item, path)
        if path.suffix not in (".txt", ".md"):
            found.append(Prompt(shown, text, item))
            continue
        parts = [part.strip() for part in SEPARATOR.split(text) if part.strip()]
        found += [
            Prompt(shown if len(parts) == 1 else f"{shown}-{n + 1}", part, item)
            for n, part in enumerate(parts)
        ]
    return found
