"""The `code` assertion: a scorer written as a Python or JavaScript function.

A scorer is a function of the run (seed 002: "scorers are functions"). It lives in a file of
the repository (`file`, with the function's name after a colon) or inline (`source`, as
promptfoo writes a `javascript` / `python` assertion: an expression, or the body of a function
that `return`s). It gets the final output, the fixture's input, its expected output
(`reference`), its `vars` and the whole trace, and returns a bool, a number (a score) or a
mapping `{pass, score, reason}`.

A file's text is read when the fixture is loaded, from the same commit as the fixture
(`code_scorer_files.embed_scorers`): under `gate-config: base` the scorer that grades a pull
request is the base branch's, whatever the pull request did to the file. So are the files of
its `environment` (the packages it imports, an agent's `environment` in shape), read then
too and built from alone. How it runs (as the agent user, with no secret, bounded, with its
packages) is scoring/code_scorer.py and scoring/scorer_environments.py.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from evalward.resources.agent import AgentEnvironment
from evalward.resources.common import AssertionBase, Model

MAX_SOURCE_CHARS = 200_000
"""A scorer longer than this is refused at load time: it is a function, not a program."""


class CodeLanguage(StrEnum):
    python = "python"
    javascript = "javascript"


class ScorerProtocol(StrEnum):
    function = "function"
    """Called as `scorer(output, context)`; returns its verdict."""
    script = "script"
    """Run as a program (AgentV's script graders): the run as JSON on stdin, its verdict as
    JSON (or its exit code) on stdout."""


_SUFFIXES = {
    ".py": CodeLanguage.python,
    ".js": CodeLanguage.javascript,
    ".cjs": CodeLanguage.javascript,
    ".mjs": CodeLanguage.javascript,
}
DEFAULT_FUNCTION = {CodeLanguage.python: "get_assert", CodeLanguage.javascript: ""}
"""The function a file's scorer is, when `file` names none: Python's `get_assert` (promptfoo's
name), JavaScript's `module.exports` (itself a function) or its `default`."""


class CodeSource(Model):
    """A function written as code: where its text is, its language, what it is given beside
    its arguments and how long and large it may run. A code assertion is one, and so is a
    fixture's scoring function (resources/scoring_function.py)."""

    file: str | None = Field(
        default=None,
        description="The scorer's file, from the repository root (`scorers/tone.py`), "
        "optionally with the function's name after a colon (`scorers/tone.py:polite`).",
    )
    source: str | None = Field(
        default=None,
        description="The scorer inline: an expression of its arguments (`output` and "
        "`context`), or the body of a function that returns (promptfoo's inline "
        "`javascript` / `python`).",
    )
    language: CodeLanguage | None = Field(
        default=None,
        description="`python` or `javascript`; from the file's extension when `file` is set.",
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description="Passed to the scorer as `context.config`."
    )
    timeout_seconds: float = Field(
        default=30.0, gt=0, le=600, description="Longest the scorer may run, per run scored"
    )
    memory_mb: int = Field(
        default=512, ge=64, le=8192, description="The scorer process's memory limit"
    )
    file_text: SkipJsonSchema[str | None] = Field(
        default=None,
        description="Set by evalward when the fixture loads: the text of `file` at the "
        "fixture's own commit.",
    )
    source_at: SkipJsonSchema[tuple[str, int] | None] = Field(
        default=None,
        exclude=True,
        description="Set by evalward when the fixture loads: the file and line an inline "
        "scorer's code starts on, where its errors are reported.",
    )

    @field_validator("source")
    @classmethod
    def _bounded(cls, source: str | None) -> str | None:
        if source is not None and len(source) > MAX_SOURCE_CHARS:
            raise ValueError(f"an inline scorer is limited to {MAX_SOURCE_CHARS} characters")
        if source is not None and not source.strip():
            raise ValueError("an inline scorer is empty")
        return source

    @field_validator("file")
    @classmethod
    def _in_repository(cls, file: str | None) -> str | None:
        if file is None:
            return None
        path = file.split(":", 1)[0]
        parts = path.replace("\\", "/").lstrip("/").split("/")
        if not path.strip() or ".." in parts or parts[-1] in ("", "."):
            raise ValueError(f"{file!r} is not a file path in the repository (no `..`)")
        return file

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.file is None) == (self.source is None):
            raise ValueError("a `code` assertion needs `file` or `source` (one of them)")
        if self.file is not None and self.language is None:
            suffix = "." + self.path.rsplit(".", 1)[-1] if "." in self.path else ""
            if suffix not in _SUFFIXES:
                raise ValueError(
                    f"cannot tell the language of {self.path!r}: name a .py or .js file, or "
                    "set `language`"
                )
            object.__setattr__(self, "language", _SUFFIXES[suffix])
        self._check_protocol()
        if self.source is not None and self.language is None:
            raise ValueError("an inline scorer needs `language: python` or `javascript`")
        return self

    def _check_protocol(self) -> None:
        """What a kind of code adds to the checks, between the language and the inline
        scorer's (a code assertion's `protocol`)."""

    @property
    def path(self) -> str:
        """The scorer's file, without the function's name."""
        return (self.file or "").split(":", 1)[0].lstrip("/")

    @property
    def function(self) -> str:
        """The function a file's scorer is (empty: JavaScript's export itself)."""
        named = (self.file or "").split(":", 1)[1:] or [""]
        return named[0] or DEFAULT_FUNCTION[self.lang]

    @property
    def lang(self) -> CodeLanguage:
        assert self.language is not None, "set by validation"
        return self.language

    @property
    def origin(self) -> tuple[str, int | None]:
        """The name its errors give and the line its code starts on there: the scorer's
        file, or the YAML file and line an inline scorer stands on (when the load placed it:
        `code_scorer_files.place_inline`)."""
        if self.source is None:
            return self.path, None
        if self.source_at is not None:
            return self.source_at
        return f"<inline {self.lang.value} scorer>", None

    @property
    def code(self) -> str | None:
        """The scorer's text: inline, or the file's as loaded (None: not loaded)."""
        return self.source if self.source is not None else self.file_text


class CodeAssertion(AssertionBase, CodeSource):
    """A scorer written as code; see docs/assertions.md, "Code scorers"."""

    type: Literal["code"]
    axis: str | None = Field(
        default=None, description="Its axis (promptfoo's `metric`: a named score)."
    )
    protocol: ScorerProtocol = Field(
        default=ScorerProtocol.function,
        description="`function`: the file's function is called; `script`: the file runs as "
        "a program that reads the run as JSON on stdin and prints its verdict (AgentV's "
        "script graders; docs/assertions.md).",
    )
    args: list[str] = Field(
        default_factory=list, description="A `script`'s command-line arguments."
    )
    threshold: float | None = Field(
        default=None,
        description="A number the scorer returns passes when it is at least this (without "
        "it, when it is above 0); a `{pass, score}` mapping decides for itself.",
    )
    environment: AgentEnvironment | None = Field(
        default=None,
        description="The packages the scorer imports, as an agent's `environment` names them "
        "(a requirements file, a `pyproject.toml` + `uv.lock`, a `package.json` + its lock): "
        "read with the fixture from its commit and built from those files alone, by the action "
        '(docs/assertions.md, "A scorer\'s packages").',
    )
    environment_files: SkipJsonSchema[dict[str, str | None] | None] = Field(
        default=None,
        exclude=True,
        description="Set by evalward when the fixture loads: the text of each file of "
        "`environment` at the fixture's own commit (None: a lock file that is not there).",
    )
    environment_digest: SkipJsonSchema[str | None] = Field(
        default=None,
        description="Set by evalward when the fixture loads: a hash of `environment` and its "
        "files' text (what a cache key covers of them).",
    )

    def _check_protocol(self) -> None:
        if self.protocol is ScorerProtocol.script and self.file is None:
            raise ValueError("a `script` scorer runs a file: set `file`")
        if self.args and self.protocol is not ScorerProtocol.script:
            raise ValueError("`args` are a `script` scorer's (set `protocol: script`)")
