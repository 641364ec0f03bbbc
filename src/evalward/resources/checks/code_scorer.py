"""The `code` assertion: a scorer written as a Python or JavaScript function of the run (seed
002: "scorers are functions"), in a file of the repository or inline; and a fixture's
`scoringFunction`, a code scorer called `(namedScores, context)` instead of
`(output, context)` (docs/assertions.md, "Code scorers" and "Deciding a run").

Its file and its `environment`'s files are read with the fixture, from the fixture's commit
(resources/checks/code_scorer_files.py); how it runs (as the agent user, with no secret, bounded,
with its packages) is scoring/code/code_scorer.py's and scoring/code/scorer_environments.py's.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from evalward.resources.agents.agent import AgentEnvironment
from evalward.resources.checks.assertion_base import AssertionBase
from evalward.resources.checks.code_source import CodeLanguage as CodeLanguage
from evalward.resources.checks.code_source import CodeSource


class ScorerProtocol(StrEnum):
    function = "function"
    """Called as `scorer(output, context)`; returns its verdict."""
    script = "script"
    """Run as a program (AgentV's script graders): the run as JSON on stdin, its verdict as
    JSON (or its exit code) on stdout."""


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
        named = (self.file or "").partition(":")[2]
        if self.protocol is ScorerProtocol.script and named:
            raise ValueError(
                f"a `script` scorer runs its file whole and decides by its exit code, so the "
                f"function {named!r} that `file` names would never be "
                f"called: name the file alone ({self.path!r}), or drop `protocol: script` "
                "to call the function"
            )
        if self.args and self.protocol is not ScorerProtocol.script:
            raise ValueError("`args` are a `script` scorer's (set `protocol: script`)")


class ScoringFunction(CodeSource):
    """A function that decides a run from its assertions' results; see docs/assertions.md,
    "Deciding a run". It is written as a code assertion's function is (`file` with the
    function's name after a colon, or `source` with `language`), and runs as one."""

    def scorer(self, threshold: float | None) -> CodeAssertion:
        """The function as the code scorer that runs it (`threshold`: the fixture's
        `passThreshold`, which decides a number it returns)."""
        fields = {name: getattr(self, name) for name in CodeSource.model_fields}
        return CodeAssertion(type="code", threshold=threshold, **fields)
