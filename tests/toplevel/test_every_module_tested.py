"""Every module of src/evalward is imported by a test of its own: a module only reached
through a whole run (an action job, `evalward run` in a subprocess) has no test that fails
where it breaks, and a reader of the tests cannot find it beside its name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "evalward"
TESTS = ROOT / "tests"

LOADED_ELSEWHERE = {
    "evalward.runtime.proxy.guard.sitecustomize": (
        "loaded by a fixture run's own interpreter at start-up (PYTHONPATH), where it wraps "
        "name lookups; tests/runtime/proxy/test_start_up_guard.py loads it so, since importing "
        "it would guard the test process itself"
    ),
}
"""Modules no test may import into its own process, and why; each is still run by a test."""


def modules() -> set[str]:
    found = set()
    for path in SOURCE.rglob("*.py"):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        if parts[-1] != "__init__":
            found.add(".".join(parts))
    return found


def imported_by_tests() -> set[str]:
    """Every module a test file names in an import: `import a.b`, `from a.b import c` (both
    `a.b` and `a.b.c`, which may be a module)."""
    names: set[str] = set()
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
                names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_every_module_is_imported_by_a_test() -> None:
    untested = sorted(modules() - imported_by_tests() - LOADED_ELSEWHERE.keys())
    assert untested == [], (
        "give each a test that imports it, in the tests/ folder that mirrors its package: "
        + ", ".join(untested)
    )


def test_what_is_loaded_elsewhere_exists_and_is_run_by_a_test() -> None:
    for module in LOADED_ELSEWHERE:
        path = SOURCE.parent.joinpath(*module.split(".")).with_suffix(".py")
        assert path.is_file(), f"{module} is gone: take it off LOADED_ELSEWHERE"
    guard = (TESTS / "runtime" / "proxy" / "test_start_up_guard.py").read_text(encoding="utf-8")
    assert "sitecustomize" in guard
