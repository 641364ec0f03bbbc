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

from evalward.resources.code_scorer import CodeAssertion
from evalward.resources.code_source import CodeSource


class ScoringFunction(CodeSource):
    """A function that decides a run from its assertions' results; see docs/assertions.md,
    "Deciding a run". It is written as a code assertion's function is (`file` with the
    function's name after a colon, or `source` with `language`), and runs as one."""

    def scorer(self, threshold: float | None) -> CodeAssertion:
        """The function as the code scorer that runs it (`threshold`: the fixture's
        `passThreshold`, which decides a number it returns)."""
        fields = {name: getattr(self, name) for name in CodeSource.model_fields}
        return CodeAssertion(type="code", threshold=threshold, **fields)
