"""The gate's decision, the bypass, and its audit record."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from evalward.compare import Change, EvalComparison
from evalward.errors import EXIT_GATE_FAILED, EXIT_OK

AUDIT_EVENT = "eval_gate_bypass"


class GateResult(StrEnum):
    passed = "pass"
    failed = "fail"
    bypassed = "bypassed"
    skipped = "skipped"


@dataclass(frozen=True)
class Bypass:
    """A bypass label found on the PR, and who applied it (None when the API cannot tell)."""

    label: str
    applied_by: str | None
    applied_at: str | None = None


@dataclass
class GateDecision:
    result: GateResult
    failing_evals: list[str] = field(default_factory=list)
    failing_fixtures: dict[str, list[str]] = field(default_factory=dict)
    bypass: Bypass | None = None
    reason: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_GATE_FAILED if self.result is GateResult.failed else EXIT_OK


def decide(comparisons: list[EvalComparison], bypass: Bypass | None) -> GateDecision:
    """Fail when an affected Eval is below its threshold, unless the bypass label is present."""
    if not comparisons:
        return GateDecision(GateResult.skipped, reason="no Eval is affected by this change")
    failing = [c for c in comparisons if not c.head.passed]
    decision = GateDecision(
        GateResult.passed,
        failing_evals=[c.name for c in failing],
        failing_fixtures={
            c.name: [
                f.fixture
                for f in c.fixtures
                if f.change is not Change.removed and not all(r.passed for r in f.head)
            ]
            for c in failing
        },
    )
    if not failing:
        decision.reason = "every affected Eval meets its threshold"
        return decision
    if bypass is not None:
        decision.result = GateResult.bypassed
        decision.bypass = bypass
        decision.reason = f"failing Evals bypassed by the {bypass.label!r} label"
        return decision
    decision.result = GateResult.failed
    decision.reason = f"{len(failing)} affected Eval(s) below threshold"
    return decision


def audit_record(
    decision: GateDecision,
    *,
    repository: str,
    pr_number: int | None,
    head_sha: str,
    run_url: str,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """The structured bypass record: who overrode which failing Evals, where and when."""
    assert decision.bypass is not None
    moment = (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds")
    return {
        "event": AUDIT_EVENT,
        "actor": decision.bypass.applied_by,
        "label": decision.bypass.label,
        "label_applied_at": decision.bypass.applied_at,
        "repository": repository,
        "pull_request": pr_number,
        "head_sha": head_sha,
        "run_url": run_url,
        "failing_evals": decision.failing_evals,
        "failing_fixtures": decision.failing_fixtures,
        "timestamp": moment,
    }
