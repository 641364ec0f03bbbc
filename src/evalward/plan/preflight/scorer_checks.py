"""Whether a fixture's code scorers compile, found before a run rather than by it.

A Python scorer, inline or a file's, is compiled the way the harness compiles it
(scoring/code/code_harness.py: an inline scorer is an expression, else the body of a function),
with `compile()`, which runs nothing. A JavaScript scorer is checked with `node --check` (it
parses, runs nothing) when Node is on the run's PATH, written to a file of the name the
harness gives it. An error is located where the code was written: an inline scorer's at the
line of its YAML file (`CodeSource.source_at`), a file's at its own line.

A Python file that compiles must also bind the function it is called by (its `file`'s
`:name`, else `get_assert`, a transform's `get_transform`) at its top level, where the harness
looks it up: read with `ast` (nothing runs), at the fixture's `file`. A file that binds names
in ways a reading cannot follow (`from x import *`, `globals()`, `exec`, ...) is left to the
run; a JavaScript file's exports are too (only running it shows what `module.exports` is).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from evalward.errors import Problem
from evalward.resources.checks.code_scorer import ScorerProtocol
from evalward.resources.checks.code_scorer_files import code_sources
from evalward.resources.checks.code_source import CodeLanguage, CodeSource, OutputTransform
from evalward.resources.models import EvalFixture
from evalward.resources.reading.locate import Locator
from evalward.resources.reading.problems import did_you_mean, render_path
from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.resource_set import Located

NODE_CHECK_SECONDS = 30.0
"""A `node --check` that takes longer is let go: the run will tell."""
NODE_CHECKS = 4
"""`node --check` processes at once (each mostly waits for Node to start)."""
_NODE_PLACE = re.compile(r":(\d+)\s*$")
_NODE_ERROR = re.compile(r"^\w*Error: .+", re.MULTILINE)
_ESM = re.compile(r"^\s*export\s", re.MULTILINE)
_DYNAMIC = frozenset({"globals", "vars", "locals", "exec", "eval", "setattr", "__import__"})
"""Names whose use may bind a module's names where a reading of its code cannot see them."""

Failure = tuple[int | None, int | None, str]
"""Where in the code (its line, its column) and why it does not compile."""


@dataclass(frozen=True)
class _Code:
    """A scorer's text as it is checked: its language (and whether a script), the name of the
    file it is checked as, whether inline, and the text."""

    kind: str
    name: str
    inline: bool
    text: str


@dataclass
class ScorerChecks:
    """Checks the code scorers of the fixtures added, each text once (fixtures share scorer
    files); JavaScript ones NODE_CHECKS at a time."""

    locator: Locator
    env: Mapping[str, str]
    _scorers: list[tuple[Located[EvalFixture], PathKey, CodeSource, _Code]] = field(
        default_factory=list
    )

    def add(self, fixture: Located[EvalFixture]) -> None:
        for at, code in code_sources(fixture.resource):
            if code.code is None:
                continue  # a file that did not load: the load said why
            script = getattr(code, "protocol", ScorerProtocol.function) is ScorerProtocol.script
            kind = code.lang.value + (":script" if script else "")
            checked = _Code(kind, _file_name(code, script), code.source is not None, code.code)
            self._scorers.append((fixture, at, code, checked))

    def problems(self) -> list[Problem]:
        """Every code scorer added that does not compile, located."""
        texts = {checked for *_, checked in self._scorers}
        node = shutil.which("node", path=self.env.get("PATH", ""))
        failures = {c: _python(c.text, c.inline) for c in texts if c.kind.startswith("python")}
        scripts = [c for c in texts if not c.kind.startswith("python")]
        if node is not None and scripts:  # without Node here, the run will tell
            with ThreadPoolExecutor(NODE_CHECKS) as pool:
                parsed = pool.map(lambda c: _node(node, c.name, c.text, c.inline), scripts)
                failures.update(zip(scripts, parsed, strict=True))
        found = []
        for fixture, at, code, checked in self._scorers:
            failure = failures.get(checked)
            if failure is not None:
                found.append(self._problem(fixture, at, code, failure))
            elif (why := undefined_function(code)) is not None:
                found.append(self.locator.problem(fixture, (*at, "file"), why))
        return found

    def _problem(
        self, fixture: Located[EvalFixture], at: PathKey, code: CodeSource, failure: Failure
    ) -> Problem:
        line, column, why = failure
        language = "Python" if code.lang is CodeLanguage.python else "JavaScript"
        what = "transform" if isinstance(code, OutputTransform) else "scorer"
        if code.source is None:
            return Problem(code.path, line, column, "", f"the {language} {what} {why}")
        message = f"the inline {language} {what} {why}"
        field_at = (*at, "source")
        if code.source_at is None or line is None:
            where = f" (its line {line})" if line is not None else ""
            return self.locator.problem(fixture, field_at, message + where)
        file, first = code.source_at
        return Problem(file, first + line - 1, None, render_path(field_at), message)


def undefined_function(code: CodeSource) -> str | None:
    """Why a Python scorer's file does not define the function it is called by, read with
    `ast`; None when it does, when it is no such file (inline, a `script`, JavaScript, not
    loaded), when it does not compile (`_python` says why) or when its names cannot be read."""
    script = getattr(code, "protocol", ScorerProtocol.function) is ScorerProtocol.script
    if code.lang is not CodeLanguage.python or code.source is not None or script:
        return None
    if code.code is None or not code.function:
        return None
    bound = _top_level(code.code)
    if bound is None or code.function in bound[0]:
        return None
    functions = bound[1]
    what = "transform" if isinstance(code, OutputTransform) else "scorer"
    named = ":" in (code.file or "")
    said = f"the Python {what} {code.path!r} defines no function {code.function!r}"
    if not named:
        said += " (the one called when `file` names none after a colon)"
    said += did_you_mean(code.function, functions)
    if not functions:
        return f"{said}; it defines no function at its top level"
    shown = ", ".join(functions[:10]) + (", ..." if len(functions) > 10 else "")
    return (
        f"{said}; it defines {shown}: name one of them after {'the' if named else 'a'} colon "
        f"(`{code.path}:{functions[0]}`), or define {code.function!r} at its top level"
    )


def _top_level(text: str) -> tuple[set[str], list[str]] | None:
    """The names a module's code may bind at its top level (every one it binds, and some it
    may not), and the functions it defines there, in order; None when it may bind names a
    reading cannot see, or does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    defined = _defined(tree)
    stored = _stored(tree)
    if defined is None or stored is None:
        return None
    bound, functions = defined
    functions.sort(key=lambda name: name.startswith("_"))
    return bound | stored, list(dict.fromkeys(functions))


def _defined(tree: ast.Module) -> tuple[set[str], list[str]] | None:
    """What the module's own scope (not its functions' and classes' bodies) defines and
    imports, and its functions; None: it imports `*`."""
    bound: set[str] = set()
    functions: list[str] = []
    scope: list[ast.AST] = [tree]
    while scope:
        for child in ast.iter_child_nodes(scope.pop()):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound.add(child.name)
                functions += [] if isinstance(child, ast.ClassDef) else [child.name]
            elif isinstance(child, ast.Import | ast.ImportFrom):
                if any(alias.name == "*" for alias in child.names):
                    return None
                bound.update(a.asname or a.name.split(".", 1)[0] for a in child.names)
            else:
                scope.append(child)
    return bound, functions


def _stored(tree: ast.Module) -> set[str] | None:
    """Every name stored anywhere in the module (some in a function's scope, not the
    module's: more than it binds), or declared `global`; None: it binds names dynamically."""
    stored: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id in _DYNAMIC:
                return None
            if isinstance(node.ctx, ast.Store | ast.Del):
                stored.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in ("__dict__", "modules"):
            return None
        elif isinstance(node, ast.Global | ast.Nonlocal):
            stored.update(node.names)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            stored.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            stored.add(node.rest)
    return stored


def _file_name(code: CodeSource, script: bool) -> str:
    """The name the harness gives the code's file: a script's own, a function's `scorer.mjs`
    (an ES module) or `scorer.cjs`."""
    if script:
        return PurePosixPath(code.path).name
    esm = code.path.endswith(".mjs") or _ESM.search(code.code or "") is not None
    return "scorer.mjs" if esm and code.source is None else "scorer.cjs"


def _python(text: str, inline: bool) -> Failure | None:
    """Why the Python code does not compile (its line within `text`), or None."""
    if not inline:
        return _compiles(text, "exec")
    if _compiles(text.strip(), "eval") is None:
        return None
    body = "".join("    " + line + "\n" for line in text.splitlines())
    failure = _compiles("def __scorer__(output, context):\n" + body, "exec")
    if failure is None or failure[0] is None:
        return failure
    return failure[0] - 1, failure[1], failure[2]  # the source's line, not the wrapper's


def _compiles(text: str, mode: str) -> Failure | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a SyntaxWarning is the run's business
            compile(text, "<scorer>", mode, dont_inherit=True)
    except SyntaxError as exc:
        shown = f": {exc.text.strip()}" if exc.text and exc.text.strip() else ""
        return exc.lineno, exc.offset, f"does not compile: {exc.msg}{shown}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, None, f"does not compile: {exc or type(exc).__name__}"
    return None


def _node(node: str, name: str, text: str, inline: bool) -> Failure | None:
    """Why `node --check` refuses the code (its line within `text`), or None. An inline
    scorer's body is checked as a CommonJS file (where `return` is at home), and within the
    async function the harness makes of it when it awaits."""
    if not inline:
        return _node_check(node, name, text)
    source = text.strip()
    multiline = re.search(r"\breturn\b", source) is not None or "\n" in source
    lead = "\n" * text[: text.index(source)].count("\n")
    body = lead + (source if multiline else f"return ({source});")
    failure = _node_check(node, name, body + "\n")
    if failure is not None and "await is only valid" in failure[2]:
        failure = _node_check(node, name, f"(async function (output, context) {{{body}\n}});\n")
    if failure is None or failure[0] is None:
        return failure
    last = body.count("\n") + 1  # "unexpected end of input" is past the last line
    return min(failure[0], last), failure[1], failure[2]


def _node_check(node: str, name: str, text: str) -> Failure | None:
    with tempfile.TemporaryDirectory(prefix="evalward-check-") as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8")
        try:
            done = subprocess.run(
                [node, "--check", str(path)],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=NODE_CHECK_SECONDS,
                cwd=folder,
                env={"PATH": str(Path(node).parent)},
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    return None if done.returncode == 0 else _node_failure(done.stderr, str(path))


def _node_failure(said: str, path: str) -> Failure:
    lines = said.splitlines()
    place = _NODE_PLACE.search(lines[0]) if lines and lines[0].startswith(path) else None
    error = _NODE_ERROR.search(said)
    why = error[0] if error is not None else (lines[-1] if lines else "node --check failed")
    return (int(place[1]) if place else None), None, f"does not parse: {why}"
