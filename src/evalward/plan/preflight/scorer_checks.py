"""Whether a fixture's code scorers compile, found before a run rather than by it.

A Python scorer, inline or a file's, is compiled the way the harness compiles it
(scoring/code_harness.py: an inline scorer is an expression, else the body of a function),
with `compile()`, which runs nothing. A JavaScript scorer is checked with `node --check` (it
parses, runs nothing) when Node is on the run's PATH, written to a file of the name the
harness gives it. An error is located where the code was written: an inline scorer's at the
line of its YAML file (`CodeSource.source_at`), a file's at its own line.
"""

from __future__ import annotations

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
from evalward.resources.code_scorer import ScorerProtocol
from evalward.resources.code_scorer_files import code_sources
from evalward.resources.code_source import CodeLanguage, CodeSource, OutputTransform
from evalward.resources.locate import Locator
from evalward.resources.models import EvalFixture
from evalward.resources.problems import render_path
from evalward.resources.resource_set import Located
from evalward.resources.yamlsource import PathKey

NODE_CHECK_SECONDS = 30.0
"""A `node --check` that takes longer is let go: the run will tell."""
NODE_CHECKS = 4
"""`node --check` processes at once (each mostly waits for Node to start)."""
_NODE_PLACE = re.compile(r":(\d+)\s*$")
_NODE_ERROR = re.compile(r"^\w*Error: .+", re.MULTILINE)
_ESM = re.compile(r"^\s*export\s", re.MULTILINE)

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
        return [
            self._problem(fixture, at, code, failure)
            for fixture, at, code, checked in self._scorers
            if (failure := failures.get(checked)) is not None
        ]

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
