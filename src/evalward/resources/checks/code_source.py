"""Code written in the repository or inline, in Python or JavaScript: what a code scorer, a
scoring function and an output transform are made of (resources/checks/code_scorer.py holds the
first two, `OutputTransform` is below). Each is read and run as code scorers are.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, ClassVar, Self

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from evalward.resources.common import Model, RepoPath

MAX_SOURCE_CHARS = 200_000
"""A scorer longer than this is refused at load time: it is a function, not a program."""


class CodeLanguage(StrEnum):
    python = "python"
    javascript = "javascript"


_SUFFIXES = {
    ".py": CodeLanguage.python,
    ".js": CodeLanguage.javascript,
    ".cjs": CodeLanguage.javascript,
    ".mjs": CodeLanguage.javascript,
}


class CodeSource(Model):
    """A function written as code: where its text is, its language, what it is given beside
    its arguments and how long and large it may run."""

    default_function: ClassVar[dict[CodeLanguage, str]] = {
        CodeLanguage.python: "get_assert",
        CodeLanguage.javascript: "",
    }
    """The function a file's code is, when `file` names none: Python's `get_assert`
    (promptfoo's name), JavaScript's `module.exports` (itself a function) or its `default`."""

    file: RepoPath | None = Field(
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
        return named[0] or self.default_function[self.lang]

    @property
    def lang(self) -> CodeLanguage:
        assert self.language is not None, "set by validation"
        return self.language

    @property
    def origin(self) -> tuple[str, int | None]:
        """The name its errors give and the line its code starts on there: the scorer's
        file, or the YAML file and line an inline scorer stands on (when the load placed it:
        `code_scorer_files.InlinePlaces`)."""
        if self.source is None:
            return self.path, None
        if self.source_at is not None:
            return self.source_at
        return f"<inline {self.lang.value} scorer>", None

    @property
    def code(self) -> str | None:
        """The scorer's text: inline, or the file's as loaded (None: not loaded)."""
        return self.source if self.source is not None else self.file_text


class OutputTransform(CodeSource):
    """A function that turns the agent's final output into what the checks read
    (promptfoo's `transform`): `(output, context)` in, any JSON value out. Its whole answer
    comes back through the harness's own channel (one JSON document on the stdout it started
    with), never through text the output could hold; see docs/assertions.md, "Transforms"."""

    default_function: ClassVar[dict[CodeLanguage, str]] = {
        CodeLanguage.python: "get_transform",
        CodeLanguage.javascript: "",
    }

    @model_validator(mode="before")
    @classmethod
    def _written_as_code(cls, value: Any) -> Any:
        """promptfoo writes a transform as its code alone (`transform: output.trim()`):
        say how evalward writes it rather than that a mapping was expected."""
        if isinstance(value, str):
            shown = json.dumps(value, ensure_ascii=False)
            raise ValueError(
                f"a transform is a mapping of its code and language: `{{ language: javascript, "
                f"source: {shown} }}` (or `python`), or `{{ file: transforms/x.py }}`"
            )
        return value
