"""The run record's models: results.json (`Results`) and a shard part (`ShardPart`).

results.json is documented field by field in docs/results-schema.md; its JSON Schema,
docs/results.schema.json, is generated from `Results` (scripts/gen_results_schema.py). Bump
`RESULTS_SCHEMA_VERSION` on any change that is not a pure addition, and the shard part's
version on any change at all (parts of two versions never merge).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalward.record.summary import RunSummary
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.rundata.spending import Spent, cost_text, spent_text, split_text
from evalward.rundata.spool import RunKey as RunKey
from evalward.rundata.trace import Trace
from evalward.verdict.gate import GateResult

RESULTS_SCHEMA_VERSION = 1
"""`Results.schema_version`."""
SHARD_KIND = "evalward-shard"
SHARD_SCHEMA_VERSION = 5
"""`ShardPart.schema_version`."""


class _Record(BaseModel):
    # Each model's validator is built when it is first used, not at import: a run that
    # writes no results.json uses two of them, and building them all took 5 ms of every
    # start-up.
    model_config = ConfigDict(populate_by_name=True, frozen=True, defer_build=True)


class SpentInfo(_Record):
    """What the run's model calls used, as the providers answered them: the agents', the
    judges' (retries included) and the calibration replays'. A reply from the response cache
    is no call."""

    model_calls: int = 0
    tokens: int = 0
    """Input and output tokens together, judge calls included."""
    cost_usd: float | None = None
    """None when a call's model has no price: the cost is then unknown, not zero."""
    priced_cost_usd: float = 0.0
    """What the calls with a price cost."""
    unpriced_calls: int = 0
    calls_by_purpose: dict[str, int] = Field(default_factory=dict)
    """Calls per purpose: `agent`, `user` (simulated users), `judge`, `pairwise` (the pairwise
    judge's, its calibration's included)."""
    cost_by_purpose: dict[str, float] = Field(default_factory=dict)
    """What the priced calls of each purpose cost."""

    @classmethod
    def of(cls, spent: Spent) -> SpentInfo:
        """The providers' tally, as it stands (`Spent` keeps counting)."""
        return cls(
            model_calls=spent.calls,
            tokens=spent.tokens,
            cost_usd=None if spent.unpriced else round(spent.cost_usd, 8),
            priced_cost_usd=round(spent.cost_usd, 8),
            unpriced_calls=spent.unpriced,
            calls_by_purpose=dict(spent.calls_by),
            cost_by_purpose={k: round(v, 8) for k, v in spent.cost_by.items()},
        )

    def spent(self) -> Spent:
        """Back as the providers' tally, to be added to another."""
        return Spent(
            calls=self.model_calls,
            tokens=self.tokens,
            cost_usd=self.priced_cost_usd,
            unpriced=self.unpriced_calls,
            calls_by=dict(self.calls_by_purpose),
            cost_by=dict(self.cost_by_purpose),
        )

    def text(self) -> str:
        """ "21 model calls, 35,255 tokens incl. judge, $0.0291", as every surface says it."""
        cost = cost_text(self.cost_usd, self.unpriced_calls, self.priced_cost_usd)
        split = split_text(self.calls_by_purpose, self.cost_by_purpose)
        return spent_text(self.model_calls, self.tokens, cost, split)


class RunInfo(_Record):
    """Where and why the run happened (empty for a local command-line run), how far it went,
    how long it took and what its model calls spent."""

    event: str = ""
    repository: str = ""
    pull_request: int | None = None
    head_sha: str = ""
    base_sha: str = ""
    run_url: str = ""
    runs_planned: int = 0
    runs_done: int = 0
    cancelled: bool = False
    wall_time_s: float | None = None
    """From the run's start to its end (the results in, before the reports): what a
    reviewer waited. None when not measured."""
    spent: SpentInfo | None = None
    """None when not measured."""
    attribution_spent: SpentInfo | None = None
    """What attribution's runs spent after the decision, apart from `spent` (None where it did
    not run)."""


class HonouredBypass(_Record):
    """The bypass label let a failing gate pass: who applied it, when, to which head."""

    outcome: Literal["honoured"] = "honoured"
    label: str
    applied_by: str | None
    applied_at: str | None = None
    permission: str | None = None
    scope: str = "sha"
    head_sha: str = ""
    by_author: bool = False


class RefusedBypass(_Record):
    """The bypass label was on the pull request and did not count, and why."""

    outcome: Literal["refused"] = "refused"
    label: str
    applied_by: str | None
    applied_at: str | None
    permission: str | None
    reason: str


class SkippedRun(_Record):
    """A run the budget left out."""

    eval: str
    fixture: str
    side: str
    rep: int


class EvalEntry(EvalResult):
    """An Eval's result on one side; its fixture runs are in `Results.fixtures`, its
    per-fixture outcomes in `fixture_results`."""

    fixtures: list[FixtureResult] = Field(default_factory=list, exclude=True)


class FixtureEntry(FixtureResult):
    """One fixture run, with its whole trace."""

    trace: Trace | None = Field(default_factory=Trace)
    visibility: Literal["public", "private"] = "public"
    """`private` for a fixture held out of public reports (its Eval's `visibility`)."""


class HunkRecord(_Record):
    """One hunk of the change: where it is in the head (`first`..`last`, 1-based; 0 where the
    head has no line), for a field of the agent's YAML, which field (for the prompt's move
    between it and a file, `spec.system`), and for a hunk of a file git pairs as renamed
    (the rename's own among them), the file's name in the base. A name is the pull
    request's bytes: each is written as a message names a file (`printable`: quoted as git
    quotes one where a byte is not UTF-8 or a character does not show)."""

    path: str
    index: int
    kind: str
    field: str
    first: int
    last: int
    renamed_from: str = Field(default="", alias="renamedFrom")


class ScoreRecord(_Record):
    """A fixture's runs on one variant: `passed` of `runs`; with `pairs`, of its pairs with
    the base's runs, those the base did not win (`passed`) of those judged (`runs`)."""

    fixture: str
    passed: int
    runs: int
    pairs: bool = False


class TrialRecord(_Record):
    """One variant the search ran: the hunks taken back from the head (`reverted`) or the
    only ones applied to the base (`applied`), by their place in `hunks`."""

    way: str
    hunks: list[int]
    regressed: bool
    not_built: str = Field(alias="notBuilt")
    scores: list[ScoreRecord]
    gate_runs: bool = Field(default=False, alias="gateRuns")
    """The variant is the head itself, read from the gate's own runs: none ran."""


class RegressionRecord(_Record):
    """One Eval's regression and what the search proved of it: `culprit` (places in `hunks`)
    when `result` is `attributed`, else `reason`."""

    eval: str
    agent: str
    fixtures: list[str]
    tried_on: list[str] = Field(default_factory=list, alias="triedOn")
    """The fixtures every variant ran: all of `fixtures`, or the one cheapest to run where
    the budget could not cover them all (a cause is then proven for it alone)."""
    in_pairs: bool = Field(default=False, alias="inPairs")
    """`fixtures` pass on the head, and the Eval's pairwise judge finds them worse there:
    each variant's runs of them were judged in pairs with the base's."""
    pooled: bool = False
    """`fixtures` drove the Eval's pooled sequential test broken (with `inPairs`, its pooled
    preference test worse), none of them alone: each variant ran them all and was read by
    that pooled test."""
    result: Literal["attributed", "not attributable"]
    culprit: list[int]
    taken_back_with: list[int] = Field(default_factory=list, alias="takenBackWith")
    """Places in `hunks` taken back beside `culprit` in the trial that proves it so (each
    shown alone, and all together, to change nothing: the variant loads only with them)."""
    applied_with: list[int] = Field(default_factory=list, alias="appliedWith")
    """Likewise, applied to the base beside `culprit` in the trial that proves it so."""
    reason: str
    hunks: list[HunkRecord]
    trials: list[TrialRecord]


class UntracedRecord(_Record):
    """An Eval attribution did not trace, and why."""

    eval: str
    reason: str


class AttributionRecord(_Record):
    """Which hunks of the change caused the run's regressions (versioned on its own)."""

    version: Literal[1] = 1
    mode: str
    budget_model_calls: int = Field(alias="budgetModelCalls")
    spent_model_calls: int = Field(alias="spentModelCalls")
    regressions: list[RegressionRecord]
    untraced: list[UntracedRecord] = Field(default_factory=list)
    """Each Eval whose drop is its pooled test's alone: no one fixture regressed for a
    variant to run, so it is not traced."""
    unfinished: str = ""
    """Why attribution stopped on an error before it finished ("" where it finished):
    `regressions` holds what it found before. `mode` is "" where it stopped before reading
    it."""


class ResultsHeader(_Record):
    """results.json but its two long arrays: the decision, where the run happened, why it
    ran what it ran."""

    schema_version: Literal[1] = Field(default=1, alias="schemaVersion")
    evalward: str
    """The version of evalward that wrote it."""
    result: GateResult
    reason: str
    unavailable_evals: list[str] = Field(default_factory=list, alias="unavailableEvals")
    run: RunInfo = Field(default_factory=RunInfo)
    bypass: Annotated[HonouredBypass | RefusedBypass, Field(discriminator="outcome")] | None = None
    changed_agents: dict[str, list[str]] = Field(default_factory=dict, alias="changedAgents")
    affected_evals: dict[str, list[str]] = Field(default_factory=dict, alias="affectedEvals")
    gate_changes: list[str] = Field(default_factory=list, alias="gateChanges")
    not_run: dict[str, str] = Field(default_factory=dict, alias="notRun")
    pending: dict[str, list[str]] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    cache_hits: int = Field(default=0, alias="cacheHits")
    skipped_runs: list[SkippedRun] = Field(default_factory=list, alias="skippedRuns")
    summary: RunSummary | None = None
    """The verdict in plain words and the counts every report shows (`record.summary`)."""
    attribution: AttributionRecord | None = None
    """Which hunks of the change caused its regressions; absent where attribution did not
    run."""


class Results(ResultsHeader):
    """results.json: the versioned, machine-readable record of a run, with full detail
    (fixtures held out of public reports included)."""

    evals: list[EvalEntry] = Field(default_factory=list)
    fixtures: list[FixtureEntry] = Field(default_factory=list)


class ShardIndex(_Record):
    index: int = Field(ge=1)
    """1-based."""
    count: int = Field(ge=1)


class ShardSource(_Record):
    """The commits the plan was made from: the head, and the base ("" for none); and the
    workflow run whose shard jobs made it (its repository and run id, "" outside GitHub
    Actions): a sealed part of an earlier run of the same commits is never merged."""

    head: str
    base: str = ""
    repository: str = ""
    run: str = ""


class PlanRecord(_Record):
    """The whole plan a part was split from, as `merge` compares it with its own."""

    evals: list[str]
    runs: list[RunKey]
    skipped_base: dict[str, str] = Field(alias="skippedBase")
    not_run: dict[str, str] = Field(alias="notRun")
    pending: dict[str, list[str]]
    dropped: dict[str, str]


class Seal(_Record):
    alg: str
    mac: str


class ShardPart(_Record):
    """What one shard job leaves for `merge`: its results, the plan it ran (whole), a digest
    of the definitions it ran them with, and its seal (`evalward.flows.shard_signature`)."""

    kind: Literal["evalward-shard"] = "evalward-shard"
    schema_version: Literal[5] = Field(default=5, alias="schemaVersion")
    shard: ShardIndex
    source: ShardSource
    plan: PlanRecord
    definitions: str
    notes: list[str] = Field(default_factory=list)
    skipped: list[RunKey] = Field(default_factory=list)
    base_over_evals: list[str] = Field(default_factory=list, alias="baseOverEvals")
    """The Evals whose runs of the fixtures the base gates with the part's budget cannot hold
    even alone, each apart (`Evaluation.base_over`): only their runs it skipped are excused."""
    fixtures: list[FixtureResult] = Field(default_factory=list)
    spent: SpentInfo | None = None
    """What the part's model calls used: the merge adds the parts' up."""
    seal: Seal | None = None


def results_json_schema() -> dict[str, Any]:
    """results.json's JSON Schema, as docs/results.schema.json holds it."""
    schema = Results.model_json_schema(by_alias=True, mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "evalward results.json"
    return schema
