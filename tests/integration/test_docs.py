"""The documentation that is generated or enumerated cannot drift from the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from evalward.action.settings import Settings

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
