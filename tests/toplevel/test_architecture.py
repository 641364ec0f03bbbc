"""The source keeps the shape docs/architecture.md describes: layers imported only downward,
no import cycle, imports at the top of a module (but in cli/, __main__.py, TYPE_CHECKING
blocks and imports marked `# lazy:`), every module's docstring stating its job, and functions
a reader can hold (ruff's complexity, statement and positional-argument rules, held here to
what pyproject.toml sets).

The layers are packages, listed in LAYERS below; docs/architecture.md shows the same
table (a test holds the two together).
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src"
PACKAGE = SOURCE / "evalward"
LAZY_MARK = "# lazy:"
FREE_TO_IMPORT_LATE = ("evalward.cli", "evalward.__main__")
"""Each command imports the engine when it runs, so `--version` loads almost nothing."""


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    top_level: bool
    """At the module's top (or in a top-level `if`/`try`), not inside a def or class."""
    type_only: bool
    """Under `if TYPE_CHECKING:`."""
    marked_lazy: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def resolve(name: str, known: dict[str, Path]) -> str:
    """The evalward module an import loads: `from evalward.report import files` is
    evalward.report.files; `from evalward.errors import ConfigError` is evalward.errors."""
    return name if name in known else name.rsplit(".", 1)[0]


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text)
    found: dict[tuple[int, str], Import] = {}

    def marked(node: ast.stmt) -> bool:
        """`# lazy:` on the import's line, or in the comment above it (or above the group of
        imports it belongs to)."""
        if LAZY_MARK in lines[node.lineno - 1]:
            return True
        for line in reversed(lines[: node.lineno - 1]):
            line = line.strip()
            if line.startswith(LAZY_MARK):
                return True
            if not line.startswith(("#", "from ", "import ")):
                return False
        return False

    def visit(node: ast.AST, top_level: bool, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
            ):
                visit(child, False, type_only)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                visit(child, top_level, True)
            elif isinstance(child, ast.Import | ast.ImportFrom):
                for target in _targets(child, name, path):
                    if target == "evalward" or target.startswith("evalward."):
                        module = resolve(target, known)
                        found[(child.lineno, module)] = Import(
                            name, module, child.lineno, top_level, type_only, marked(child)
                        )
            else:
                visit(child, top_level, type_only)

    visit(tree, True, False)
    return list(found.values())


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, importer: str, path: Path) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = importer.split(".") if path.name == "__init__.py" else importer.split(".")[:-1]
        anchor = package[: len(package) - (node.level - 1)]
        base = ".".join([*anchor, *([base] if base else [])])
    return [f"{base}.{alias.name}" for alias in node.names]


LAYERS: list[tuple[str, list[str]]] = [  # bottom first; `pkg/` is a package
    ("foundation", ["__init__", "errors", "host", "git", "security", "text/", "http/", "files/"]),
    ("definitions", ["resources/", "rundata/", "importers/", "definitions/"]),
    ("providers", ["providers/"]),
    ("engines", ["runtime/", "scoring/"]),
    ("phases", ["plan/", "execute/", "verdict/", "past/", "authoring/", "attribution/"]),
    ("record", ["record/"]),
    ("report", ["report/"]),
    ("flows", ["flows/"]),
    ("entry", ["__main__", "action/", "cli/"]),
]
"""The layers as packages: a module belongs to its package's layer. Only the modules below
stay at the top of src/evalward/, and docs/architecture.md shows this table."""

TOP_LEVEL = {"__init__", "__main__", "errors", "git", "host", "security"}
"""The entry point, the version, errors, the process's host, git and the redaction of secrets."""


def layers() -> list[tuple[str, list[str]]]:
    """(layer, entries), bottom layer first."""
    return LAYERS


def layer_of(module: str, table: list[tuple[str, list[str]]]) -> list[int]:
    matches = []
    for index, (_, entries) in enumerate(table):
        for entry in entries:
            if entry == "__init__":
                target = "evalward"
            elif entry.endswith("/"):
                target = "evalward." + entry.rstrip("/").replace("/", ".")
                if module == target or module.startswith(target + "."):
                    matches.append(index)
                continue
            else:
                target = "evalward." + entry.replace("/", ".")
            if module == target:
                matches.append(index)
    return matches


KNOWN = modules()


@functools.cache
def all_imports() -> list[Import]:
    """Every import of every module: parsed when a test first asks (not as the suite is
    collected, which every worker does)."""
    return [i for name, path in KNOWN.items() for i in imports_of(name, path, KNOWN)]


def test_every_module_is_in_exactly_one_layer() -> None:
    table = layers()
    stray = {m: layer_of(m, table) for m in KNOWN if len(layer_of(m, table)) != 1}
    assert not stray, (
        f"modules in no layer or in several (add each to docs/architecture.md once): {stray}"
    )


def test_no_import_runs_up_a_layer() -> None:
    table = layers()
    names = [layer for layer, _ in table]
    upward = [
        f"{i.importer}:{i.line} imports {i.imported} "
        f"({names[layer_of(i.importer, table)[0]]} -> {names[layer_of(i.imported, table)[0]]})"
        for i in all_imports()
        if layer_of(i.imported, table)[0] > layer_of(i.importer, table)[0]
    ]
    assert not upward, "imports that run up a layer:\n" + "\n".join(upward)


def test_imports_sit_at_the_top_of_a_module() -> None:
    hidden = [
        f"{i.importer}:{i.line} imports {i.imported} inside a function"
        for i in all_imports()
        if not i.top_level
        and not i.type_only
        and not i.marked_lazy
        and not i.importer.startswith(FREE_TO_IMPORT_LATE)
    ]
    assert not hidden, (
        "move these to the top of the module, or mark a lazy import for start-up time "
        f"with `{LAZY_MARK} <why>`:\n" + "\n".join(hidden)
    )


def test_no_import_cycle() -> None:
    """Every import counts, a type-only or a lazy one too: a cycle through them still ties
    the modules into one that cannot be read, tested or moved alone."""
    graph: dict[str, set[str]] = {name: set() for name in KNOWN}
    for i in all_imports():
        if i.imported != i.importer:
            graph[i.importer].add(i.imported)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[name] = 2
        path.pop()
        return None

    for name in sorted(graph):
        if name not in state:
            cycle = visit(name)
            assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checker_sees_what_it_must_refuse(tmp_path: Path) -> None:
    """A function-level import, a TYPE_CHECKING one, a marked lazy one and a relative one are
    each told apart."""
    source = tmp_path / "evalward" / "stage.py"
    source.parent.mkdir()
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from evalward.errors import ConfigError\n"
        "from .plan import plan\n"
        "if TYPE_CHECKING:\n"
        "    from evalward.report import files\n"
        "def f():\n"
        "    from evalward.flows.pipeline import Revisions\n"
        "    # lazy: the renderer is needed only when files are written,\n"
        "    # and a run that writes none is faster without it\n"
        "    from evalward.report.html import html_chunks\n"
        "    from evalward.report.junit import junit_xml\n"
        "    x = 1\n"
        "    from evalward.verdict.gate import decide\n"
    )
    found = imports_of("evalward.stage", source, KNOWN)
    described = [(i.imported, i.top_level, i.type_only, i.marked_lazy) for i in found]
    assert described == [
        ("evalward.errors", True, False, False),
        ("evalward.plan.plan", True, False, False),
        ("evalward.report.files", True, True, False),
        ("evalward.flows.pipeline", False, False, False),
        ("evalward.report.html", False, False, True),
        ("evalward.report.junit", False, False, True),
        ("evalward.verdict.gate", False, False, False),
    ]


def test_the_layer_table_orders_what_it_names() -> None:
    """Packages match their submodules, `__init__` is the package itself, and a provider
    importing a runtime would be an upward import."""
    table = layers()
    names = [layer for layer, _ in table]
    assert names[0] == "foundation" and names[-1] == "entry"
    (providers,) = layer_of("evalward.providers.base", table)
    (runtime,) = layer_of("evalward.runtime.agents.runner", table)
    assert providers < runtime
    assert [names[i] for i in layer_of("evalward", table)] == ["foundation"]
    assert [names[i] for i in layer_of("evalward.action.route", table)] == ["entry"]


def test_every_module_the_page_names_exists() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([\w/]+(?:\.py|/))`", page))
    assert len(named) > 30
    missing = sorted(
        n
        for n in named
        if not (PACKAGE / n).exists() and not (ROOT / n).exists() and not (PACKAGE / n).is_dir()
    )
    assert not missing, f"docs/architecture.md names what is not there: {missing}"


def test_no_module_hides_an_import_in_a_call() -> None:
    """`importlib.import_module` and `__import__` would get round every rule above: only the
    command line, which loads each command by name, calls them."""
    calls = []
    for name, path in KNOWN.items():
        if name.startswith(FREE_TO_IMPORT_LATE):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in ("import_module", "__import__"):
                    calls.append(f"{name}:{node.lineno}")
    assert not calls, f"dynamic imports outside cli/: {calls}"


def test_no_module_awaits_through_asyncio_wait_for() -> None:
    """On Python 3.11 `asyncio.wait_for` returns the result of a call that ends as its task is
    cancelled, and the cancellation is lost: a run stopped by SIGINT then went on, and asked a
    task group that was shutting down for a task (a crash, exit 4). `asyncio.timeout` never
    loses one."""
    calls = []
    for name, path in KNOWN.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "wait_for":
                calls.append(f"{name}:{node.lineno}")
    assert not calls, f"asyncio.wait_for (use `async with asyncio.timeout(...)`): {calls}"


def test_only_the_named_modules_sit_at_the_top_of_the_package() -> None:
    """A new module goes into the package of its layer, not loose beside the entry point."""
    loose = {p.stem for p in PACKAGE.glob("*.py")} - TOP_LEVEL
    assert not loose, f"modules loose at src/evalward/ (move each into a package): {sorted(loose)}"
    assert len(TOP_LEVEL) <= 6


def test_the_page_shows_the_layers_the_test_holds() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Layers and the import rule", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert block, "docs/architecture.md: no ```text block of layers under its heading"
    rows = [row.partition(":") for row in block[1].splitlines()]
    shown = [(layer.strip(), entries.split()) for layer, _, entries in rows]
    assert shown[::-1] == LAYERS, "docs/architecture.md's layer table is not LAYERS"


FUNCTION_RULES = {"C901": 15, "PLR0915": 50, "PLR0917": 6}
"""What a reader can hold, as ruff measures it (pyproject.toml says why each):
the paths through a function (McCabe), its statements, and the positions its callers fill
(past them, parameters are keyword-only, so calls name them). `make test` runs ruff."""
EXEMPTION = re.compile(r"#\s*noqa:[^#\n]*\b(C901|PLR0915|PLR0917)\b")


def ruff_settings() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        settings: dict[str, Any] = tomllib.load(file)["tool"]["ruff"]["lint"]
    return settings


def test_every_module_states_its_job() -> None:
    """A module's docstring opens with the job it does: a reader finds a feature by these
    lines, and a module whose job takes two unrelated sentences to state is two modules (a
    reviewer's call, which no count of lines made)."""
    silent = []
    for name, path in KNOWN.items():
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if not docstring.strip().splitlines() or not docstring.strip().splitlines()[0].strip():
            silent.append(name)
    assert not silent, f"modules whose docstring does not open with their job: {silent}"


def test_the_source_is_held_to_the_function_rules() -> None:
    """The rules are selected, at the limits this test names, and not switched off for src/:
    loosening one is a change to this test and to docs/architecture.md, not a quiet edit."""
    lint = ruff_settings()
    assert set(FUNCTION_RULES) <= set(lint["select"])
    assert not set(FUNCTION_RULES) & set(lint.get("ignore", []))
    assert lint["mccabe"]["max-complexity"] == FUNCTION_RULES["C901"]
    assert lint["pylint"]["max-statements"] == FUNCTION_RULES["PLR0915"]
    assert lint["pylint"]["max-positional-args"] == FUNCTION_RULES["PLR0917"]
    for pattern, rules in lint.get("per-file-ignores", {}).items():
        assert not (pattern.startswith(("src", "*")) and set(FUNCTION_RULES) & set(rules)), (
            f"pyproject.toml switches a function rule off for {pattern}"
        )


def test_every_exemption_says_why() -> None:
    """A function kept past a rule (a flat table of one case per name, say) has a comment
    on the line above its `# noqa` saying why; there are few, and each is read in review."""
    exempt, silent = [], []
    for name, path in KNOWN.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if EXEMPTION.search(line):
                exempt.append(f"{name}:{number + 1}")
                if number == 0 or not lines[number - 1].strip().startswith("#"):
                    silent.append(f"{name}:{number + 1}")
    assert not silent, f"a `# noqa` of a function rule with no comment above it: {silent}"
    assert len(exempt) <= 5, f"more exemptions than a review can weigh: {exempt}"


def test_the_function_rules_refuse_what_they_are_for(tmp_path: Path) -> None:
    """A function of sixteen paths, one of seven positions and one of 51 statements are
    refused; seven parameters past `*` and a long flat docstring are not."""
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(15))
    statements = "".join(f"    y{i} = {i}\n" for i in range(50))
    source = tmp_path / "sample.py"
    source.write_text(
        f"def tangled(x: int) -> int:\n{branches}    return -1\n\n\n"
        "def positions(a: int, b: int, c: int, d: int, e: int, f: int, g: int) -> None: ...\n\n\n"
        "def named(a: int, b: int, *, c: int, d: int, e: int, f: int, g: int) -> None: ...\n\n\n"
        f'def long() -> None:\n    """{"Why. " * 200}"""\n{statements}    print(y0)\n'
    )
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--output-format",
            "concise",
            "--config",
            str(ROOT / "pyproject.toml"),
            "--select",
            ",".join(FUNCTION_RULES),
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    refused = sorted(
        (int(m[1]), m[2]) for m in re.finditer(r"sample\.py:(\d+):\d+: (\w+)", found.stdout)
    )
    assert refused == [(1, "C901"), (35, "PLR0917"), (41, "PLR0915")], found.stdout + found.stderr


def test_nothing_on_the_gates_path_imports_the_authoring_commands() -> None:
    """`authoring/` serves `evalward promote` and `validate --playgrounds`: only the command
    line reaches it, so a change there cannot change what the gate decides."""
    importers = sorted(
        i.importer
        for i in all_imports()
        if i.imported.startswith("evalward.authoring")
        and not i.importer.startswith(("evalward.authoring", "evalward.cli"))
    )
    assert importers == []


def test_only_the_verdict_phase_builds_a_gate_decision() -> None:
    """The rule that an Eval, or a run, that cannot be decided is never a pass is kept where
    decisions are made: a `GateDecision` built anywhere else could pass what verdict/ would
    not. The cancelled and stopped runs' decisions are verdict/gate.py's too."""
    builders = []
    for name, path in KNOWN.items():
        if name.startswith("evalward.verdict."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if called == "GateDecision":
                    builders.append(f"{name}:{node.lineno}")
    assert builders == [], "build the decision in verdict/ (verdict/gate.py)"
    gate = (PACKAGE / "verdict" / "gate.py").read_text(encoding="utf-8")
    assert gate.count("GateDecision(") >= 5  # the checker reads what it must find


def test_a_commits_files_are_read_only_through_the_door() -> None:
    """Every read of a commit's file goes through `files/committed.py`'s `RepoFiles`, whose
    rules (links inside the tree, sizes, what is committed) no other module decides again:
    git's object readers are called from the door alone."""
    readers = {"read_files", "file_ids", "blobs", "blob", "blob_start", "blob_sizes"}
    readers |= {"links_among", "files_in", "lookup", "entry", "tree", "under"}
    readers |= {"needed_for", "write_files", "link_targets"}
    door = {"evalward.files.committed", "evalward.files.committable", "evalward.git"}
    callers = []
    for name, path in KNOWN.items():
        if name in door:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in readers
                and "git" in ast.unparse(node.func.value).lower()
            ):
                callers.append(f"{name}:{node.lineno} {ast.unparse(node.func)}")
    assert callers == [], "read a commit's files through RepoFiles (files/committed.py)"


def test_only_the_verdict_phase_makes_an_eval_inconclusive() -> None:
    """ "An Eval that cannot be decided is never a pass" is one rule, in verdict/
    (verdict/undecided.py): scoring says what a judge could not decide, and no other module
    writes an Eval's `inconclusive_reason`."""
    writers = []
    for name, path in KNOWN.items():
        if name == "evalward.verdict.undecided":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            keys: list[str] = []
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "EvalResult":
                keys = [k.arg for k in node.keywords if k.arg]
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                keys = [node.slice.value] if isinstance(node.slice, ast.Constant) else []
            if "inconclusive_reason" in keys:
                writers.append(f"{name}:{node.lineno}")
    assert writers == [], "make an Eval inconclusive in verdict/ (verdict/undecided.py)"
    rule = (PACKAGE / "verdict" / "undecided.py").read_text(encoding="utf-8")
    assert '"inconclusive_reason"' in rule  # the checker reads what it must find
