"""report.html's parts without a browser: the script-safe JSON, pairing and flags, the first
divergence, the charts, the trend's sources, redaction of the embedded data and the page's
Content-Security-Policy. tests/report/test_html_report_browser.py drives the page itself."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalward.past.history import record
from evalward.past.trend import MAX_POINTS, Trend, TrendPoint, record_commit, trends
from evalward.record.schema import RunInfo
from evalward.record.summary import count
from evalward.report import charts
from evalward.report.divergence import DivergenceKind, first_divergence
from evalward.report.files import write_chunks
from evalward.report.html import STATIC_LIMIT, Page, html_chunks, shown_json
from evalward.report.pairs import FLAGS, build_pairs, bundle, row
from evalward.resources.models import Severity
from evalward.rundata.results import (
    AssertionResult,
    EvalResult,
    FixtureOutcome,
    FixtureResult,
    Interval,
    JudgeVerdict,
    Status,
    Verdict,
    Violation,
)
from evalward.rundata.trace import StepType, Trace
from evalward.security import Redactor
from evalward.text.escaping import reveal_bidi
from evalward.verdict.compare import compare

pytestmark = pytest.mark.unit

NASTY = (
    '</script><script>alert(1)</script><!-- \u2028\u2029 & "quoted" <img src=x onerror=alert(2)>'
)


def trace(*tools: tuple[str, dict[str, Any]], final: str = "done") -> Trace:
    t = Trace()
    t.add(StepType.input, content="Where is my order?")
    for name, arguments in tools:
        t.add(StepType.tool_call, tool=name, arguments=arguments)
        t.add(StepType.tool_result, tool=name, output="shipped", source="mock")
    t.add(StepType.final, content=final)
    return t


def run(
    fixture: str,
    side: str,
    status: Status,
    *,
    rep: int = 0,
    eval_name: str = "support",
    t: Trace | None = None,
    output: str = "",
) -> FixtureResult:
    score = 1.0 if status is Status.passed else 0.0
    return FixtureResult(
        eval=eval_name,
        fixture=fixture,
        side=side,
        rep=rep,
        status=status,
        score=score,
        verdict=Verdict.of(score),
        severity=Severity.medium,
        output=output or f"{side} output of {fixture}",
        message="" if status is Status.passed else f"{fixture} failed on {side}",
        trace=t or trace(),
    )


def outcome(runs: list[FixtureResult]) -> FixtureOutcome:
    passes = sum(r.passed for r in runs)
    return FixtureOutcome(
        name=runs[0].fixture,
        score=passes / len(runs),
        result=Status.passed if passes * 5 >= 3 * len(runs) else Status.failed,
        severity=Severity.medium,
        reps=len(runs),
        passes=passes,
        pass_rate=passes / len(runs),
        pass_rate_interval=Interval(low=0.2, high=0.9),
    )


def eval_result(side: str, runs: list[FixtureResult], name: str = "support") -> EvalResult:
    by_name: dict[str, list[FixtureResult]] = {}
    for r in runs:
        by_name.setdefault(r.fixture, []).append(r)
    outcomes = [outcome(v) for v in by_name.values()]
    passing = sum(o.passed for o in outcomes)
    return EvalResult(
        eval=name,
        agent="bot",
        side=side,
        score=passing / len(outcomes),
        passed=passing == len(outcomes),
        pass_threshold=0.8,
        passing=passing,
        failing=len(outcomes) - passing,
        errors=0,
        total=len(outcomes),
        fixture_results=outcomes,
        fixtures=runs,
    )


def suite() -> tuple[list[EvalResult], list[FixtureResult]]:
    P, F, E = Status.passed, Status.failed, Status.error
    head = [
        run("steady", "head", P),
        run("regressed", "head", F),
        run("fixed", "head", P),
        run("broken", "head", E),
        run("added", "head", P),
        *(run("flaky", "head", s, rep=i) for i, s in enumerate((P, F, P))),
    ]
    base = [
        run("steady", "base", P),
        run("regressed", "base", P),
        run("fixed", "base", F),
        run("broken", "base", P),
        run("dropped", "base", P),
        *(run("flaky", "base", P, rep=i) for i in range(3)),
    ]
    return [eval_result("head", head), eval_result("base", base)], head + base


def test_the_pages_json_cannot_end_the_script_element_and_decodes_to_the_same_value() -> None:
    value = {"text": NASTY, NASTY: [NASTY]}
    encoded = shown_json(value, lambda text: text)
    assert not re.search(r"[<>&\u2028\u2029]", encoded)
    assert json.loads(encoded) == value


def test_pairs_flag_every_change_and_put_the_worst_first() -> None:
    evals, fixtures = suite()
    pairs = build_pairs(compare(evals), evals, fixtures, set())
    flags = {p.fixture: {name for name, bit in FLAGS.items() if p.flags & bit} for p in pairs}
    assert flags == {
        "regressed": {"regressed", "failing"},
        "broken": {"regressed", "failing", "errored"},
        "flaky": {"flaky"},
        "fixed": {"fixed"},
        "added": {"new"},
        "dropped": {"removed"},
        "steady": set(),
    }
    assert [p.fixture for p in pairs] == [
        "broken",
        "regressed",
        "flaky",
        "fixed",
        "added",
        "dropped",
        "steady",
    ]
    assert [p.index for p in pairs] == list(range(7))
    flaky = row(next(p for p in pairs if p.fixture == "flaky"), 0)
    assert flaky["h"]["k"] == 2 and flaky["h"]["n"] == 3
    assert (flaky["h"]["lo"], flaky["h"]["hi"]) == (0.2, 0.9)
    assert flaky["d"] == pytest.approx(-1 / 3, abs=1e-3)


def test_an_eval_without_a_base_marks_nothing_new() -> None:
    head = [run("a", "head", Status.passed), run("b", "head", Status.failed)]
    evals = [eval_result("head", head)]
    pairs = build_pairs(compare(evals), evals, head, set())
    assert {p.fixture: p.flags for p in pairs} == {"b": FLAGS["failing"], "a": 0}
    assert all(p.change == "" for p in pairs)


def test_held_out_rows_carry_name_and_result_only() -> None:
    evals, fixtures = suite()
    pairs = build_pairs(compare(evals), evals, fixtures, {("support", "regressed")})
    held = row(next(p for p in pairs if p.fixture == "regressed"), 0)
    assert held["p"] == 1 and held["h"]["s"] == "fail" and held["f"] == "regressed"
    assert "o" not in held["h"] and "m" not in held["h"]
    page = "".join(
        html_chunks(
            Page(
                result="fail",
                reason="r",
                evals=evals,
                fixtures=fixtures,
                private={("support", "regressed")},
            )
        )
    )
    assert "output of regressed" not in page and "regressed failed on" not in page
    index = next(p.index for p in pairs if p.fixture == "regressed")
    assert f'id="t{index}"' not in page  # no trace element at all


def test_first_divergence_finds_the_first_differing_step() -> None:
    base = trace(("lookup", {"id": "1"}))
    assert first_divergence(base, trace(("lookup", {"id": "1"}))) is None
    other_args = first_divergence(base, trace(("lookup", {"id": "2"})))
    assert other_args is not None and (other_args.step, other_args.kind) == (2, "steps")
    longer = first_divergence(base, trace(("lookup", {"id": "1"}), ("email", {})))
    assert longer is not None and longer.step == 4  # base's final meets head's second call
    shorter = trace(("lookup", {"id": "1"}))
    shorter.steps.pop()
    cut = first_divergence(base, shorter)
    assert cut is not None and (cut.step, cut.kind) == (4, DivergenceKind.steps)
    reworded = first_divergence(base, trace(("lookup", {"id": "1"}), final="all done"))
    assert reworded is not None and (reworded.step, reworded.kind) == (4, DivergenceKind.text)


def test_a_bundle_pairs_reps_marks_divergence_and_redacts_every_string() -> None:
    secret = "sk-live-<&>\u2028-0123456789"
    head_trace = trace(("lookup", {secret: secret}), final=f"the key is {secret}")
    judge = JudgeVerdict(
        score=0.1,
        violations=[Violation(rule="leak", evidence_step=2, quote="lookup")],
    )
    head = run("leak", "head", Status.failed, t=head_trace, output=secret).model_copy(
        update={
            "assertions": [
                AssertionResult(
                    type="judge",
                    status=Status.failed,
                    score=0.1,
                    weight=1,
                    severity=Severity.high,
                    judge=judge,
                )
            ]
        }
    )
    base = run("leak", "base", Status.passed, t=trace(("lookup", {"id": "1"})))
    evals = [eval_result("head", [head]), eval_result("base", [base])]
    (pair,) = build_pairs(compare(evals), evals, [head, base], set())
    redact = Redactor([secret])
    document = json.loads(shown_json(bundle(pair, lambda r: r.trace or Trace()), redact))
    (head_run,) = document["h"]
    assert head_run["dv"] == 2 and head_run["dk"] == "steps" and document["b"][0]["dv"] == 2
    assert head_run["a"][0]["j"]["v"][0] == {
        "rule": "leak",
        "sev": "medium",
        "step": 2,
        "q": "lookup",
        "ok": True,
        "why": "",
    }
    assert head_run["steps"][1] == {
        "n": 2,
        "t": "tool_call",
        "tool": "lookup",
        "args": {"***": "***"},
    }
    assert head_run["steps"][2]["src"] == "mock"
    assert secret not in json.dumps(document, ensure_ascii=False)
    assert secret not in shown_json(row(pair, 0), redact)


def _payloads(page: str) -> list[Any]:
    found = re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', page, re.S)
    return [json.loads(text) for text in found]


def test_the_written_page_holds_no_secret_in_any_form(tmp_path: Path) -> None:
    secret = 'dpl_tok&<en>"42\u2028x'
    t = trace(("lookup", {"q": secret}), final=f"here: {secret}")
    head = run("echo", "head", Status.failed, t=t, output=f"here: {secret}")
    base = run("echo", "base", Status.passed)
    evals = [eval_result("head", [head]), eval_result("base", [base])]
    page = tmp_path / "report.html"
    redact = Redactor([secret])
    chunks = html_chunks(
        Page(
            result="fail",
            reason=f"reason {secret}",
            evals=evals,
            fixtures=[head, base],
            private=set(),
        ),
        redact=redact,
    )
    write_chunks(page, chunks, redact)
    text = page.read_text(encoding="utf-8")
    payloads = _payloads(text)
    assert len(payloads) == 2 and "here: ***" in json.dumps(payloads)
    assert secret not in json.dumps(payloads, ensure_ascii=False)
    core = "dpl_tok"
    assert core not in text


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_policy_allows_only_the_pages_own_script_and_style_and_no_fetch() -> None:
    evals, fixtures = suite()
    page = "".join(
        html_chunks(
            Page(
                result="fail",
                reason="r",
                evals=evals,
                fixtures=fixtures,
                private=set(),
                run=RunInfo(run_url="https://github.example/acme/bot/actions/runs/7"),
            )
        )
    )
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    csp = html.unescape(policy.group(1))
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.S)
    (style,) = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert "default-src 'none'" in csp and "unsafe" not in csp
    assert f"script-src {_sha256(script)};" in csp and f"style-src {_sha256(style)};" in csp
    assert "innerHTML" not in script and "eval(" not in script
    # the only addresses are the run's links; nothing is loaded from anywhere
    assert set(re.findall(r"https?://[^\"'<> ]+", page)) == {
        "http://www.w3.org/2000/svg",
        "https://github.example/acme/bot/actions/runs/7",
        "https://github.example/acme/bot/actions/runs/7#artifacts",
    }
    assert not re.search(r"<(img|link|iframe|object|embed)\b|\ssrc=", page)
    assert 'style="' not in page  # an inline style attribute would need 'unsafe-inline'


def test_a_link_that_is_not_http_is_dropped() -> None:
    evals, fixtures = suite()
    page = "".join(
        html_chunks(
            Page(
                result="fail",
                reason="r",
                evals=evals,
                fixtures=fixtures,
                private=set(),
                run=RunInfo(run_url="javascript:alert(1)"),
            )
        )
    )
    assert "javascript:" not in page and "artifacts" not in page


def test_without_script_the_summary_and_the_problem_list_are_plain_html() -> None:
    failing = [run(f"case-{i:05d}", "head", Status.failed) for i in range(STATIC_LIMIT + 5)]
    evals = [eval_result("head", failing)]
    page = "".join(
        html_chunks(Page(result="fail", reason="r", evals=evals, fixtures=failing, private=set()))
    )
    static = page[page.index('<section id="static"') : page.index('<section id="app"')]
    assert static.count("<li>") == STATIC_LIMIT
    assert "… and 5 more" in static and "case-00000 failed on head" in static
    assert '<table class="evals">' in page and "<svg" in page


def test_charts_draw_the_scores_and_escape_their_labels() -> None:
    bars = charts.score_bars(head=0.5, base=0.75, threshold=0.9, passed=False)
    assert 'class="base" x="0" y="3" width="112.5"' in bars
    assert 'class="head" x="0" y="15" width="75.0"' in bars and charts.RED in bars
    assert 'x1="135.0"' in bars and "base 0.75, head 0.50, threshold 0.90" in bars
    assert "no base" in charts.score_bars(head=1, base=None, threshold=1, passed=True)
    # a failing score is written with the digits that keep it below its threshold
    close = charts.score_bars(
        head=0.8983,
        base=None,
        threshold=0.9,
        passed=False,
        head_text="0.898",
        threshold_text="0.90",
    )
    assert "head 0.898, threshold 0.90" in close
    drawn = charts.outcomes(passing=5, regressed=2, failing=1, total=10)
    assert "10 fixtures on head: 5 passing, 2 regressed, 1 failing, 2 other" in drawn
    assert 'class="regressed" x="75.0" y="2" width="30.0"' in drawn
    assert "no fixture gates" in charts.outcomes(passing=0, regressed=0, failing=0, total=0)
    history = Trend(
        "commits on main", [TrendPoint(0.8, True, "t", "<b>abcdef123"), TrendPoint(0.4, False, "t")]
    )
    drawn = charts.trend(history, current=0.6, passed=False, threshold=0.5)
    assert drawn.count("<circle") == 3 and "<b>" not in drawn and "&lt;b&gt;abcd" in drawn
    assert "score over 2 commits on main: 0.80, 0.40; this run 0.60" in drawn


def test_the_cache_keeps_scores_by_commit_and_the_history_is_the_fallback(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    head, _ = suite()
    for index in range(MAX_POINTS + 2):
        record_commit(cache, head, commit=f"{index:040d}", branch="main")
    record_commit(cache, head, commit=f"{5:040d}", branch="main")  # a rerun replaces its point
    found = trends(["support", "other", "../../etc/passwd"], cache_dir=cache, root=tmp_path)
    assert set(found) == {"support"}
    points = found["support"].points
    assert found["support"].source == "commits on main" and len(points) == MAX_POINTS
    assert points[-1].commit == f"{5:040d}" and points[-1].label == "0000000"
    assert [p.commit for p in points].count(f"{5:040d}") == 1
    # an advisory Eval's score (nothing in it gated) is no point of its trend
    advisory = [r.model_copy(update={"advisory": True}) for r in head]
    record_commit(cache, advisory, commit="f" * 40, branch="main")
    assert "f" * 40 not in [
        p.commit for p in trends(["support"], cache_dir=cache)["support"].points
    ]
    # no score log: the local history, labelled by commit when it has one
    record(tmp_path, head, commit="c0ffee1234")
    from_history = trends(["support"], root=tmp_path)["support"]
    assert from_history.source == "local runs"
    assert [p.label for p in from_history.points] == ["c0ffee1"]
    assert from_history.points[0].score == head[0].score
    # what is not a score is not a point, and a broken file is no trend
    (cache / "scores" / "support.json").write_text(
        json.dumps({"points": [{"score": "1"}, {"score": 7}, {"score": True}, {"score": 0.5}]})
    )
    assert [p.score for p in trends(["support"], cache_dir=cache)["support"].points] == [0.5]
    (cache / "scores" / "support.json").write_text("{not json")
    assert trends(["support"], cache_dir=cache) == {}


def test_the_page_draws_a_trend_only_from_earlier_runs() -> None:
    evals, fixtures = suite()

    def page(history: dict[str, Trend]) -> str:
        return "".join(
            html_chunks(
                Page(result="fail", reason="r", evals=evals, fixtures=fixtures, private=set()),
                trends=history,
            )
        )

    # no Eval has earlier runs: no trend column at all, rather than one empty cell per Eval
    assert 'class="chart trend"' not in page({}) and "<th>Trend</th>" not in page({})
    points = [TrendPoint(0.9, True, "2026-11-01T10:00:00", "a" * 40)]
    drawn = page({"support": Trend("commits on main", points)})
    assert 'class="chart trend"' in drawn and "commits on main" in drawn


def test_rows_of_one_kind_and_severity_are_in_natural_order() -> None:
    names = ["case-10", "case-2", "case-1", "case-9"]
    head = [run(name, "head", Status.failed) for name in names]
    evals = [eval_result("head", head)]
    pairs = build_pairs(compare(evals), evals, head, set())
    assert [p.fixture for p in pairs] == ["case-1", "case-2", "case-9", "case-10"]


def _cleaned_one_by_one(value: Any, redact: Redactor) -> Any:
    """What the page's data must hold: every string, keys too, redacted and made encodable."""
    if isinstance(value, str):
        return redact(value.encode("utf-8", "replace").decode("utf-8"))
    if isinstance(value, dict):
        return {
            _cleaned_one_by_one(str(k), redact): _cleaned_one_by_one(v, redact)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_cleaned_one_by_one(v, redact) for v in value]
    return value


def test_the_pages_data_is_cleaned_as_each_of_its_strings_alone() -> None:
    """The page's data is cleaned once over its JSON text: what that gives is what each string
    (keys too) cleaned alone gives — secrets redacted in every form, even where JSON escapes
    them, lone surrogates made encodable, string enums and keys that are not strings — and
    bidirectional controls are named, and nothing in a string can end the script element."""
    secret = 'sk-live-"0123456789\t'
    redact = Redactor([secret])
    data = {
        "s": Status.passed,
        "k": secret,
        secret: [secret, f"key={secret}", ("tuple", 1, 2.5, True, None)],
        1: "\ud83d half an emoji",
        "long": "x" * 100 + secret,
        "severity": {"nested": [Severity.high, secret]},
    }
    text = shown_json(data, redact)
    assert json.loads(text) == _cleaned_one_by_one(data, redact)
    assert "0123456789" not in text and "\ud83d" not in text

    shown = shown_json({"o": "</script><b>\u202eevil"}, lambda t: redact(reveal_bidi(t)))
    assert "</script>" not in shown and "<b>" not in shown and "\u202e" not in shown
    assert json.loads(shown) == {"o": "</script><b><U+202E>evil"}


def test_a_pair_reads_its_comparisons_facts_only_from_the_same_runs() -> None:
    """The pairs take each fixture's facts from its comparison, which the counts classified
    already, only while they are read from the same runs, outcome and Eval: a page given other
    runs for a fixture (here `broken` failing on head, not erroring) classifies those."""
    evals, fixtures = suite()
    comparisons = compare(evals)
    count(comparisons)  # as a run does first: every fixture's facts kept in its comparison
    kept = build_pairs(comparisons, evals, fixtures, set())
    fresh = build_pairs(compare(evals), evals, fixtures, set())
    assert {p.fixture: p.facts for p in kept} == {p.fixture: p.facts for p in fresh}
    assert next(p for p in kept if p.fixture == "broken").facts.errored

    failed = run("broken", "head", Status.failed)
    others = [failed if (f.fixture, f.side) == ("broken", "head") else f for f in fixtures]
    pairs = build_pairs(comparisons, evals, others, set())
    broken = next(p for p in pairs if p.fixture == "broken")
    assert broken.head == [failed]
    assert broken.facts.regressed and broken.facts.failing and not broken.facts.errored
    assert not broken.flags & FLAGS["errored"]


def test_a_bundle_names_the_arguments_two_calls_of_one_tool_differ_in() -> None:
    """The page data says which arguments differ (nested keys by their path, one side's
    missing key too); the values stay in the steps, redacted there whole."""
    secret = "sk-live-0123456789-args"
    before = {"order_id": "12345", "expand": {"items": True, "notes": "a"}, "same": [1, 2]}
    after = {"order_id": "12354", "expand": {"items": True, "notes": "b"}, "same": [1, 2]}
    after["token"] = secret
    head = run("typo", "head", Status.failed, t=trace(("lookup", after)))
    base = run("typo", "base", Status.passed, t=trace(("lookup", before)))
    evals = [eval_result("head", [head]), eval_result("base", [base])]
    (pair,) = build_pairs(compare(evals), evals, [head, base], set())

    text = shown_json(bundle(pair, lambda r: r.trace or Trace()), Redactor([secret]))

    document = json.loads(text)
    (head_run,), (base_run,) = document["h"], document["b"]
    assert head_run["dv"] == 2 and head_run["dk"] == "steps"
    paths = [["expand", "notes"], ["order_id"], ["token"]]
    assert head_run["da"] == base_run["da"] == {"p": paths, "more": 0}
    assert head_run["steps"][1]["args"]["token"] == "***"
    assert base_run["steps"][1]["args"]["order_id"] == "12345"
    assert secret not in text


def test_differing_arguments_are_named_up_to_a_bound_and_only_for_one_tool() -> None:
    many_before = {f"k{i:02}": i for i in range(30)}
    many_after = {f"k{i:02}": -i for i in range(30)}
    deep_before = {"a": {"b": {"c": {"d": {"e": 1}}}}}
    deep_after = {"a": {"b": {"c": {"d": {"e": 2}}}}}
    cases = {
        "many": (("lookup", many_before), ("lookup", many_after)),
        "deep": (("lookup", deep_before), ("lookup", deep_after)),
        "an object and a list": (("lookup", {"q": {"a": 1}}), ("lookup", {"q": ["a", 1]})),
        "a key too long to name": (("lookup", {"q": {"a": 1}}), ("lookup", {"q": {"k" * 201: 1}})),
        "another tool": (("lookup", {"q": 1}), ("email", {"q": 2})),
    }
    found = {}
    for name, (before, after) in cases.items():
        base = run("x", "base", Status.passed, t=trace(before))
        head = run("x", "head", Status.failed, t=trace(after))
        evals = [eval_result("head", [head]), eval_result("base", [base])]
        (pair,) = build_pairs(compare(evals), evals, [head, base], set())
        found[name] = bundle(pair, lambda r: r.trace or Trace())["h"][0].get("da")

    assert found["many"] == {"p": [[f"k{i:02}"] for i in range(1, 9)], "more": 21}
    assert found["deep"] == {"p": [["a", "b", "c", "d"]], "more": 0}  # below: a whole value
    assert found["an object and a list"] == {"p": [["q"]], "more": 0}
    assert found["a key too long to name"] == {"p": [["q"]], "more": 0}  # the page cuts it
    assert found["another tool"] is None  # "base lookup → head email" says it all
