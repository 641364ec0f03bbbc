"""Each fixture's base and head runs side by side: the data report.html is drawn from.

One `Pair` per (Eval, fixture): its runs on both sides, its outcome over reps on each side,
how it changed (regressed, fixed, …) and the flags the page filters on. `row` is the compact
record the page lists and searches; `bundle` is the full detail of the pair's runs (traces
included), built one pair at a time as the page is written so that one fixture's traces are in
memory at a time. Held-out fixtures carry their name and result only.

The records hold the runs' text as it is: the page shows them through `html.shown_json`,
which redacts them and names what a reader should not be shown raw.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from evalward.record.summary import (
    FixtureFacts,
    change_in,
    classify,
    facts_of_fixture,
    fixtures_decided,
    score_drop,
    severities,
    weight_of,
    worst_first_key,
)
from evalward.report.divergence import (
    ArgumentDiff,
    Divergence,
    DivergenceKind,
    differing_arguments,
    first_divergence,
    first_divergent_turn,
)
from evalward.rundata.playground_state import PlaygroundRecord
from evalward.rundata.results import (
    AssertionResult,
    EvalResult,
    FixtureOutcome,
    FixtureResult,
    JudgeVerdict,
    Status,
)
from evalward.rundata.spool import TraceSource
from evalward.rundata.trace import Step, Trace
from evalward.scoring.reps import wilson_interval
from evalward.verdict.compare import EvalComparison, FixtureComparison

FLAGS = {
    "regressed": 1,
    "fixed": 2,
    "failing": 4,
    "errored": 8,
    "flaky": 16,
    "new": 32,
    "removed": 64,
    "timed-out": 128,
    "judges-disagree": 256,
    "advisory": 512,
}
"""What the page filters on, as bits of a row's `g`: each the `record.summary.FixtureFacts`
field of its name (`timed-out`: `timed_out`), so each filter's count is the one the comment
shows."""

_RANKED = (
    "regressed",
    "errored",
    "timed-out",
    "failing",
    "flaky",
    "judges-disagree",
    "fixed",
    "new",
    "removed",
    "advisory",
)
"""The flags best rank first: a pair's rank is that of the first it has."""


@dataclass
class Pair:
    eval: str
    fixture: str
    change: str
    """A `compare.Change` value, or "" when the Eval ran on one side only."""
    private: bool
    head: list[FixtureResult] = field(default_factory=list)
    base: list[FixtureResult] = field(default_factory=list)
    head_outcome: FixtureOutcome | None = None
    base_outcome: FixtureOutcome | None = None
    flags: int = 0
    index: int = 0
    facts: FixtureFacts = field(default_factory=FixtureFacts)
    weight: float = 1.0
    """The weight of its severity in its Eval's score: what orders it worst first."""
    drop: float | None = None
    """Its score on base minus its score on head, when it ran on both."""

    def has(self, flag: str) -> bool:
        return bool(self.flags & FLAGS[flag])

    @property
    def rank(self) -> int:
        ranked = (rank for rank, name in enumerate(_RANKED) if self.flags & FLAGS[name])
        return next(ranked, len(_RANKED))


def _status(runs: list[FixtureResult], outcome: FixtureOutcome | None) -> Status | None:
    if outcome is not None:
        return outcome.result
    counted = [r for r in runs if r.counted]
    if not runs:
        return None
    if not counted:
        return Status.skipped
    if all(r.passed for r in counted):
        return Status.passed
    if any(r.status is Status.error for r in counted):
        return Status.error
    if any(r.status is Status.failed for r in counted):
        return Status.failed
    return Status.skipped  # every run that did not pass timed out


def build_pairs(
    comparisons: list[EvalComparison],
    evals: list[EvalResult],
    fixtures: Iterable[FixtureResult],
    private: set[tuple[str, str]],
) -> list[Pair]:
    """Every (Eval, fixture) that ran, worst first: regressed, errored, failing, fixed, new;
    within each, by severity weight, then score drop, then name (`worst_first_key`)."""
    outcomes = {(e.side, e.eval, o.name): o for e in evals for o in e.fixture_results}
    with_base = {c.name for c in comparisons if c.base is not None}
    changes = {(c.name, f.fixture): (c, f) for c in comparisons for f in c.fixtures}
    results = severities(evals)
    pairs: dict[tuple[str, str], Pair] = {}
    for result in fixtures:
        key = (result.eval, result.fixture)
        pair = pairs.get(key)
        if pair is None:
            found = changes.get(key)
            shown = found[1].change.value if found is not None and result.eval in with_base else ""
            pair = pairs[key] = Pair(result.eval, result.fixture, shown, key in private)
        (pair.head if result.side == "head" else pair.base).append(result)
    outcomes_in: dict[int, dict[str, FixtureOutcome]] = {}
    for key, pair in pairs.items():
        pair.head.sort(key=lambda r: r.rep)
        pair.base.sort(key=lambda r: r.rep)
        pair.head_outcome = outcomes.get(("head", pair.eval, pair.fixture))
        pair.base_outcome = outcomes.get(("base", pair.eval, pair.fixture))
        head_result = results.get(pair.eval)
        pair.facts = _facts(pair, changes.get(key), head_result, outcomes_in)
        pair.flags = sum(
            bit for name, bit in FLAGS.items() if getattr(pair.facts, name.replace("-", "_"))
        )
        pair.weight = weight_of(head_result, (pair.head or pair.base)[0].severity)
        pair.drop = score_drop(pair.base_outcome, pair.head_outcome)
    ordered = sorted(
        pairs.values(), key=lambda p: (p.rank, worst_first_key(p.weight, p.drop, p.eval, p.fixture))
    )
    for index, pair in enumerate(ordered):
        pair.index = index
    return ordered


def _facts(
    pair: Pair,
    found: tuple[EvalComparison, FixtureComparison] | None,
    head_result: EvalResult | None,
    outcomes_in: dict[int, dict[str, FixtureOutcome]],
) -> FixtureFacts:
    """The pair's facts: those its comparison keeps (`facts_of_fixture`, which the counts
    classified already) where the pair reads them from the same Eval result, runs, outcome
    and change; else classified here (a fixture no comparison holds, or holds otherwise)."""
    if found is not None:
        comparison, fixture = found
        same_runs = len(fixture.head) == len(pair.head) and all(
            a is b for a, b in zip(fixture.head, pair.head, strict=True)
        )
        if (
            same_runs
            and comparison.head is head_result
            and change_in(comparison, fixture) == pair.change
        ):
            outcomes = outcomes_in.get(id(comparison))
            if outcomes is None:
                outcomes = {o.name: o for o in comparison.head.fixture_results}
                outcomes_in[id(comparison)] = outcomes
            if outcomes.get(pair.fixture) is pair.head_outcome:
                return facts_of_fixture(comparison, fixture, outcomes)
    return classify(
        pair.change,
        pair.head,
        pair.head_outcome,
        gates=found[1].gates if found is not None else True,
        verdict=head_result is None or fixtures_decided(head_result),
        sequential=head_result.sequential if head_result is not None else None,
    )


# --- the list row --------------------------------------------------------------------------


def _side(
    runs: list[FixtureResult], outcome: FixtureOutcome | None, *, private: bool
) -> dict[str, Any] | None:
    status = _status(runs, outcome)
    if status is None:
        return None
    counted = [r for r in runs if r.counted]
    passes = outcome.passes if outcome else sum(r.passed for r in counted)
    reps = outcome.reps if outcome else len(runs)
    scores = [r.score for r in counted]
    score = outcome.score if outcome else (sum(scores) / len(scores) if scores else 0.0)
    word = status.value
    if outcome is not None and (outcome.advisory or outcome.verdict):
        word = "advisory" if outcome.advisory else outcome.verdict
    side: dict[str, Any] = {
        "s": word,
        "sc": round(score, 4),
        "v": runs[0].verdict.value if len(runs) == 1 else "",
        "k": passes,
        "n": reps,
    }
    if reps > 1:
        interval = outcome.pass_rate_interval if outcome else wilson_interval(passes, len(counted))
        side["lo"], side["hi"] = round(interval.low, 3), round(interval.high, 3)
    if not private:
        shown = next((r for r in counted if not r.passed), runs[0])
        side["o"] = shown.output
        message = (outcome.message if outcome is not None else "") or shown.message
        if message:
            side["m"] = message
    return side


def row(pair: Pair, eval_index: int) -> dict[str, Any]:
    """The pair as the page lists it: names, change, flags and each side's result; the
    final output (what the search reads) and message unless the fixture is held out."""
    head = _side(pair.head, pair.head_outcome, private=pair.private)
    base = _side(pair.base, pair.base_outcome, private=pair.private)
    record: dict[str, Any] = {
        "e": eval_index,
        "f": pair.fixture,
        "c": pair.change,
        "g": pair.flags,
        "h": head,
        "b": base,
    }
    if head is not None and base is not None:
        record["d"] = round(head["sc"] - base["sc"], 4)
    record["sv"] = (pair.head or pair.base)[0].severity.value
    if pair.private:
        record["p"] = 1
    return record


# --- the detail of one pair ----------------------------------------------------------------


def bundle(pair: Pair, traces: TraceSource) -> dict[str, Any]:
    """Every run of the pair with its trace, base and head reps paired by rep index, each
    pair's first divergence marked. Traces are read here, one pair's at a time."""
    head = [(r, traces(r)) for r in pair.head]
    base = [(r, traces(r)) for r in pair.base]
    by_rep = {r.rep: t for r, t in base}
    marks: dict[int, dict[str, Any]] = {}
    for result, trace in head:
        before = by_rep.get(result.rep)
        if before is None:
            continue
        mark = marks[result.rep] = {}
        found = first_divergence(before, trace)
        if found is not None:
            mark["dv"], mark["dk"] = found.step, found.kind.value
            if differ := _arguments_at(before, trace, found):
                mark["da"] = {"p": [list(path) for path in differ.paths], "more": differ.more}
        if turn := first_divergent_turn(before, trace):
            mark["dt"] = turn
    document: dict[str, Any] = {
        side: [_run(result, trace) | marks.get(result.rep, {}) for result, trace in runs]
        for side, runs in (("h", head), ("b", base))
    }
    for side, outcome in (("h", pair.head_outcome), ("b", pair.base_outcome)):
        if outcome is not None and outcome.reps > 1:  # one rep: the row says it all
            document[side + "o"] = _outcome(outcome)
    return document


def _arguments_at(base: Trace, head: Trace, found: Divergence) -> ArgumentDiff | None:
    """At a divergence in the steps taken, the arguments of a call of the same tool that
    differ (`da`: the page shows both values of each, from the steps)."""
    number = found.step
    if found.kind is not DivergenceKind.steps or number > min(len(base.steps), len(head.steps)):
        return None
    return differing_arguments(base.steps[number - 1], head.steps[number - 1])


def _outcome(outcome: FixtureOutcome) -> dict[str, Any]:
    record: dict[str, Any] = {
        "k": outcome.passes,
        "n": outcome.reps,
        "err": outcome.errors,
        "skip": outcome.skipped,
        "to": outcome.timed_out,
        "rate": _round(outcome.pass_rate),
        "ci": [_round(outcome.pass_rate_interval.low), _round(outcome.pass_rate_interval.high)],
        "sc": _round(outcome.score),
        "s": outcome.result.value,
        "pk": {str(k): _round(v) for k, v in outcome.pass_hat_k.items()},
    }
    if outcome.score_interval is not None:
        interval = outcome.score_interval
        record["sci"] = [_round(interval.low), _round(interval.high)]
    return record


def _round(value: float) -> float:
    """Four decimals: what the page shows (two) with room, not seventeen digits a number."""
    return round(value, 4)


def _run(result: FixtureResult, trace: Trace) -> dict[str, Any]:
    record: dict[str, Any] = {
        "r": result.rep,
        "s": result.status.value,
        "sc": _round(result.score),
        "v": result.verdict.value,
        "m": result.message,
        "o": result.output,
        "ax": {axis: _round(value) for axis, value in result.axes.items()},
        "a": [_assertion(a) for a in result.assertions],
        "u": [result.usage.input_tokens, result.usage.output_tokens, result.usage.cost_usd],
        "ms": round(result.duration_ms, 1),
        "steps": [_step(s) for s in trace.steps],
    }
    if result.cached:
        record["cached"] = True
    if result.playground is not None:
        record["pg"] = _state_diff(result.playground)
    if result.timed_out:
        record["to"] = True
    if result.file:
        record["at"] = f"{result.file}:{result.line}" if result.line else result.file
    if trace.fallbacks:
        record["fb"] = [
            {"from": f.from_model, "to": f.to_model, "why": f.reason, "step": f.at_step}
            for f in trace.fallbacks
        ]
    if trace.stderr:
        record["stderr"] = trace.stderr
    if trace.model_calls:
        record["calls"] = trace.model_calls
    if trace.end_reason:  # a conversation: its turns and why it ended
        record["conv"] = {"turns": result.turns, "end": trace.end_reason}
    if trace.proxy_calls:
        record["pc"] = [
            {
                "model": c.model,
                "ep": c.endpoint,
                "stream": c.streamed,
                "st": c.status,
                "after": c.after_step,
                "u": [c.usage.input_tokens, c.usage.output_tokens, c.usage.cost_usd]
                if c.usage
                else None,
                "ms": round(c.duration_ms, 1),
                "cached": c.cached,
                "err": c.error or "",
            }
            for c in trace.proxy_calls
        ]
    return record


def _step(step: Step) -> dict[str, Any]:
    """One trace step: short keys, only what is set."""
    usage = step.usage
    fields = {
        "n": step.index,
        "t": step.type.value,
        "c": step.content or None,
        "tool": step.tool or None,
        "args": step.arguments,
        "out": step.output,
        "err": True if step.is_error else None,
        "ms": round(step.duration_ms, 1) or None,
        "u": None if usage is None else [usage.input_tokens, usage.output_tokens, usage.cost_usd],
        "model": step.model or None,
        "src": step.source or None,
        "via": step.via or None,
        "cached": True if step.cached else None,
        "tn": step.turn,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _state_diff(record: PlaygroundRecord) -> dict[str, Any]:
    """What the run changed in a playground, as the bounded line diff from the state before
    the run to the state after it that the run record keeps: {"n": the playground's name,
    "d": [[op, line]...] with op "-", "+", " " or "@", "more": lines left out, "t": whether
    the final state was cut}."""
    shown: dict[str, Any] = {"n": record.name, "d": record.changes}
    if record.changes_left_out:
        shown["more"] = record.changes_left_out
    if record.truncated:
        shown["t"] = True
    return shown


def _assertion(assertion: AssertionResult) -> dict[str, Any]:
    record: dict[str, Any] = {
        "t": assertion.type,
        "s": assertion.status.value,
        "sc": _round(assertion.score),
        "m": assertion.message,
    }
    if assertion.axis:
        record["ax"] = assertion.axis
    if assertion.advisory:
        record["adv"] = True
    if assertion.observed_ms is not None:
        record["ms"] = round(assertion.observed_ms, 1)
    if assertion.judge is not None:
        record["j"] = _judge(assertion.judge)
    if assertion.cross_checks:
        record["xc"] = [
            {
                "model": c.model,
                "s": c.status.value,
                "sc": c.score,
                "d": None if c.delta is None else _round(c.delta),
                "mg": c.margin,
                "dis": c.disagrees,
                "m": c.message,
                "j": None if c.verdict is None else _judge(c.verdict),
            }
            for c in assertion.cross_checks
        ]
    return record


def _judge(verdict: JudgeVerdict) -> dict[str, Any]:
    return {
        "sc": verdict.score,
        "conf": verdict.confidence,
        "sum": verdict.summary,
        "raise": verdict.what_would_raise_score,
        "model": verdict.model,
        "adv": verdict.advisory,
        "advr": verdict.advisory_reason,
        "allu": verdict.all_violations_unsupported,
        "drop": verdict.violations_dropped,
        "kappa": verdict.agreement,
        "v": [
            {
                "rule": v.rule,
                "sev": v.severity,
                "step": v.evidence_step,
                "q": v.quote,
                "ok": v.supported,
                "why": v.unsupported_reason,
            }
            for v in verdict.violations
        ],
    }
