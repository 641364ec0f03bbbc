"""How a fixture's run is decided from its assertions, when "every assertion passes" is not
the rule: a `passThreshold` on the weighted score, or a `scoringFunction`.

promptfoo writes both on a test: `threshold` (the test passes when the weighted mean of its
assertions' scores reaches it, whatever a single assertion says) and
`assertScoringFunction` (a JavaScript or Python function of the named scores that returns the
test's verdict). A scoring function is a code scorer (resources/code_scorer.py) with another
call: `(namedScores, context)` instead of `(output, context)`. Its file is read with the
fixture from the gate's commit, and it runs as code scorers run (scoring/run_verdict.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema

from evalward.resources.code_scorer import CodeAssertion, CodeLanguage
from evalward.resources.common import Model


class ScoringFunction(Model):
    """A function that decides a run from its assertions' results; see docs/assertions.md,
    "Deciding a run"."""

    file: str | None = Field(
        default=None,
        description="Its file, from the repository root, with the function's name after a "
        "colon (`scorers/combine.js:critical`; Python's default is `get_assert`).",
    )
    source: str | None = Field(
        default=None,
        description="The function inline: an expression of `namedScores` (`output`) and "
        "`context`, or the body of a function that returns.",
    )
    language: CodeLanguage | None = Field(
        default=None, description="`python` or `javascript`; from the file's extension."
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description="Passed to the function as `context.config`."
    )
    timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    memory_mb: int = Field(default=512, ge=64, le=8192)
    file_text: SkipJsonSchema[str | None] = Field(
        default=None,
        description="Set by evalward when the fixture loads: the text of `file` at the "
        "fixture's own commit.",
    )

    @model_validator(mode="after")
    def _a_scorer(self) -> ScoringFunction:
        try:  # the code scorer's own checks: one source, a path in the repository, a language
            scorer = self.scorer(None)
        except ValidationError as exc:
            raise ValueError(
                "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
            ) from None
        object.__setattr__(self, "language", scorer.language)
        return self

    def scorer(self, threshold: float | None) -> CodeAssertion:
        """The function as the code scorer that runs it (`threshold`: the fixture's
        `passThreshold`, which decides a number it returns)."""
        return CodeAssertion(
            type="code",
            file=self.file,
            source=self.source,
            language=self.language,
            config=self.config,
            threshold=threshold,
            timeout_seconds=self.timeout_seconds,
            memory_mb=self.memory_mb,
            file_text=self.file_text,
        )
