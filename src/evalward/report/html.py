"""report.html: one self-contained page a reviewer triages a pull request with.

The page pairs each fixture's base and head runs. Without JavaScript it is still a report: the
Evals' table with its charts (inline SVG drawn here) and the list of regressed, failing and
errored fixtures are plain HTML. With it, the inline script (assets/report.js) adds filters,
search, a lazily drawn list of every fixture and the paired traces of the one opened.

The data is JSON in `<script type="application/json">` elements, escaped so that no agent
output can close the element: the list's rows in one, then each fixture's runs and traces in
its own, written one fixture at a time as the traces are read back from the spool. The script
renders text with `textContent` only, and a Content-Security-Policy allows nothing but the
page's own script and style (by hash): even markup that got through could fetch nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from evalward import __version__
from evalward.attribution.found import RunAttribution
from evalward.past.trend import Trend
from evalward.record.schema import RunInfo
from evalward.record.summary import RunSummary, count, eval_score_text, facts_of, threshold_of
from evalward.report import charts, pairwise_text
from evalward.report.attribution_text import said_lines, spent_text, unfinished_line
from evalward.report.compiled import TEMPLATES, template_cache
from evalward.report.pairs import FLAGS, Pair, build_pairs, bundle, row
from evalward.report.reps import axes_text, has_run_numbers, percent, rep_rule, reps_text
from evalward.report.story import blocking, counts_phrases, figures_text, reason_of
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.rundata.spool import TraceSource
from evalward.rundata.trace import Trace
from evalward.security import Redact
from evalward.text.cuts import cap_chars
from evalward.text.escaping import reveal_bidi, reveal_marks
from evalward.text.numbers import delta_text
from evalward.verdict.compare import EvalComparison, compare

ASSETS = Path(__file__).parent / "assets"
CARD_REASONS = 5
"""Blocking fixtures the page's card lists, worst first (the list below has them all)."""
STATIC_LIMIT = 1000
"""Fixtures listed in the page's plain-HTML part; the script's list shows every one."""
PROBLEMS = FLAGS["regressed"] | FLAGS["failing"] | FLAGS["errored"]
"""What the plain-HTML list shows."""

_SCRIPT_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def trace_in_result(result: FixtureResult) -> Trace:
    if result.trace is None:
        raise ValueError(f"{result.fixture}: the trace is in a spool; pass its trace_of")
    return result.trace


def shown_json(value: Any, shown: Redact) -> str:
    """`value` as JSON that can stand inside a `<script>` element (`<`, `>` and `&`, so
    `</script>` and `<!--`, and U+2028 and U+2029 written as escapes, which only ever occur
    inside strings), every string in it (keys too) as the page shows text: a lone surrogate
    (half an escaped emoji) made `?` so that UTF-8 can hold it, then `shown` (bidirectional
    controls named, secrets redacted).

    Done once over the JSON text, not string by string (which took 19 ms over 1,000 fixture
    runs' rows and traces): those characters only ever occur inside its strings, and what
    JSON escapes in a secret (a quote, a control) gives a form the redactor knows
    (`security._forms`)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    return shown(text).translate(_SCRIPT_ESCAPES)


@cache
def _asset(name: str) -> str:
    text = (ASSETS / name).read_text(encoding="utf-8")
    if "</" in text or "<!--" in text:
        raise ValueError(f"{name} must not contain '</' or '<!--': it is inlined in the page")
    return text


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def content_security_policy(script: str, style: str) -> str:
    """Nothing may load; only this page's own script and style (by hash) may run."""
    return (
        f"default-src 'none'; script-src {_digest(script)}; style-src {_digest(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


@dataclass(frozen=True)
class EvalRow:
    name: str
    agent: str
    head: str
    """The head score as written against its threshold (`digits.score_text`)."""
    base: str
    delta: float | None
    delta_text: str
    threshold: str
    passing: int
    total: int
    """Its fixtures that gate: `passing`, failing and `not_settled` add up to it."""
    errors: int
    passed: bool
    regressed: bool
    """It passed its own threshold, and its regressions block the gate: "regressed", never
    "pass", as the comment's row says it."""
    bars: Markup
    outcomes: Markup
    trend: Markup
    trend_source: str
    advisory: bool = False
    advisory_reason: str = ""
    no_verdict: str = ""
    """`unavailable` or `incomplete` when the Eval has no verdict, with `no_verdict_reason`."""
    no_verdict_reason: str = ""
    not_settled: int = 0


@dataclass(frozen=True)
class RunNumbers:
    """Seed 001's numbers for an Eval that scores axes: the run score (the mean of its fixture
    scores), its verdict and the per-axis scores, on head and (when it ran) base."""

    name: str
    head: float
    base: float | None
    verdict: str
    axes: str


@dataclass(frozen=True)
class StaticItem:
    """One problem fixture as the no-script list shows it."""

    change: str
    eval: str
    fixture: str
    private: bool
    base: str
    head: str
    message: str


def _no_verdict(head: EvalResult) -> str:
    """The word for an Eval that has no verdict ("" when it has one): never "fail"."""
    if head.passed or head.advisory:
        return ""
    if head.provider_unavailable:
        return "unavailable"
    if head.incomplete_reason:
        return "incomplete"
    return "inconclusive" if head.inconclusive_reason else ""


def _eval_rows(
    comparisons: list[EvalComparison], trends: Mapping[str, Trend], failing: frozenset[str]
) -> list[EvalRow]:
    rows = []
    for comparison in comparisons:
        head, base = comparison.head, comparison.base
        history = trends.get(comparison.name)
        counts = count([comparison])
        # a fixture regressed on an Eval with no verdict neither passes nor fails: the bar
        # draws as regressed only those it fails by
        failing_regressed = sum(f.failing and f.regressed for _, _, f in facts_of(comparison))
        rows.append(
            EvalRow(
                name=comparison.name,
                agent=head.agent,
                head=eval_score_text(head),
                base="—" if base is None else eval_score_text(base),
                delta=comparison.delta,
                delta_text=delta_text(comparison.delta),
                threshold=threshold_of(head),
                passing=counts.passing,
                total=counts.fixtures,
                not_settled=counts.not_settled,
                errors=head.errors,
                passed=head.passed,
                regressed=head.passed and comparison.name in failing,
                bars=Markup(  # noqa: S704 - drawn and escaped by charts
                    charts.score_bars(
                        head=head.score,
                        base=None if base is None or base.not_judged else base.score,
                        threshold=None if head.sequential else head.pass_threshold,
                        passed=head.passed,
                        head_text=eval_score_text(head),
                        base_text=None if base is None else eval_score_text(base),
                        threshold_text=threshold_of(head),
                    )
                ),
                outcomes=Markup(  # noqa: S704
                    charts.outcomes(
                        passing=counts.passing,
                        regressed=failing_regressed,
                        failing=counts.failing - failing_regressed,
                        total=counts.fixtures,
                    )
                ),
                trend=Markup(  # noqa: S704
                    charts.trend(
                        history,
                        current=head.score,
                        passed=head.passed,
                        threshold=head.pass_threshold,
                    )
                )
                if history
                else Markup(""),
                trend_source=history.source if history else "",
                advisory=head.advisory,
                advisory_reason=head.advisory_reason,
                no_verdict=_no_verdict(head),
                no_verdict_reason=head.incomplete_reason or head.inconclusive_reason,
            )
        )
    return rows


def _run_numbers(comparisons: list[EvalComparison]) -> list[RunNumbers]:
    return [
        RunNumbers(
            name=c.name,
            head=c.head.run_score,
            base=c.base.run_score if c.base is not None and has_run_numbers(c.base) else None,
            verdict=c.head.run_verdict.value,
            axes=axes_text(c.head, c.base if has_run_numbers(c.base) else None),
        )
        for c in comparisons
        if has_run_numbers(c.head)
        and c.head.run_score is not None
        and c.head.run_verdict is not None
    ]


def _side_text(side: dict[str, Any] | None, reps: str) -> str:
    if side is None:
        return ""
    text = f"{side['s']} {side['sc']:.2f}"
    if reps:
        return f"{text}, {reps}"
    return text + (f" ({side['k']}/{side['n']} reps)" if side["n"] > 1 else "")


def _static_items(pairs: list[Pair], rules: Mapping[str, float | None]) -> list[StaticItem]:
    """The no-script list's items: the caller picks the pairs (`PROBLEMS`, `STATIC_LIMIT`)."""
    items: list[StaticItem] = []
    for pair in pairs:
        record = row(pair, 0)
        change = next((f for f in ("regressed", "errored", "timed-out") if pair.has(f)), "failing")
        message = "" if pair.private else (record["h"] or record["b"] or {}).get("m", "")
        items.append(
            StaticItem(
                change,
                pair.eval,
                pair.fixture,
                pair.private,
                _side_text(record["b"], reps_text(pair.base_outcome, rules.get(pair.eval))),
                _side_text(record["h"], reps_text(pair.head_outcome, rules.get(pair.eval)))
                + (" · flaky" if pair.has("flaky") else ""),
                cap_chars(message, 300),
            )
        )
    return items


@dataclass(frozen=True)
class Page:
    """What report.html shows: the gate's result and reason, the Evals with their runs (and
    which fixtures are private), and the run's facts: its commits, its link, its summary."""

    result: str
    reason: str
    evals: list[EvalResult]
    fixtures: list[FixtureResult]
    private: set[tuple[str, str]]
    comparisons: list[EvalComparison] | None = None
    """The Evals compared base to head; compared here from `evals` when not given."""
    summary: RunSummary | None = None
    """The run in numbers the comment shows too (its headline and counts lead the page)."""
    run: RunInfo = field(default_factory=RunInfo)
    """The commits, the workflow run's link, how long the run took and what it spent."""
    attribution: RunAttribution | None = None
    """Which hunks of the change caused its regressions, as the comment says it."""
    failing: frozenset[str] = frozenset()
    """The Evals the gate's decision names failing (`GateDecision.failing_evals`): one that
    passed its own threshold among them was blocked by its regressions."""


def html_chunks(
    page: Page,
    *,
    trace_of: TraceSource = trace_in_result,
    trends: Mapping[str, Trend] | None = None,
    redact: Redact = str,
) -> Iterator[str]:
    """The page in pieces as it renders, for writing without holding it whole.

    `redact` is applied to every string of the embedded data (the whole page should also be
    written through the redactor, which covers the HTML parts). Bidirectional controls are
    shown by name in every string, data included: the script writes it as text; a stack of
    combining marks is cut and counted."""
    result, reason, evals, fixtures = page.result, page.reason, page.evals, page.fixtures
    private = page.private

    def shown(text: str) -> str:
        return redact(reveal_marks(reveal_bidi(text)))

    comparisons = compare(evals) if page.comparisons is None else page.comparisons
    pairs = build_pairs(comparisons, evals, fixtures, private)
    eval_names, agents, rules = _eval_index(comparisons, evals, pairs)
    position = {name: index for index, name in enumerate(eval_names)}
    counts = {name: sum(1 for p in pairs if p.flags & bit) for name, bit in FLAGS.items()}
    summary = page.summary or RunSummary(
        headline=reason or result,
        counts=count(comparisons),
        run_time_summed_s=round(sum(f.duration_ms for f in fixtures) / 1000, 3),
    )  # a page rendered alone; a run passes the summary its comment shows
    candidates = blocking(comparisons)
    card = [reason_of(c, private, trace_of) for c in candidates[:CARD_REASONS]]
    rows = _eval_rows(comparisons, trends or {}, page.failing)
    problems = [p for p in pairs if p.flags & PROBLEMS]
    meta = {
        "result": result,
        "flags": FLAGS,
        "evals": [{"name": n, "agent": agents[n], "rule": rules.get(n)} for n in eval_names],
        "total": len(pairs),
    }
    script, style = _asset("report.js"), _asset("report.css")
    template = _environment(shown).get_template("report.html.j2")
    return template.generate(
        **_heading(page, summary),
        attribution=said_lines(page.attribution),
        untraced=page.attribution.untraced if page.attribution is not None else (),
        attribution_spent=spent_text(page.attribution) if page.attribution is not None else "",
        unfinished=(
            unfinished_line(page.attribution)
            if page.attribution is not None and page.attribution.unfinished
            else ""
        ),
        evals=rows,
        any_trend=any(r.trend_source for r in rows),
        card=card,
        card_more=len(candidates) - len(card),
        eval_names=eval_names,
        agents=sorted({a for a in agents.values() if a}),
        counts=counts,
        total=len(pairs),
        static=_static_items(problems[:STATIC_LIMIT], rules),
        run_numbers=_run_numbers(comparisons),
        **pairwise_text.tests_shown(comparisons),
        static_more=max(0, len(problems) - STATIC_LIMIT),
        data=_data(meta, pairs, position, shown),
        traces=_traces(pairs, trace_of, shown),
        script=Markup(script),  # noqa: S704 - our own file, checked by _asset
        style=Markup(style),  # noqa: S704
        csp=content_security_policy(script, style),
    )


def _heading(page: Page, summary: RunSummary) -> dict[str, str]:
    """What the page's heading says: the verdict, the commits, the run's link, the numbers."""
    run = page.run
    safe_url = run.run_url if run.run_url.startswith(("https://", "http://")) else ""
    return {
        "result": page.result,
        "reason": page.reason,
        "head_sha": run.head_sha,
        "base_sha": run.base_sha,
        "run_url": safe_url,
        "artifacts_url": f"{safe_url}#artifacts" if safe_url else "",
        "version": __version__,
        "headline": summary.headline,
        "counts_line": " · ".join(counts_phrases(summary)),
        "figures": figures_text(summary, run),
    }


def _eval_index(
    comparisons: list[EvalComparison], evals: list[EvalResult], pairs: list[Pair]
) -> tuple[list[str], dict[str, str], dict[str, float | None]]:
    """Every Eval the page lists, in the comparisons' order (then any only a pair names),
    with its agent and its rule for repetitions (the head's where both sides have one)."""
    eval_names = [c.name for c in comparisons]
    agents = {e.eval: e.agent for e in evals}
    rules = {e.eval: rep_rule(e) for e in evals if e.side == "head"}
    rules.update({e.eval: e.min_rep_pass_rate for e in evals if e.eval not in rules})
    for pair in pairs:
        agents.setdefault(pair.eval, "")
        if pair.eval not in eval_names:
            eval_names.append(pair.eval)
    return eval_names, agents, rules


def _data(
    meta: dict[str, Any], pairs: list[Pair], position: dict[str, int], shown: Redact
) -> Iterator[Markup]:
    """The page's data (every fixture's row), streamed as one JSON document."""
    yield Markup('{"meta":' + shown_json(meta, shown) + ',"rows":[')  # noqa: S704
    for index, pair in enumerate(pairs):
        text = shown_json(row(pair, position[pair.eval]), shown)
        yield Markup(("," if index else "") + text)  # noqa: S704
    yield Markup("]}")


def _traces(pairs: list[Pair], trace_of: TraceSource, shown: Redact) -> Iterator[Markup]:
    """Each public fixture's traces in a script element of its own, read when it opens."""
    for pair in pairs:
        if pair.private:
            continue
        payload = shown_json(bundle(pair, trace_of), shown)
        yield Markup(  # noqa: S704 - escaped for a script element by shown_json
            f'<script type="application/json" id="t{pair.index}">{payload}</script>\n'
        )


def _environment(shown: Redact) -> jinja2.Environment:
    """The page's template environment: every text it prints goes through `shown`."""

    def finalize(value: object) -> object:
        # Text is redacted before Jinja escapes it: markupsafe writes `"` as `&#34;`, a form
        # the redactor does not look for. Markup is ours (the data is redacted as built).
        if isinstance(value, str) and not isinstance(value, Markup):
            return shown(value)
        return value

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        bytecode_cache=template_cache(),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=finalize,
    )
    env.filters["percent"] = percent
    return env
