"""The Evaluation: everything one run of the pipeline produced, from the change to the scores.

It is the record the later stages share: the pipeline and `shard.merge` build it, the report
renders it, the gate decides on its comparisons. It sits below all of them so that none of
them imports the orchestrator to read it. ("An Eval" is a resource definition; "an
Evaluation" is always this record.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalward.attribution.found import RunAttribution
from evalward.attribution.hunks import AgentFiles
from evalward.past.status import AgentIdentity
from evalward.plan.changes import ChangeSet
from evalward.plan.plan import Plan, PlannedRun
from evalward.resources.gate_policy import RegressionPolicy
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spending import Estimate, Spent
from evalward.rundata.spool import TraceSpool
from evalward.rundata.trace import Trace
from evalward.verdict.compare import EvalComparison
from evalward.verdict.gate import (
    Bypass,
    BypassRefusal,
    GateDecision,
    SkippedGating,
    decide,
)


@dataclass
class Evaluation:
    changes: ChangeSet
    plan: Plan
    fixtures: list[FixtureResult]
    evals: list[EvalResult]
    comparisons: list[EvalComparison]
    notes: list[str] = field(default_factory=list)
    private: set[tuple[str, str]] = field(default_factory=set)
    """(Eval, fixture) pairs marked `visibility: private`: held out of public reports."""
    skipped: list[PlannedRun] = field(default_factory=list)
    """Runs left out to stay within the budget."""
    base_over: frozenset[str] = frozenset()
    """The Evals whose own runs of the fixtures the base gates with the budget cannot hold
    even alone: only their skipped runs may `allow-incomplete` excuse (`SkippedGating`)."""
    estimate: Estimate | None = None
    traces: TraceSpool = field(default_factory=TraceSpool)
    """Where the fixture results' traces were moved after scoring."""
    agents: dict[str, AgentIdentity] = field(default_factory=dict)
    """The head-side Evals' agents as they ran: what their Eval status calls Stale later."""
    agent_files: dict[str, AgentFiles] = field(default_factory=dict)
    """The files those agents are made of at the head: what attribution splits into hunks."""
    spent_elsewhere: Spent | None = None
    """What model calls made in other jobs spent for this run: a merge's shard parts'."""
    head_commit: str = ""
    """The commit the head side was (its checkout's, when the run began); "" with none."""
    attribution: RunAttribution | None = None
    """Which hunks of the change caused its regressions, once the gate decided (None where
    attribution did not run): it never changes the decision."""

    @property
    def cache_hits(self) -> int:
        return sum(1 for f in self.fixtures if f.cached)

    def unfinished_evals(self) -> dict[str, str]:
        """Evals this run has no whole head-side result for, and why: runs the budget left
        out, every run's provider down, a judge that cannot decide, it could not run, or it
        is advisory (every assertion only reports: no verdict, so no `phase` of seed 003's).
        Their score says nothing about the agent as it is, so no Eval status records it."""
        why = dict(self.plan.not_run)
        for run in self.skipped:
            if run.side is Side.head:
                why.setdefault(run.eval, "runs left out to stay within the budget")
        for result in self.evals:
            if result.side == "head" and result.incomplete_reason:
                why.setdefault(result.eval, result.incomplete_reason)
            if result.side == "head" and result.provider_unavailable:
                why.setdefault(result.eval, "every run's model provider was unavailable")
            if result.side == "head" and result.inconclusive_reason and not result.passed:
                why.setdefault(result.eval, result.inconclusive_reason)
            if result.side == "head" and result.advisory:
                reason = result.advisory_reason or "every assertion only reports"
                why.setdefault(result.eval, f"it is advisory, with no verdict: {reason}")
        return why

    def decision(
        self,
        bypass: Bypass | None = None,
        refusal: BypassRefusal | None = None,
        *,
        regressions: RegressionPolicy = RegressionPolicy.none,
        allow_incomplete: bool = False,
    ) -> GateDecision:
        """The gate's decision on this run: its comparisons, the runs the budget skipped and
        the Evals that could not run all count, whichever front end asks."""
        return decide(
            self.comparisons,
            bypass,
            refusal,
            regressions=regressions,
            skipped_runs=len(self.skipped),
            allow_incomplete=allow_incomplete,
            not_run=self.plan.not_run,
            undefined=self.plan.undefined,
            budget=self.skipped_gating(),
        )

    def skipped_gating(self) -> SkippedGating:
        """The skipped runs of the fixtures the base gates with, and which of them are of an
        Eval whose own the budget cannot hold even alone (`base_over`): excused, unless the
        base branch has changed the agent they were estimated with since the pull request
        branched off (`Plan.base_behind`), whose cost is then the branch point's, not the
        base branch's."""
        gating = [run for run in self.skipped if self.plan.base_gates(run)]
        over = [run for run in gating if run.eval in self.base_over]
        behind = [run for run in over if run.eval in self.plan.base_behind]
        excused = [run for run in over if run.eval not in self.plan.base_behind]
        return SkippedGating(
            len(gating),
            len(excused),
            tuple(sorted({run.eval for run in excused})),
            behind_runs=len(behind),
            behind=tuple(sorted({run.eval for run in behind})),
            skipped_evals=frozenset(run.eval for run in self.skipped if run.side is Side.head),
        )

    def trace_of(self, result: FixtureResult) -> Trace:
        return self.traces.trace_of(result)
