"""Plain result records passed between the score, compare, report and gate stages.

They serialise to `results.json` as they are, so field names are part of its schema.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, PrivateAttr, computed_field

from evalward.resources.gate_policy import RegressionPolicy
from evalward.resources.models import Severity
from evalward.rundata.pairwise_record import PairwiseRecord
from evalward.rundata.playground_state import PlaygroundRecord
from evalward.rundata.record_model import RecordModel
from evalward.rundata.sequential_record import SequentialRecord
from evalward.rundata.trace import Trace, Usage
from evalward.text import utf8
from evalward.text.cuts import hidden

OUTPUT_CAP_BYTES = 8 * 1024
"""Seed 003: output captured per fixture is capped at 8 KiB in the status."""


RUN_FAILED = "the run failed: "
"""How a fixture whose run failed begins its message, before the error (a provider's own
words included): what the comment gives as the reason it blocks."""


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


class Violation(RecordModel):
    """One rule the judge says the agent broke, citing a step of the trace as evidence."""

    rule: str
    severity: str = "medium"
    evidence_step: int | None = None
    quote: str = ""
    supported: bool = True
    """False when the cited step does not exist or the quote is not in it."""
    unsupported_reason: str = ""


class JudgeVerdict(RecordModel):
    """Seed 003's verdict shape, plus what evalward checked about it."""

    score: float = Field(ge=0, le=1)
    confidence: float | None = None
    summary: str = ""
    violations: list[Violation] = Field(default_factory=list)
    what_would_raise_score: str = ""
    model: str = ""
    all_violations_unsupported: bool = False
    """A failing verdict none of whose violations survived the evidence check."""
    fails_on_violation: str = ""
    """The first violation whose evidence holds at or above the assertion's
    `failOnViolation`, which fails it whatever its score ("a supported critical violation
    at step 4 (rule)"); "" where none does."""
    violations_dropped: int = 0
    """Violations past the first ten (seed 003's limit), dropped from the stored verdict."""
    advisory: bool = False
    """True when the judge may not gate (e.g. its calibration is below the floor)."""
    advisory_reason: str = ""
    agreement: float | None = None
    """This judge model's Cohen's κ on the Eval's `judge.calibration`, when it has one."""


class CrossCheck(RecordModel):
    """A second judge's verdict on the same judge assertion (`judge.crossCheck`): shown beside
    the primary judge's, never gating."""

    model: str
    status: Status
    """pass / fail at the assertion's `minScore`, or error when this judge gave no verdict."""
    score: float | None = None
    delta: float | None = None
    """This judge's score minus the primary judge's; None when either gave no score."""
    margin: float
    disagrees: bool = False
    """|delta| > margin: the two judges disagree beyond the Eval's `judge.crossCheck.margin`."""
    message: str = ""
    verdict: JudgeVerdict | None = None


class AssertionResult(RecordModel):
    type: str
    turn: int | None = None
    """In a conversation, the one turn the assertion read (None: the whole run)."""
    status: Status
    score: float = Field(ge=0, le=1)
    weight: float
    severity: Severity
    axis: str | None = None
    message: str = ""
    judge: JudgeVerdict | None = None
    advisory: bool = False
    """Reported, but left out of the fixture's score and pass/fail (a judge that cannot decide,
    a `latency` without `maxMs`)."""
    cannot_decide: str = ""
    """Why this judge assertion's judge (or the judge of a member of its group) cannot decide:
    below its calibration floor, or not calibrated as its Eval requires. Its verdict is shown
    as advisory, and its Eval is inconclusive unless other evidence fails it."""
    judge_reply: str = ""
    """The judge's last reply when it gave no usable verdict (capped), to see why."""
    provider_unavailable: bool = False
    """The judge's provider kept failing through its retries: an outage, not a verdict."""
    budget_refused: bool = False
    """The job's budget refused the judge's call: no verdict, and a base run so judged is no
    baseline (`settle.refused_baseline`)."""
    uncalibrated: bool = False
    """A judge assertion the judge did not score because its Eval's `judge.calibration` could
    not be computed (the replay's calls failed): no verdict, and the Eval is incomplete."""
    observed_ms: float | None = None
    """What a `latency` assertion measured (the run's wall time or its slowest step), in ms."""
    cross_checks: list[CrossCheck] = Field(default_factory=list)
    """The cross-check judges' verdicts on a judge assertion (`judge.crossCheck`)."""
    deferred: bool = False
    """A base run's judge assertion not asked (status `skipped`): under adaptive reps with a
    pairwise judge, the base's absolute judge is asked only where the verdict reads the base
    (the head failed the fixture, or the pooled test leans broken); elsewhere the pairwise
    judge settled the fixture (docs/assertions.md, "What a pairwise judge costs")."""

    @property
    def gates(self) -> bool:
        """Whether it counts toward its run's verdict and score: neither advisory nor
        skipped."""
        return not self.advisory and self.status is not Status.skipped

    @property
    def judges_disagree(self) -> bool:
        return any(c.disagrees for c in self.cross_checks)


class FixtureResult(RecordModel):
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
    trace: Trace | None = Field(default_factory=Trace)
    """None once the trace has moved to a `TraceSpool` after scoring; the files that print
    traces read it back through the spool (`Evaluation.trace_of`)."""
    file: str = ""
    line: int = 0
    cached: bool = False
    """True when this result was reused from the result cache instead of being run."""
    provider_unavailable: bool = False
    """An `error` caused only by model providers that kept failing through their retries (the
    agent's or the judge's): an outage, which says nothing about the agent."""
    budget_refused: bool = False
    """The job's budget refused one of the run's agent's model calls (`Trace.budget_refused`):
    a base run so refused is no baseline (`settle.refused_baseline`)."""
    timed_out: bool = False
    """The run reached no terminal event before `execution.timeoutSeconds`: seed 003's Skip
    row. Its status is `skipped`, and unlike a fixture with nothing to evaluate it counts in
    the Eval's score as a fixture that did not pass."""
    judges_disagree: bool = False
    """A cross-check judge's score differs from the primary judge's by more than
    `judge.crossCheck.margin` on a judge assertion of this run."""
    judge_calls: int = 0
    """The model calls this run's scoring made of its judges (each judge assertion's,
    cross-checks and repair retries included; a reply from the response cache is none). A
    result read from the result cache keeps what it made when it ran."""
    _judge_calls_now: int = PrivateAttr(default=0)
    """Of `judge_calls`, those a deferred judge made in this process (`judge_deferred`): in
    what the run spent already, and never written, so a later run that reads the result
    from the cache counts them as the result's own."""
    turns: int = 0
    """In a conversation, how many user turns it held (0: no conversation)."""
    end_reason: str | None = None
    """In a conversation, why it ended: user done, turn limit, handoff, error, timeout."""
    playground: PlaygroundRecord | None = None
    """The run's playground: its state before and after the run, bounded (docs/playgrounds.md)."""

    @property
    def judge_calls_now(self) -> int:
        return self._judge_calls_now

    def judged_now(self, calls: int) -> FixtureResult:
        """This result, `calls` more of its judge's made in this process."""
        judged = self.model_copy(update={"judge_calls": self.judge_calls + calls})
        judged._judge_calls_now = self._judge_calls_now + calls
        return judged

    @property
    def passed(self) -> bool:
        return self.status is Status.passed

    @property
    def outcome(self) -> str:
        """The word for this run's result wherever it is shown: its status, `unavailable`
        for an error that is only an outage (no verdict on the agent), or `judge deferred`
        for a base run scored without its judge, which is asked only where the verdict reads
        it (`not_judged`: its `skipped` is no skip of the run)."""
        if self.provider_unavailable:
            return "unavailable"
        return "judge deferred" if self.not_judged else self.status.value

    @property
    def counted(self) -> bool:
        """In the pass rate: every run but one with nothing evaluated (a timed-out run counts,
        as not passing)."""
        return self.status is not Status.skipped or self.timed_out

    @property
    def not_judged(self) -> bool:
        """A base run whose judge assertions were not asked (`AssertionResult.deferred`): its
        verdict is unknown, so nothing reads its pass or score."""
        return any(a.deferred for a in self.assertions)

    @property
    def advisory_only(self) -> bool:
        """A completed run whose every assertion only reports, as its definition chose:
        graded and shown, nothing gated. A judge that cannot decide is not such a choice."""
        return (
            self.status is Status.skipped
            and not self.timed_out
            and bool(self.assertions)
            and all(a.advisory and not a.cannot_decide for a in self.assertions)
        )


class Interval(RecordModel):
    """A two-sided 95 % interval."""

    low: float
    high: float


class FixtureOutcome(RecordModel):
    """Seed 003's `fixtureResults[]` row: one fixture over all its reps.

    `score` is the mean score of the scored reps; `result` follows the Eval's
    `scoring.minRepPassRate`. `output` and `judge` come from the rep shown (the first one that
    did not pass, else the first).
    """

    name: str
    score: float = Field(ge=0, le=1)
    result: Status
    severity: Severity
    message: str = ""
    output: str = ""
    judge: JudgeVerdict | None = None
    reps: int
    passes: int
    errors: int = 0
    skipped: int = 0
    pass_rate: float = Field(ge=0, le=1)
    pass_rate_interval: Interval
    """Wilson score interval for the pass rate."""
    score_interval: Interval | None = None
    """Normal-approximation interval for the mean score; None with fewer than 2 scored reps."""
    pass_hat_k: dict[int, float] = Field(default_factory=dict)
    """pass^k for k = 1..reps: the estimated chance that k fresh reps all pass."""
    gates: bool = True
    """False for a fixture the pull request adds to a base Eval: shown, gating once merged."""
    timed_out: int = 0
    """Reps that reached no terminal event before `execution.timeoutSeconds` (counted as not
    passing). A fixture whose only reps that did not pass timed out is `skipped`."""
    judge_disagreements: int = 0
    """Reps in which a cross-check judge disagreed with the primary beyond the margin."""
    advisory: bool = False
    """Every assertion of every rep only reports (a `latency` without `maxMs`): graded and
    shown, nothing gated. `result` is `skipped`. (A judge that cannot decide makes its Eval
    inconclusive instead.)"""
    shown_rep: int = 0
    """The rep whose `message`, `output` and `judge` are shown: the first that did not pass."""
    axes: dict[str, float] = Field(default_factory=dict)
    """Seed 001's per-axis scores, each the mean over the scored reps that have the axis."""
    verdict: str = ""
    """With adaptive reps, its sequential test's verdict (`SequentialRecord`); `result` is then
    pass when it settled working, fail (or error) when it settled broken, and skipped when it
    did not settle. "" with fixed reps, where `result` follows `minRepPassRate`."""

    @property
    def passed(self) -> bool:
        return self.result is Status.passed

    @computed_field  # type: ignore[prop-decorator]
    @property
    def flaky(self) -> bool:
        """Its counted reps disagree: some passed and some did not."""
        return 0 < self.passes < self.reps - self.skipped

    @property
    def counted(self) -> bool:
        """In the Eval's score: every fixture but one with nothing evaluated."""
        return self.result is not Status.skipped or self.timed_out > 0


class EvalResult(RecordModel):
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
    skipped: int = 0
    """Fixtures whose result is `skipped`: nothing evaluated (e.g. only judge assertions and no
    judge model; left out of the score), or timed out (`timed_out`; in the score, not passing)."""
    timed_out: int = 0
    """Skipped fixtures whose runs reached no terminal event before `execution.timeoutSeconds`."""
    pending: list[str] = Field(default_factory=list)
    """Fixtures that ran but are not in the score: the pull request adds them, and under
    `gate-config: base` they gate once merged."""
    fixture_results: list[FixtureOutcome] = Field(default_factory=list)
    judge_agreement: float | None = None
    """The Eval's judge model's Cohen's κ on `judge.calibration`, when it has one."""
    fixtures: list[FixtureResult] = Field(default_factory=list)
    file: str = ""
    line: int = 0
    provider_unavailable: bool = False
    """Every run that was scored failed only because its model providers kept failing through
    their retries: the score is no verdict on the agent."""
    advisory: bool = False
    """Nothing in the Eval gates: every fixture's every assertion only reports, as the
    definitions chose (a `latency` without `maxMs`). Reported, never passing or failing the
    gate; `passed` is false and the score 0. A judge that cannot decide never makes an Eval
    advisory: it makes it inconclusive (`inconclusive_reason`)."""
    advisory_reason: str = ""
    incomplete_reason: str = ""
    """Why the Eval has no verdict although its runs ran: its judge could not be calibrated
    (the replay's calls failed: errors, timeouts, an outage), so its judge assertions were not
    scored. Such an Eval never passes; `provider_unavailable` says whether it was an outage."""
    inconclusive_reason: str = ""
    """Why a judge that cannot decide (uncalibrated, below its floors, swayed in this run)
    leaves an Eval that no other evidence fails without a verdict, and what to do: it never
    passes. The absolute judge's and the pairwise judge's alike."""
    min_rep_pass_rate: float = 0.6
    """`scoring.minRepPassRate`: the share of a fixture's reps that must pass."""
    pass_hat_k: float | None = None
    """The share of the decided fixtures whose every rep passed (pass^k for k = the reps)."""
    min_pass_hat_k: float | None = None
    """`scoring.minPassHatK`: the pass^k the Eval must reach to pass (None: not gated)."""
    severity_weights: dict[Severity, float] = Field(default_factory=dict)
    """Each severity's weight in the score (`scoring.severityWeights` over the defaults): what
    orders fixtures worst first in the reports."""
    run_score: float | None = None
    """Seed 001's benchmark run score: the mean of the scored fixtures' scores (each the mean
    over its reps); None when no fixture was scored."""
    run_verdict: Verdict | None = None
    """Seed 001's verdict on `run_score`: pass (>= 0.9), partial (> 0), fail."""
    axes: dict[str, float] = Field(default_factory=dict)
    """Seed 001's per-axis scores over the run: per axis, the mean of the scored fixtures'
    scores on it."""
    fail_on_regression: RegressionPolicy = RegressionPolicy.none
    """`scoring.gate.failOnRegression` of the definition that gates."""
    sequential: SequentialRecord | None = None
    """With adaptive reps: what the sequential tests settled; `passed` is their verdict."""
    pairwise: PairwiseRecord | None = None
    """With a pairwise judge: each fixture's head runs judged against its base runs."""
    base_not_needed: list[str] = Field(default_factory=list)
    """With fixed reps and a decision that reads the head only (`failOnRegression: none`):
    the fixtures whose every head rep passed, so the base did not run them (compared as
    still passing)."""
    not_judged: int = 0
    """On the base side, under adaptive reps with a pairwise judge: its runs whose judge
    assertions were not asked, the pairwise judge having settled their fixtures. Its score is
    then over the judged runs only, so the reports show "not judged" and no delta."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def last_score(self) -> str:
        """Seed 003's `lastScore`: formatted to 2 dp."""
        return f"{self.score:.2f}"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def last_result(self) -> str:
        """Seed 003's `lastResult`: Pass / Fail (Advisory: nothing gated; Unavailable: its
        providers were down; Incomplete: its judge could not score; Inconclusive: its judge
        cannot decide)."""
        return self._outcome("Pass", "Fail")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def phase(self) -> str:
        """Seed 003's `phase` once a run is over: Passed / Failed (or Advisory, Unavailable,
        Incomplete: no verdict)."""
        return self._outcome("Passed", "Failed")

    def _outcome(self, passed: str, failed: str) -> str:
        if self.advisory:
            return "Advisory"
        if self.passed:
            return passed
        if self.provider_unavailable:
            return "Unavailable"
        if self.incomplete_reason:
            return "Incomplete"
        if self.inconclusive_reason:
            return "Inconclusive"
        return failed


class CalibrationPhase(StrEnum):
    calibrated = "Calibrated"
    stale = "Stale"
    failed = "Failed"


class ExampleResult(RecordModel):
    """One calibration example as one judge model scored it, or why it did not."""

    index: int
    """1-based, in the order of the JudgeCalibration's `examples`."""
    human_score: float
    score: float | None = None
    """The judge's score; None when it gave no verdict."""
    reason: str = ""
    """Why there is no verdict: the judge's reply was not JSON, it timed out, HTTP 503, …"""
    unavailable: bool = False
    """The judge's provider kept failing through its retries (an outage)."""


class ModelAgreement(RecordModel):
    """One judge model replayed over a JudgeCalibration's examples."""

    model: str
    kappa: float | None
    """Cohen's κ, or None when undefined (no example scored, or one class only)."""
    scored: int
    errors: int
    agreed: int
    note: str = ""
    unavailable: int = 0
    """Of the `errors`, those where the judge's provider was unavailable (an outage)."""
    examples: list[ExampleResult] = Field(default_factory=list)


class CalibrationResult(RecordModel):
    """Seed 003's JudgeCalibration status after a replay."""

    name: str
    phase: CalibrationPhase
    agreement: str | None
    """The best model's κ to 2 dp (`status.agreement`)."""
    agreement_by_model: dict[str, float | None]
    judges_evaluated: list[str]
    models: list[ModelAgreement] = Field(default_factory=list)

    def kappa_of(self, model: str) -> float | None:
        return self.agreement_by_model.get(model)

    @property
    def outage(self) -> bool:
        """No example could be scored, and every one failed because its judge's provider was
        unavailable: nothing was learnt about the judges."""
        return (
            bool(self.models)
            and not any(m.scored for m in self.models)
            and all(m.errors and m.unavailable == m.errors for m in self.models)
        )


def cap_output(text: str, limit: int = OUTPUT_CAP_BYTES) -> str:
    """An agent's answer as a fixture's result keeps it: its first `limit` bytes of UTF-8,
    a lone surrogate (which no entry point should have let through) written as U+FFFD."""
    text = utf8.writable(text)
    if len(text.encode("utf-8")) <= limit:
        return text
    raw = hidden(text).encode("utf-8")
    if len(raw) <= limit:
        return raw.decode("utf-8")
    return raw[:limit].decode("utf-8", errors="ignore") + "\n… [truncated]"
