"""One name per idea, read from the source: a public class or type alias is defined in one
module of src/evalward (two ideas get two names that say what each is; one idea, one
definition the others import), and a trace's end reason has one writer, `Trace.end`."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "evalward"
TYPE_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*$")
"""CapWords: a class or a type alias (`Redact = Callable[...]`), not a CONSTANT or `T`."""
END_REASON_WRITER = "rundata/trace.py"


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's top-level statements, those under a top-level `if` or `try` included."""
    for node in body:
        if isinstance(node, ast.If | ast.Try):
            yield from _statements(node.body + node.orelse + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                yield from _statements(handler.body)
        else:
            yield node


def defined_names(tree: ast.Module) -> set[str]:
    """The public CapWords names a module defines itself: classes and type aliases."""
    names: set[str] = set()
    for node in _statements(tree.body):
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if TYPE_NAME.match(name)}


def twins(package: Path) -> dict[str, list[str]]:
    """Each public name defined in more than one module, and those modules."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for name in defined_names(tree):
            where[name].append(path.relative_to(package).as_posix())
    return {name: modules for name, modules in where.items() if len(modules) > 1}


def end_reason_writers(package: Path) -> list[str]:
    """Every `….end_reason = …` (or `+=`, or an annotated assignment) in the package."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            else:
                continue
            if any(isinstance(t, ast.Attribute) and t.attr == "end_reason" for t in targets):
                found.append(f"{path.relative_to(package).as_posix()}:{node.lineno}")
    return found


def test_every_public_name_is_defined_in_one_module() -> None:
    found = "; ".join(
        f"{name} in {', '.join(mods)}" for name, mods in sorted(twins(PACKAGE).items())
    )
    assert not found, (
        "names defined in more than one module: rename them apart with names that say what "
        f"each is, or keep one definition that the others import: {found}"
    )


def test_the_twin_check_sees_classes_aliases_and_guarded_definitions(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.py").write_text("class Outcome:\n    pass\n\n\nRUN_KEY = 1\n")
    (tmp_path / "a" / "two.py").write_text(
        "from a.one import Outcome as Outcome\n\nRUN_KEY = 2\nRedact = str\n"
    )
    (tmp_path / "three.py").write_text(
        "import sys\n\nif sys.platform:\n    Outcome = tuple[int, str]\nelse:\n    Redact = int\n"
    )
    assert twins(tmp_path) == {
        "Outcome": ["a/one.py", "three.py"],
        "Redact": ["a/two.py", "three.py"],
    }


def test_only_the_trace_writes_its_end_reason() -> None:
    writers = end_reason_writers(PACKAGE)
    assert writers, "Trace.end writes the end reason; the check must see that write"
    outside = [w for w in writers if not w.startswith(END_REASON_WRITER + ":")]
    assert not outside, f"end a conversation through `Trace.end(reason)`, not at {outside}"
