"""The tests mirror the source: every folder of tests names a package (or runtime subsystem) of
src/evalward, every package has its folder, and every test file says what kind of test it is
by exactly one mark (tests/README.md, "Where things are")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parents[1]
SOURCE = TESTS.parent / "src" / "evalward"
KINDS = {"unit", "integration", "e2e", "hostile", "conformance"}
SHARED = {"support", "fakes", "agents", "data", "frameworks", "promptfoo", "real_model"}
TOP_LEVEL = "toplevel"
"""The folder of the top-level modules' tests (errors.py, git.py, host.py, security.py,
__main__.py) and of the tests of the source as a whole (its layers, its docs, its release)."""
NOT_A_PACKAGE = {"http"}
"""A folder with no `__init__.py`: as a package on the tests' path (pyproject.toml's
`pythonpath`), tests/http would shadow the standard library's `http`."""


def _test_folders() -> set[str]:
    """Folders under tests/ holding Python, outside the shared ones; a folder of data alone
    (YAML seeds beside the tests that read them) is not one."""
    return {
        path.parent.relative_to(TESTS).as_posix()
        for path in TESTS.rglob("*.py")
        if path.parent != TESTS
        and path.relative_to(TESTS).parts[0] not in SHARED
        and "__pycache__" not in path.parts
    }


def _packages() -> set[str]:
    return {
        init.parent.relative_to(SOURCE).as_posix()
        for init in SOURCE.rglob("__init__.py")
        if init.parent != SOURCE
    }


def _test_files() -> list[Path]:
    return sorted(path for folder in _test_folders() for path in (TESTS / folder).glob("test_*.py"))


def _kinds(path: Path) -> list[str]:
    """The kind marks of a module's `pytestmark`, a mark or a list of them."""
    kinds: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            kinds += [
                mark.attr
                for mark in ast.walk(node.value)
                if isinstance(mark, ast.Attribute)
                and mark.attr in KINDS
                and ast.unparse(mark.value) == "pytest.mark"
            ]
    return kinds


def test_every_test_folder_names_a_package_of_the_source() -> None:
    strays = sorted(_test_folders() - _packages() - {TOP_LEVEL})
    assert strays == [], "test folders that name no package of src/evalward"


def test_every_package_of_the_source_has_its_test_folder() -> None:
    folders = _test_folders()
    untested = sorted(
        package
        for package in _packages()
        if not any(folder == package or folder.startswith(f"{package}/") for folder in folders)
    )
    assert untested == [], "packages of src/evalward with no folder under tests/"


def test_every_test_folder_is_a_package_but_the_ones_that_would_shadow() -> None:
    wrong = sorted(
        folder
        for folder in _test_folders()
        if (TESTS / folder / "__init__.py").exists() == (folder in NOT_A_PACKAGE)
    )
    assert wrong == [], "test folders whose __init__.py is missing, or present and shadowing"


def test_every_test_file_carries_exactly_one_kind() -> None:
    files = _test_files()
    assert len(files) > 200, "the layout check found almost no test files"
    wrong = {
        path.relative_to(TESTS).as_posix(): kinds
        for path in files
        if len(kinds := _kinds(path)) != 1
    }
    assert wrong == {}, f"each test file needs one of {sorted(KINDS)} in its pytestmark"


def test_the_kind_marks_are_registered() -> None:
    text = (TESTS.parent / "pyproject.toml").read_text(encoding="utf-8")
    missing = sorted(kind for kind in KINDS if f'"{kind}: ' not in text)
    assert missing == [], "kind marks missing from pyproject.toml's markers"
