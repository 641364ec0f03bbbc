"""The one writer of the run record: results.json, streamed, and a shard part.

results.json is written in pieces — each Eval's outcomes and each fixture run (its trace
read back from the spool) one at a time, one a line — so that 20,000 of them never exist
whole in memory (bench/p4_footprint.py); each piece is its model's own JSON
(`record.schema`), so what is written is what the reader takes back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict
from typing import Any

from evalward import __version__
from evalward.attribution.found import RunAttribution
from evalward.attribution.hunks import in_diff_order
from evalward.attribution.search import Attributed
from evalward.errors import printable
from evalward.record.evaluation import Evaluation
from evalward.record.schema import (
    AttributionRecord,
    HonouredBypass,
    HunkRecord,
    RefusedBypass,
    RegressionRecord,
    ResultsHeader,
    RunInfo,
    ScoreRecord,
    ShardPart,
    SkippedRun,
    TrialRecord,
    UntracedRecord,
)
from evalward.record.summary import RunSummary, summarize
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.verdict.gate import GateDecision


def run_summary(evaluation: Evaluation, decision: GateDecision) -> RunSummary:
    """The run in numbers (`record.summary`): computed once, then handed to every report."""
    return summarize(evaluation.comparisons, decision, evaluation.fixtures)


def results_header(
    evaluation: Evaluation,
    decision: GateDecision,
    run: RunInfo | None = None,
    summary: RunSummary | None = None,
) -> ResultsHeader:
    """Everything of results.json but its Evals and fixture runs."""
    bypass: HonouredBypass | RefusedBypass | None = None
    if decision.bypass is not None:
        bypass = HonouredBypass(**asdict(decision.bypass))
    elif decision.refusal is not None:
        bypass = RefusedBypass(**asdict(decision.refusal))
    return ResultsHeader(
        evalward=__version__,
        result=decision.result,
        reason=decision.reason,
        unavailable_evals=decision.unavailable_evals,
        run=run or RunInfo(),
        bypass=bypass,
        changed_agents=evaluation.changes.changed_agents,
        affected_evals=evaluation.changes.affected_evals,
        gate_changes=evaluation.changes.gate_changes,
        not_run=evaluation.plan.not_run,
        pending=evaluation.plan.pending,
        notes=evaluation.notes + decision.notes,
        cache_hits=evaluation.cache_hits,
        skipped_runs=[
            SkippedRun(eval=r.eval, fixture=r.fixture, side=r.side.value, rep=r.rep)
            for r in evaluation.skipped
        ],
        summary=summary or run_summary(evaluation, decision),
        attribution=attribution_record(evaluation.attribution),
    )


def attribution_record(found: RunAttribution | None) -> AttributionRecord | None:
    """results.json's `attribution`: each regression's hunks, culprit and trials. A hunk's
    file name is the pull request's bytes: written as `printable` shows a name, as the
    comment shows it, never as a lone surrogate results.json could not hold as UTF-8."""
    if found is None:
        return None
    regressions = []
    for each in found.found:
        attribution, regression = each.attribution, each.regression
        culprit = attribution.culprit if isinstance(attribution, Attributed) else frozenset()
        back_with, applied_with = (
            (attribution.beside(attribution.removed), attribution.beside(attribution.reproduced))
            if isinstance(attribution, Attributed)
            else (frozenset(), frozenset())
        )
        tried = {h for t in attribution.attempts for h in t.hunks}
        hunks = in_diff_order(set(each.hunks) | tried | culprit)
        place = {hunk: position for position, hunk in enumerate(hunks)}
        regressions.append(
            RegressionRecord(
                eval=regression.eval,
                agent=regression.agent,
                fixtures=list(regression.fixtures),
                tried_on=list(each.ran_on),
                in_pairs=regression.in_pairs,
                pooled=regression.pooled,
                result="attributed" if isinstance(attribution, Attributed) else "not attributable",
                culprit=sorted(place[h] for h in culprit),
                taken_back_with=sorted(place[h] for h in back_with),
                applied_with=sorted(place[h] for h in applied_with),
                reason="" if isinstance(attribution, Attributed) else attribution.reason,
                hunks=[
                    HunkRecord(
                        path=printable(h.path),
                        index=h.index,
                        kind=h.kind,
                        field=h.field_name,
                        first=h.first,
                        last=h.last,
                        renamed_from=printable(h.renamed_from),
                    )
                    for h in hunks
                ],
                trials=[
                    TrialRecord(
                        way=t.way,
                        hunks=sorted(place[h] for h in t.hunks),
                        regressed=t.trial.regressed,
                        not_built=t.trial.not_built,
                        gate_runs=t.trial.gate_runs,
                        scores=[
                            ScoreRecord(
                                fixture=s.fixture, passed=s.passed, runs=s.runs, pairs=s.pairs
                            )
                            for s in t.trial.scores
                        ],
                    )
                    for t in attribution.attempts
                ],
            )
        )
    return AttributionRecord(
        mode=found.mode,
        budget_model_calls=found.budget_calls,
        spent_model_calls=found.spent_calls,
        regressions=regressions,
        untraced=[UntracedRecord(eval=name, reason=why) for name, why in found.untraced],
        unfinished=found.unfinished,
    )


def results_chunks(
    evaluation: Evaluation,
    decision: GateDecision,
    run: RunInfo | None = None,
    summary: RunSummary | None = None,
) -> Iterator[str]:
    """results.json in pieces (see the module's docstring)."""

    def outcomes(result: EvalResult) -> Iterator[list[str]]:
        return ([json.dumps(o.model_dump(mode="json"))] for o in result.fixture_results)

    evals = (
        _object_chunks(
            e.model_dump(mode="json", exclude={"fixtures", "fixture_results"}),
            {"fixture_results": outcomes(e)},
            pad="    ",
            indent=None,
        )
        for e in evaluation.evals
    )
    fixtures = ([fixture_entry_json(evaluation, f)] for f in evaluation.fixtures)
    header = results_header(evaluation, decision, run, summary).model_dump(
        mode="json", by_alias=True
    )
    yield from _object_chunks(header, {"evals": evals, "fixtures": fixtures}, pad="", indent=2)
    yield "\n"


def results_document(
    evaluation: Evaluation,
    decision: GateDecision,
    run: RunInfo | None = None,
    summary: RunSummary | None = None,
) -> dict[str, Any]:
    """results.json's content, parsed (`evalward run --json`)."""
    chunks = results_chunks(evaluation, decision, run, summary)
    document: dict[str, Any] = json.loads("".join(chunks))
    return document


def fixture_entry_json(evaluation: Evaluation, result: FixtureResult) -> str:
    """A fixture run as results.json holds it (`schema.FixtureEntry`): whether it is held out
    of public reports, and its trace as the spool holds it, JSON text spliced in last (read
    back, decoded and encoded again, it cost more than the rest of the entry)."""
    private = (result.eval, result.fixture) in evaluation.private
    entry = result.model_dump(mode="json", exclude={"trace"})
    entry["visibility"] = "private" if private else "public"
    return f'{json.dumps(entry)[:-1]}, "trace": {evaluation.traces.trace_json(result)}}}'


def part_document(evaluation: Evaluation, part: ShardPart) -> dict[str, Any]:
    """A shard part's content, unsealed: `part` without its runs (its notes are the
    evaluation's), then its fixture runs, with their traces (read back from the spool)
    streamed in as results.json's are."""
    head = part.model_copy(update={"notes": evaluation.notes}).model_dump(
        mode="json", by_alias=True, exclude={"fixtures", "seal", "skipped"}
    )
    fixtures = [
        {**f.model_dump(mode="json"), "trace": json.loads(evaluation.traces.trace_json(f))}
        for f in evaluation.fixtures
    ]
    return {**head, "skipped": [list(key) for key in part.skipped], "fixtures": fixtures}


def _object_chunks(
    document: Mapping[str, Any],
    arrays: dict[str, Iterable[Iterable[str]]],
    *,
    pad: str,
    indent: int | None,
) -> Iterator[str]:
    """`document` as JSON text, followed by the arrays named in `arrays` as its last keys, their
    items (each given in pieces) written one a line as they come."""
    text = json.dumps({**document, **dict.fromkeys(arrays)}, indent=indent)
    for key in arrays:
        # Keys are the document's own, and a quote inside a string is escaped: the first
        # `"key": null` is the placeholder.
        before, text = text.split(f'"{key}": null', 1)
        yield before + f'"{key}": ['
        empty = True
        for item in arrays[key]:
            yield ("\n" if empty else ",\n") + pad + "    "
            yield from item
            empty = False
        yield "]" if empty else "\n" + pad + "  ]"
    yield text
