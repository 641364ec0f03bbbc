"""The gate's decision, the bypass (who may use it, for which head), and its audit record."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from evalward.errors import EXIT_EXTERNAL, EXIT_GATE_FAILED, EXIT_INTERRUPTED, EXIT_OK
from evalward.resources.gate_policy import RegressionPolicy
from evalward.text import jsontext
from evalward.text.counts import counted
from evalward.verdict import blocked
from evalward.verdict.blocked import Verdicts
from evalward.verdict.compare import EvalComparison

AUDIT_EVENT = "eval_gate_bypass"
"""Every audit line starts with `{"event": "eval_gate_bypass"`: a stable prefix for alerting."""

BYPASS_PERMISSIONS = ("admin", "maintain", "write")

_RECORD = re.compile(r"<!-- evalward-bypass-record (\{[^<>]*\}) -->")


class GateResult(StrEnum):
    passed = "pass"
    failed = "fail"
    bypassed = "bypassed"
    skipped = "skipped"
    incomplete = "incomplete"
    unavailable = "unavailable"
    """A model provider was down for every run of an affected Eval: no verdict either way."""
    inconclusive = "inconclusive"
    """An affected Eval's judge cannot decide (uncalibrated, below its floors, swayed in this
    run) and nothing else blocks: no verdict, never a pass."""


UNAVAILABLE = "provider unavailable — not a verdict on the agent"


@dataclass(frozen=True)
class Bypass:
    """An honoured bypass: the label, who applied it, when, and the head SHA it covers."""

    label: str
    applied_by: str | None
    applied_at: str | None = None
    permission: str | None = None
    scope: str = "sha"
    head_sha: str = ""
    by_author: bool = False
    """The pull request's own author applied the label: allowed (write access is the rule),
    and said wherever the bypass is recorded, for whoever reviews the audit."""


@dataclass(frozen=True)
class BypassRefusal:
    """The bypass label is on the PR but does not count; the gate stays red."""

    label: str
    applied_by: str | None
    applied_at: str | None
    permission: str | None
    reason: str


@dataclass(frozen=True)
class BypassRecord:
    """Which head SHA the label was applied to, and into which branch the pull request was
    then (`base`; None in a record that does not say), kept in evalward's own (bot)
    comment."""

    label: str
    labeled_at: str | None
    sha: str
    base: str | None = None

    def render(self) -> str:
        data = json.dumps(
            {"label": self.label, "labeled_at": self.labeled_at, "sha": self.sha, "base": self.base}
        )
        return (
            "<!-- evalward-bypass-record "
            + data.replace("<", "\\u003c").replace(">", "\\u003e")
            + " -->"
        )

    @classmethod
    def parse(cls, body: str) -> BypassRecord | None:
        match = _RECORD.search(body)
        if match is None:
            return None
        try:
            data = jsontext.loads(match[1])
            base = data.get("base")
            return cls(
                str(data["label"]),
                data.get("labeled_at"),
                str(data["sha"]),
                base if isinstance(base, str) else None,
            )
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class LabelWeighed:
    """The bypass label as weighed for one head: honoured, refused, or not weighed (the gate
    passes on its own, or there is no label), and the record the comment keeps of which head
    it was applied on."""

    bypass: Bypass | None = None
    refusal: BypassRefusal | None = None
    record: BypassRecord | None = None


def judge_bypass(
    *,
    label: str,
    scope: str,
    head_sha: str,
    applied_by: str | None,
    applied_at: str | None,
    permission: str | None,
    covered_sha: str | None,
    base_ref: str = "",
    covered_base: str | None = None,
    unproven: str = "",
) -> Bypass | BypassRefusal:
    """Honour the label only for a user with write access, and (scope `sha`) for its own head
    into the branch it was applied against.

    `covered_sha` is the head the label was applied to, when evalward can prove it: from the
    `labeled` event's payload, or from the record in its own comment; `covered_base` the
    branch the pull request was into then, and `base_ref` the one it is into now. A push after
    the label changes the head, and its author may retarget the pull request to a branch whose
    Evals the labeler never saw fail, so with scope `sha` the gate is armed again until
    someone re-applies it.
    `unproven` says why this run's `labeled` payload proves no head ("" when it does, or the
    run is not one), so that a refusal tells the labeler why their label did not count.
    The facts are keyword-only, so that one is never passed in another's place."""

    def refuse(reason: str) -> BypassRefusal:
        return BypassRefusal(label, applied_by, applied_at, permission, reason)

    if not applied_by:
        return refuse("the issue events API does not say who applied the label")
    if permission not in BYPASS_PERMISSIONS:
        return refuse(
            f"{applied_by} has {permission or 'no'} permission on the repository; only users "
            "with write, maintain or admin permission can bypass the gate"
        )
    if scope == "sha" and covered_sha != head_sha:
        where = f"commit {covered_sha[:12]}" if covered_sha else "an earlier head"
        return refuse(
            f"the label was applied to {where}, and the head is now {head_sha[:12]}: with "
            "`bypass-scope: sha` a push after the label re-arms the gate; remove and re-apply "
            "the label to bypass this head"
            + (f". This run's `labeled` event shows no head: {unproven}" if unproven else "")
        )
    if scope == "sha" and covered_base != base_ref:
        where = f"`{covered_base}`" if covered_base else "a branch its record does not name"
        return refuse(
            f"the label was applied while the pull request was into {where}, and it is now "
            f"into `{base_ref}`: with `bypass-scope: sha` the label covers its head into the "
            "branch it was applied against; remove and re-apply the label to bypass this gate"
        )
    return Bypass(label, applied_by, applied_at, permission, scope, head_sha)


@dataclass
class GateDecision:
    result: GateResult
    failing_evals: list[str] = field(default_factory=list)
    failing_fixtures: dict[str, list[str]] = field(default_factory=dict)
    bypass: Bypass | None = None
    refusal: BypassRefusal | None = None
    reason: str = ""
    unavailable_evals: list[str] = field(default_factory=list)
    """Affected Evals none of whose runs could reach a model provider (an outage)."""
    inconclusive_evals: list[str] = field(default_factory=list)
    """Affected Evals their own rules pass whose judge cannot decide: not passing."""

    interrupted: bool = False
    """True when SIGTERM/SIGINT cut the run short."""
    why: list[str] = field(default_factory=list)
    """One line per thing that blocks: the Eval, the test, the fixtures that drove it and its
    numbers (the comment's "why it is blocked")."""
    regressions: RegressionPolicy = RegressionPolicy.none
    """The tightening of `failOnRegression` the run asked for (the action's input), which
    applies to Evals with fixed reps."""
    notes: list[str] = field(default_factory=list)
    """Settings the decision did not read, and why (said where the decision is shown)."""
    error: str = ""
    """The problem that stopped the gate before it could decide (a stopped run's decision:
    `stopped`), as a user reads it; "" when it ran to the end."""
    error_exit: int = 0
    """The exit code that problem maps to (errors.py), unless a bypass honours it."""
    uncovered: str = ""
    """The runs of the base's own gating fixtures a passing gate did not see, because the
    budget cannot hold their Evals' even alone (`allow-incomplete` let it pass): said in the
    headline, with those Evals, as the verdict does not cover them; "" when it saw them all."""

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.error_exit and self.result is not GateResult.bypassed:
            return self.error_exit
        if self.result is GateResult.unavailable:
            return EXIT_EXTERNAL
        if self.result in (GateResult.failed, GateResult.incomplete, GateResult.inconclusive):
            return EXIT_GATE_FAILED
        return EXIT_OK


@dataclass(frozen=True)
class SkippedGating:
    """Of the runs the budget skipped, those of fixtures the base's own definitions gate with
    (`Plan.base_gates`), and of those, the ones of Evals whose own such runs the budget cannot
    hold even alone (`over`)."""

    runs: int = 0
    over_runs: int = 0
    """Of `runs`, those of the Evals `over` names."""
    over: tuple[str, ...] = ()
    """The Evals whose own runs of the base's gating fixtures the budget cannot hold even
    alone, each counted apart from every other."""
    behind_runs: int = 0
    """Of `runs`, those the budget cannot hold even alone as the merge base's agent costs,
    of Evals whose agent the base branch has changed since the pull request branched off
    (`behind`): not excused, as what a branch point's agent costs is the pull request's
    choice; rebasing onto the base branch, or a larger budget, runs them."""
    behind: tuple[str, ...] = ()
    skipped_evals: frozenset[str] = frozenset()
    """Every Eval some of whose head runs the budget skipped (of any fixture): one that ran
    none at all has no score to fail by, and its skipped runs decide (`Verdicts.of`)."""

    @property
    def unexcused(self) -> int:
        """The runs `allow-incomplete` may not let the gate pass without: those of an Eval
        whose own runs fit the budget alone, whatever else the pull request touches."""
        return self.runs - self.over_runs


def decide(
    comparisons: list[EvalComparison],
    bypass: Bypass | None,
    refusal: BypassRefusal | None = None,
    *,
    regressions: RegressionPolicy = RegressionPolicy.none,
    skipped_runs: int = 0,
    allow_incomplete: bool = False,
    not_run: Mapping[str, str] | None = None,
    undefined: str = "",
    budget: SkippedGating = SkippedGating(),
) -> GateDecision:
    """Fail when an affected Eval is below its threshold — or regressed, if the policy says so —
    or could not run at all (`not_run`: Eval -> why, e.g. its agent was removed), unless an
    honoured bypass covers it. Runs the budget skipped make the gate incomplete unless
    `allow_incomplete`; a skipped run of a fixture the base gates with (`budget`) never lets
    it pass, unless the budget cannot hold the base's own runs of its Eval even alone (a pass
    says of which Evals).

    When nothing else fails, no verdict is ever a pass: an Eval whose every run met an
    outage makes the gate `unavailable` (exit 3: rerun it); one whose judge could not be
    calibrated, `incomplete` (`unavailable` for an outage); one whose judge cannot decide,
    `inconclusive` (exit 1, which a bypass honours). An advisory Eval neither passes nor
    fails; with no other, the gate is skipped. `undefined` (the gating definitions hold no
    Eval, and where they were looked for) skips the gate with that reason, never passes it.
    """
    facts = _RunFacts(
        regressions, skipped_runs, allow_incomplete, dict(not_run or {}), undefined, budget
    )
    decision = _decision(comparisons, bypass, refusal, facts)
    decision.regressions = regressions
    decision.notes = blocked.unread(comparisons, regressions)
    return decision


@dataclass(frozen=True)
class _RunFacts:
    """What `decide` weighs beside the comparisons and the bypass."""

    regressions: RegressionPolicy
    skipped_runs: int
    allow_incomplete: bool
    not_run: Mapping[str, str]
    undefined: str
    budget: SkippedGating

    @property
    def blocking(self) -> int:
        """The skipped runs that keep the gate from passing: all of them, unless
        `allow_incomplete`; then those of the base's gating fixtures not excused."""
        if not self.allow_incomplete:
            return self.skipped_runs
        return self.budget.unexcused


def _decision(
    comparisons: list[EvalComparison],
    bypass: Bypass | None,
    refusal: BypassRefusal | None,
    facts: _RunFacts,
) -> GateDecision:
    """`decide`'s decision, before the notes on what it did not read."""
    not_run = facts.not_run
    if not comparisons and not not_run:
        return GateDecision(
            GateResult.skipped, reason=facts.undefined or "no Eval is affected by this change"
        )
    evals = Verdicts.of(comparisons, facts.regressions, facts.budget.skipped_evals)
    if not evals.gating and not not_run and not facts.blocking:
        return GateDecision(
            GateResult.skipped,
            reason=f"nothing gates this change: {_advisory(evals.advisory)}",
        )
    outage = all(c.head.provider_unavailable for c in evals.unscored)
    no_verdict = evals.failing or not_run or evals.inconclusive
    if (evals.down or evals.unscored) and outage and not no_verdict:
        return _unavailable(evals.down + evals.unscored, bypass, refusal)
    decision = GateDecision(  # naming what fails and what was unavailable; its result set below
        GateResult.passed,
        unavailable_evals=[
            c.name for c in evals.down + evals.unscored if c.head.provider_unavailable
        ],
        inconclusive_evals=[c.name for c in evals.inconclusive],
        failing_evals=[c.name for c in evals.failing] + sorted(not_run),
        failing_fixtures={c.name: blocked.failing_fixtures(c) for c in evals.failing},
    )
    undecided = evals.unscored or evals.inconclusive
    if not decision.failing_evals and not facts.blocking and not undecided:
        return _passed(decision, evals, facts)
    if bypass is not None:  # something fails or is unfinished, and a bypass honours it
        decision.result = GateResult.bypassed
        decision.bypass = bypass
        decision.reason = f"failing Evals bypassed by the {bypass.label!r} label"
        return decision
    return _not_passed(decision, evals, refusal, facts)


def _not_passed(
    decision: GateDecision, evals: Verdicts, refusal: BypassRefusal | None, facts: _RunFacts
) -> GateDecision:
    """Something fails or is unfinished, and no bypass: the gate fails (or is incomplete,
    when nothing fails but something could not finish)."""
    skipped = _skipped_text(facts)
    if not decision.failing_evals:
        decision.result = GateResult.inconclusive if evals.inconclusive else GateResult.incomplete
        decision.reason = "; ".join(_inconclusive(evals) + _unfinished(evals, skipped))
        decision.refusal = refusal if evals.inconclusive else None
    else:
        decision.result = GateResult.failed
        decision.refusal = refusal
        decision.why = blocked.why(evals.below, evals.regressed, facts.regressions)
        reasons = _failures(evals, facts) + decision.why
        if skipped:
            reasons.append(skipped)
        decision.reason = "; ".join([*reasons, *_inconclusive(evals), *_unfinished(evals, "")])
    if refused := decision.refusal:
        decision.reason += f"; the {refused.label!r} label was refused: {refused.reason}"
    return decision


def _failures(evals: Verdicts, facts: _RunFacts) -> list[str]:
    """What fails, by the rule that decided: below its threshold (fixed reps), blocked by its
    sequential tests (adaptive reps), a regression under `failOnRegression`."""
    reasons = did_not_run(facts.not_run)
    pairwise = [c.name for c in evals.below if blocked.pairwise_only(c)]
    below = [c for c in evals.below if c.head.sequential is None and c.name not in pairwise]
    sequential = [
        c.name for c in evals.below if c.head.sequential is not None and c.name not in pairwise
    ]
    if pairwise:
        reasons.append(f"{', '.join(pairwise)}: the head is worse by the pairwise judge")
    if below:
        reasons.append(f"{len(below)} affected Eval(s) below threshold")
    if sequential:
        their = "its" if len(sequential) == 1 else "their"
        reasons.append(f"{', '.join(sequential)} blocked by {their} sequential tests")
    if evals.regressed:
        kind = "significant " if facts.regressions is RegressionPolicy.significant else ""
        reasons.append(f"{len(evals.regressed)} Eval(s) with a {kind}regression")
    return reasons


def _inconclusive(evals: Verdicts) -> list[str]:
    """One line per inconclusive Eval: its name, why its judge cannot decide, what to do."""
    return [f"{c.name} is inconclusive: {c.head.inconclusive_reason}" for c in evals.inconclusive]


def _unfinished(evals: Verdicts, skipped: str) -> list[str]:
    """What kept the gate from a whole verdict: Evals unscored, runs left out, outages."""
    said = [_unscored(c) for c in evals.unscored]
    if skipped:
        said.append(skipped)
    if evals.down:
        said.append(f"{len(evals.down)} Eval(s) not run: {UNAVAILABLE}")
    return said


def _skipped_text(facts: _RunFacts) -> str:
    """What the budget left out that keeps the gate from passing ("" for nothing)."""
    blocking = facts.blocking
    if not blocking:
        return ""
    if facts.allow_incomplete:  # only the base's gating fixtures' runs count then
        return _unexcused_text(facts.budget)
    said = f"{counted(blocking, 'run')} {'was' if blocking == 1 else 'were'} skipped by the budget"
    if facts.budget.over:
        said += (
            f" ({facts.budget.over_runs} of fixtures the base branch gates with: the budget "
            f"cannot hold the base's own runs of {', '.join(facts.budget.over)})"
        )
    return said


def _unexcused_text(budget: SkippedGating) -> str:
    """Why allow-incomplete does not excuse the runs of the base's gating fixtures the budget
    skipped: their Evals' own runs fit it alone, or were estimated with an agent the base
    branch has changed since the pull request branched off (`SkippedGating.behind`)."""
    said = []
    if fit := budget.unexcused - budget.behind_runs:
        said.append(
            f"{fit} runs of fixtures the base branch gates with were skipped by the "
            "budget, which holds the base's own runs of their Evals alone: allow-incomplete "
            "does not excuse them (what the pull request adds or touches gets only what the "
            "base's own runs leave)"
        )
    if budget.behind_runs:
        said.append(
            f"{budget.behind_runs} runs of fixtures the base branch gates with in "
            f"{', '.join(budget.behind)} were skipped by the budget, which cannot hold the "
            "merge base's runs of them alone; but the base branch has changed their agent "
            "since the pull request branched off, so allow-incomplete does not excuse them: "
            "rebase onto the base branch, or raise the budget"
        )
    return "; ".join(said)


def _passed(decision: GateDecision, evals: Verdicts, facts: _RunFacts) -> GateDecision:
    """Nothing fails: what met its threshold, and what the budget left unrun (allowed by
    allow-incomplete, or the gate would be incomplete), named apart from what ran."""
    budget = facts.budget
    which = " and ".join(
        word for word, named in (("gates", evals.advisory), ("ran", evals.unrun)) if named
    )
    decision.reason = f"every affected Eval{' that ' + which if which else ''} meets its threshold"
    if evals.unrun:
        names = ", ".join(c.name for c in evals.unrun[:5])
        names += f" and {len(evals.unrun) - 5} more" if len(evals.unrun) > 5 else ""
        decision.reason += (
            f"; {names} ran nothing: the budget skipped every run of "
            f"{'it' if len(evals.unrun) == 1 else 'them'} (allowed by allow-incomplete)"
        )
    if evals.advisory:
        decision.reason += "; " + _advisory(evals.advisory)
    if budget.runs:  # under allow-incomplete, all of them of the Evals `over` names
        decision.uncovered = (
            f"{budget.runs} runs of fixtures the base branch gates with were not run: the "
            f"budget cannot hold the base's own runs of {', '.join(budget.over)} (allowed by "
            "allow-incomplete)"
        )
        decision.reason += f" without them: {decision.uncovered}"
    if facts.skipped_runs > budget.runs:
        decision.reason += f" ({counted(facts.skipped_runs, 'run')} skipped by the budget, allowed)"
    if facts.undefined:
        decision.result = GateResult.skipped
        decision.reason = f"{facts.undefined}; {decision.reason} (they gate once merged)"
    return decision


def _unscored(comparison: EvalComparison) -> str:
    """An Eval whose judge could not score: incomplete, and why."""
    return f"{comparison.name} is incomplete: {comparison.head.incomplete_reason}"


def _unavailable(
    down: list[EvalComparison], bypass: Bypass | None, refusal: BypassRefusal | None
) -> GateDecision:
    names = [c.name for c in down]
    runs = ", ".join(c.name for c in down if not c.head.incomplete_reason)
    said = [f"every run of {runs} failed to reach its model provider after retries"] if runs else []
    said += [_unscored(c) for c in down if c.head.incomplete_reason]
    decision = GateDecision(
        GateResult.unavailable,
        failing_evals=names,
        failing_fixtures={c.name: [f.fixture for f in c.fixtures if f.head] for c in down},
        unavailable_evals=names,
        reason=f"{UNAVAILABLE}: {'; '.join(said)}; rerun once the provider is back",
    )
    if bypass is not None:
        decision.result = GateResult.bypassed
        decision.bypass = bypass
        decision.reason = f"{UNAVAILABLE}; bypassed by the {bypass.label!r} label"
    elif refusal is not None:
        decision.refusal = refusal
        decision.reason += f"; the {refusal.label!r} label was refused: {refusal.reason}"
    return decision


def _advisory(advisory: list[EvalComparison]) -> str:
    """The Evals in which nothing gates (e.g. their judge is below its calibration floor)."""
    if len(advisory) == 1:
        head = advisory[0].head
        return f"{head.eval} is advisory and does not decide the gate ({head.advisory_reason})"
    names = ", ".join(c.name for c in advisory)
    return f"{names} are advisory (nothing in them may gate) and do not decide the gate"


def did_not_run(not_run: Mapping[str, str]) -> list[str]:
    """One line per reason: "agent support-bot was removed; its Evals a, b did not run"."""
    by_reason: dict[str, list[str]] = {}
    for name, why in sorted(not_run.items()):
        by_reason.setdefault(why, []).append(name)
    return [
        f"{why}; its Eval{'s' if len(names) > 1 else ''} {', '.join(names)} did not run"
        for why, names in by_reason.items()
    ]


def audit_record(
    decision: GateDecision,
    *,
    repository: str,
    pr_number: int | None,
    head_sha: str,
    base_ref: str,
    run_url: str,
) -> dict[str, Any]:
    """The structured record of an honoured or refused bypass. `event` stays the first key."""
    labelled: Bypass | BypassRefusal | None = decision.bypass or decision.refusal
    if labelled is None:
        raise ValueError("audit_record needs a decision with a bypass or a refusal")
    record: dict[str, Any] = {
        "event": AUDIT_EVENT,
        "outcome": "honoured" if isinstance(labelled, Bypass) else "refused",
        "actor": labelled.applied_by,
        "permission": labelled.permission,
        "label": labelled.label,
        "label_applied_at": labelled.applied_at,
    }
    if isinstance(labelled, Bypass):
        record.update(scope=labelled.scope, actor_is_author=labelled.by_author, reason="")
    else:
        record["reason"] = labelled.reason
    record.update(
        repository=repository,
        pull_request=pr_number,
        head_sha=head_sha,
        base_ref=base_ref,
        run_url=run_url,
        failing_evals=decision.failing_evals,
        failing_fixtures=decision.failing_fixtures,
        inconclusive_evals=decision.inconclusive_evals,
        timestamp=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    if decision.error:
        record["error"] = decision.error
    return record


def cancelled(done: int, planned: int) -> GateDecision:
    """The decision of a run a signal cancelled, however many runs had finished: never a
    pass."""
    return GateDecision(
        GateResult.incomplete, reason=f"cancelled after {done} of {planned} runs", interrupted=True
    )


def stopped(
    error: str,
    exit_code: int,
    bypass: Bypass | None,
    refusal: BypassRefusal | None,
    *,
    done: int,
    planned: int,
) -> GateDecision:
    """The decision of a run an error stopped (a configuration problem, an outage, a bug):
    never a pass; an honoured bypass lets it through, and its audit record names the error."""
    if bypass is not None:
        return GateDecision(
            GateResult.bypassed,
            bypass=bypass,
            reason=f"the gate stopped on an error, bypassed by the {bypass.label!r} label: {error}",
            error=error,
            error_exit=exit_code,
        )
    ran = f" after {done} of {planned} runs" if planned else ""
    reason = f"stopped by an error{ran or ' before any run'}: {error}"
    if refusal is not None:
        reason += f"; the {refusal.label!r} label was refused: {refusal.reason}"
    return GateDecision(
        GateResult.incomplete, refusal=refusal, reason=reason, error=error, error_exit=exit_code
    )
