"""What every assertion may set: its weight, its severity (else the fixture's), the axis its
score is reported on, the turn it reads and the transform of the output it checks."""

from __future__ import annotations

from pydantic import Field

from evalward.resources.checks.code_source import OutputTransform
from evalward.resources.common import Model, Severity


class AssertionBase(Model):
    weight: float = Field(default=1.0, ge=0)
    severity: Severity | None = None
    axis: str | None = None
    turn: int | None = Field(
        default=None,
        ge=1,
        description="In a conversation, read this turn alone (1 is the first); default all.",
    )
    transform: OutputTransform | None = Field(
        default=None,
        description="A function of the final output whose result this assertion checks "
        "instead (promptfoo's assertion `transform`), after the fixture's own `transform`; "
        'docs/assertions.md, "Transforms".',
    )
