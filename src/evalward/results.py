"""Plain result records passed between the score, compare, report and gate stages.

They serialise to `results.json` as they are, so field names are part of its schema.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from evalward.resources.models import Severity
from evalward.runtime.trace import Trace, Usage

OUTPUT_CAP_BYTES = 8 * 1024
"""Seed 003: output captured per fixture is capped at 8 KiB in the status."""


class Status(StrEnum):
    passed = "pass"
    failed = "fail"
    error = "error"
    skipped = "skipped"


class Verdict(StrEnum):
    """Seed 001's verdict on a score: pass (>= 0.9), partial (> 0), fail."""

    passed = "pass"
    partial = "partial"
    failed = "fail"

    @classmethod
    def of(cls, score: float) -> Verdict:
        if score >= 0.9:
            return cls.passed
        if score > 0:
            return cls.partial
        return cls.failed


class Violation(BaseModel):
    """One rule the judge says the agent broke, citing a step of the trace as evidence."""

    rule: str
    severity: str = "medium"
    evidence_step: int | None = None
    quote: str = ""
    supported: bool = True
    """False when the cited step does not exist or the quote is not in it."""
    unsupported_reason: str = ""


class JudgeVerdict(BaseModel):
    """Seed 003's verdict shape, plus what evalward checked about it."""

    score: float = Field(ge=0, le=1)
    confidence: float | None = None
    summary: str = ""
    violations: list[Violation] = Field(default_factory=list)
    what_would_raise_score: str = ""
    model: str = ""
    all_violations_unsupported: bool = False
    advisory: bool = False
    """True when the judge may not gate (e.g. its calibration is below the floor)."""
    advisory_reason: str = ""


class AssertionResult(BaseModel):
    type: str
    status: Status
    score: float = Field(ge=0, le=1)
    weight: float
    severity: Severity
    axis: str | None = None
    message: str = ""
    judge: JudgeVerdict | None = None


class FixtureResult(BaseModel):
    eval: str
    fixture: str
    side: str
    rep: int = 0
    status: Status
    score: float = Field(ge=0, le=1)
    verdict: Verdict
    severity: Severity
    message: str = ""
    output: str = ""
    assertions: list[AssertionResult] = Field(default_factory=list)
    axes: dict[str, float] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    duration_ms: float = 0.0
    trace: Trace = Field(default_factory=Trace)
    file: str = ""
    line: int = 0

    @property
    def passed(self) -> bool:
        return self.status is Status.passed


class EvalResult(BaseModel):
    eval: str
    agent: str
    side: str
    score: float = Field(ge=0, le=1)
    passed: bool
    pass_threshold: float
    passing: int
    failing: int
    errors: int
    total: int
    fixtures: list[FixtureResult] = Field(default_factory=list)
    file: str = ""
    line: int = 0

    @property
    def last_score(self) -> str:
        """Seed 003's `lastScore`: formatted to 2 dp."""
        return f"{self.score:.2f}"


def cap_output(text: str, limit: int = OUTPUT_CAP_BYTES) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", errors="ignore") + "\n… [truncated]"
