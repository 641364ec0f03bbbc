"""The documentation that is generated or enumerated cannot drift from the code."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalward.action.settings import Settings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_the_resource_reference_is_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_reference.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_reference_documents_every_field_of_every_kind() -> None:
    reference = (ROOT / "docs" / "reference.md").read_text()
    for field in ("targetAgent", "shadowTools", "toolReplay", "calibrationFloor", "sideEffects"):
        assert f"| `{field}` |" in reference
    for kind in ("Agent", "EvalFixture", "Eval", "JudgeCalibration", "evalward.yaml"):
        assert f"\n## {kind}\n" in reference


def test_readme_lists_every_input_and_output_of_the_action_with_its_default() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    readme = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| ([^|]*) \|", readme, re.MULTILINE))
    assert set(action["inputs"]) == set(Settings.input_names())
    for name, spec in action["inputs"].items():
        assert name in rows, f"README.md has no row for input `{name}`"
        default = str(spec.get("default", ""))
        assert rows[name].strip() == (f"`{default}`" if default else ""), name
    for name in action["outputs"]:
        assert f"`{name}`" in readme, f"README.md does not mention output `{name}`"


def test_readme_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(((?:docs|examples)/[^)#]+)", readme):
        assert (ROOT / target).exists(), target


SOURCE_CITATION = re.compile(r"\bseed[ -]?00\d\b|\bthe seeds?\b", re.IGNORECASE)


def test_what_users_read_says_what_things_are_not_which_source_they_came_from() -> None:
    """Pages, examples, the JSON Schema and every command's help describe evalward in its own
    words: "seed 003" means nothing to a reader (code comments may cite sources)."""
    from evalward import cli
    from evalward.resources.schema import json_schema

    texts = {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for pattern in ("*.md", "docs/*.md", "examples/**/*.yaml", "examples/**/*.md")
        for path in ROOT.glob(pattern)
    }
    texts["evalward schema"] = json.dumps(json_schema(None))
    parser = cli.build_parser()
    texts["evalward --help"] = parser.format_help()
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        for name, command in action.choices.items():
            texts[f"evalward {name} --help"] = command.format_help()
    cited = {where: m[0] for where, text in texts.items() if (m := SOURCE_CITATION.search(text))}
    assert not cited, cited


def test_the_results_page_names_every_field_results_json_holds() -> None:
    """A field the schema gains and docs/results-schema.md does not name is one a later
    workflow step cannot know it may read."""
    schema = json.loads((ROOT / "docs" / "results.schema.json").read_text())
    page = (ROOT / "docs" / "results-schema.md").read_text()
    named = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", page))
    fields: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            properties = node.get("properties")
            fields.update(properties if isinstance(properties, dict) else ())
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert not fields - named, sorted(fields - named)


def test_every_page_and_example_workflow_uses_the_action_at_the_major_tag_a_release_moves() -> None:
    """A release moves `v<major>` of its own version (docs/github.md, "The image a job runs"):
    a workflow copied with another major names a tag no release made."""
    from evalward import __version__

    tag = f"v{__version__.split('.')[0]}"
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *ROOT.glob("examples/**/*.yml")]
    used = {
        f"{path.relative_to(ROOT)}: {major}"
        for path in texts
        for major in re.findall(r"evalward/evalward@(v\d+)\b", path.read_text())
        if major != tag
    }
    assert not used, sorted(used)


def test_readme_s_workflow_is_the_one_init_writes(tmp_path: Path) -> None:
    """The README shows the workflow `evalward init` writes (OPENAI_API_KEY, `main`): the
    docs rely on what it holds (its concurrency group, base-cache, the pinned actions), so
    the two cannot drift apart."""
    from support.clirun import evalward

    assert evalward("init", cwd=tmp_path).returncode == 0
    written = (tmp_path / ".github" / "workflows" / "evals.yml").read_text()
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("\n## Use it in a workflow\n") :]
    shown = re.search(r"```yaml\n(.*?)```\n", section, re.S)
    assert shown, "README's workflow section has no yaml block"
    assert shown[1] == written
