"""tests/README.md's map of where each package is tested stays true: every package under
src/evalward has its row, no row names a package that is gone, and every file or folder a row
names exists (a test file under tests/, a module under src/evalward/)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SOURCE = TESTS.parent / "src" / "evalward"
HEADING = "## Where each package is tested"
LAYERS = {"unit", "integration", "e2e", "hostile", "conformance", "promptfoo", "frameworks"}
TOP_LEVEL = "the top-level modules"


def _rows() -> dict[str, str]:
    """The map's rows: the package (or the top-level modules' row) and the cell of its tests."""
    text = (TESTS / "README.md").read_text(encoding="utf-8")
    assert HEADING in text, f"tests/README.md has no section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 2 or cells[0] in ("package", "---"):
            continue
        named = re.fullmatch(r"`([a-z_/]+)`", cells[0])
        rows[named[1] if named else cells[0]] = cells[1]
    return rows


def _packages() -> set[str]:
    return {
        init.parent.relative_to(SOURCE).as_posix()
        for init in SOURCE.rglob("__init__.py")
        if init.parent != SOURCE
    }


def test_every_package_has_its_row_and_every_row_a_package() -> None:
    rows = _rows()
    packages = {name for name in rows if not name.startswith(TOP_LEVEL)}
    assert sorted(_packages() - packages) == [], "packages missing from tests/README.md's map"
    assert sorted(packages - _packages()) == [], "the map names packages that do not exist"


def test_every_top_level_module_is_named() -> None:
    (row,) = [name for name in _rows() if name.startswith(TOP_LEVEL)]
    named = set(re.findall(r"`([a-z_]+\.py)`", row))
    modules = {path.name for path in SOURCE.glob("*.py") if path.name != "__init__.py"}
    assert sorted(modules - named) == [], "top-level modules missing from the map"


def test_every_path_the_map_names_exists() -> None:
    missing = []
    for package, tests in _rows().items():
        assert tests, f"the map gives {package!r} no tests"
        for path in re.findall(r"`([\w/.]+(?:\.py|/))`", tests):
            root = TESTS if path.split("/", 1)[0] in LAYERS else SOURCE
            if not (root / path).exists():
                missing.append(f"{package}: {path}")
    assert missing == []
