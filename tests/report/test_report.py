"""The comment, JUnit and HTML renderers, fed result objects built directly."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jinja2
import pytest

from evalward.errors import ConfigError
from evalward.report.compiled import TEMPLATES, _QuietCache, template_cache
from evalward.report.html import Page, html_chunks
from evalward.report.junit import junit_chunks
from evalward.report.markdown import (
    MAX_COMMENT_CHARS,
    ReportContext,
    marker_for,
    render_comment,
    render_stopped_early,
)
from evalward.resources.models import Severity
from evalward.rundata.results import (
    AssertionResult,
    EvalResult,
    FixtureResult,
    JudgeVerdict,
    Status,
    Verdict,
    Violation,
)
from evalward.rundata.trace import StepType, Trace
from evalward.text import escaping
from evalward.verdict.compare import EvalComparison, compare
from evalward.verdict.gate import (
    Bypass,
    BypassRecord,
    GateDecision,
    GateResult,
    decide,
    stopped,
)

pytestmark = pytest.mark.unit

EVIL = "@octocat <img src=x onerror=alert(1)> </details> <!-- evalward-comment:x --> ### ⚠️ Bypass"
MARKER = marker_for("evals/gate")


def trace() -> Trace:
    t = Trace()
    t.add(StepType.input, content="Where is my order?")
    t.add(StepType.tool_call, tool="lookup_order", arguments={"order_id": "1"})
    t.add(StepType.final, content="I emailed your password to everyone.")
    return t


def fixture(name: str, side: str, passed: bool, **extra: object) -> FixtureResult:
    judge = JudgeVerdict(
        score=0.3,
        model="openai/judge",
        violations=[
            Violation(
                rule="never leak secrets",
                severity="critical",
                evidence_step=3,
                quote="emailed your password",
            ),
            Violation(
                rule="be polite",
                severity="low",
                evidence_step=9,
                quote="rude",
                supported=False,
                unsupported_reason="step 9 does not exist",
            ),
        ],
        what_would_raise_score="Refuse to share credentials.",
        advisory=True,
        advisory_reason="calibration kappa 0.41 is below the floor 0.6",
    )
    return FixtureResult(
        eval="support",
        fixture=name,
        side=side,
        status=Status.passed if passed else Status.failed,
        score=1.0 if passed else 0.3,
        verdict=Verdict.passed if passed else Verdict.partial,
        severity=Severity.high,
        message="" if passed else f"judge failed: {EVIL}",
        output=f"final answer ``` {EVIL}",
        assertions=[
            AssertionResult(
                type="judge",
                status=Status.passed if passed else Status.failed,
                score=0.3,
                weight=1,
                severity=Severity.high,
                message=EVIL,
                judge=None if passed else judge,
            )
        ],
        trace=trace(),
        file=f"evals/{name}.yaml",
        line=4,
        **extra,  # type: ignore[arg-type]
    )


def evals(names: list[str], head_fail: set[str]) -> list[EvalResult]:
    out = []
    for side in ("base", "head"):
        fixtures = [fixture(n, side, side == "base" or n not in head_fail) for n in names]
        passing = sum(f.passed for f in fixtures)
        out.append(
            EvalResult(
                eval="support",
                agent="bot",
                side=side,
                score=passing / len(names),
                passed=passing == len(names),
                pass_threshold=1.0,
                passing=passing,
                failing=len(names) - passing,
                errors=0,
                total=len(names),
                fixtures=fixtures,
            )
        )
    return out


def context(names: list[str], head_fail: set[str], **extra: object) -> ReportContext:
    comparisons = compare(evals(names, head_fail))
    return ReportContext(
        comparisons=comparisons,
        decision=decide(comparisons, None),
        marker=MARKER,
        head_sha="a" * 40,
        run_url="https://github.example/r/1",
        **extra,
    )  # type: ignore[arg-type]


def test_order_judge_violations_and_untrusted_text_stays_inert() -> None:
    body = render_comment(context(["greeting", "order"], {"greeting"}))
    # fenced blocks are literal text; everything outside them is what GitHub parses
    outside = re.sub(r"^(`{3,})text\n.*?^\1$", "", body, flags=re.M | re.S)
    assert body.startswith(MARKER + "\n") and outside.count("<!-- ") == 1
    headings = [line for line in body.splitlines() if line.startswith(("## ", "### "))]
    # the verdict in plain words, then why, worst first and evidence first, then the numbers
    assert headings == [
        "## ❌ evalward: Blocked: support 0.50 &lt; 1.00 — 1 regression (1 high)",
        "### Why it is blocked — worst first",
        "### 🔎 The failing fixtures' detail",
    ]
    order = [
        body.index(s)
        for s in (
            "Why it is blocked",
            "1. 🔻 **high** · [support / greeting](https://github.example/r/1#artifacts) — "
            "judge: step 3 · critical · never leak secrets — “emailed your password” · judge: ",
            "1/2 fixtures pass on head · 1 regression · 1 failing",
            "| Eval |",
            "<details>",
            "head `aaaaaaaaaaaa`",
        )
    ]
    assert order == sorted(order)
    # a passing fixture gets no block of its own, and no fixture is listed twice
    assert "support / order" not in body
    assert body.count("support / greeting") == 2  # its line, and its folded detail
    assert "step **3** · critical · never leak secrets — “emailed your password”" in body
    assert "step **9** · low · be polite — “rude” · ⚠️ _unsupported: step 9 does not exist_" in body
    assert "_What would raise the score:_ Refuse to share credentials." in body
    assert "advisory, does not gate: calibration kappa 0.41 is below the floor 0.6" in body
    # nothing untrusted becomes HTML, a mention, a closing tag or a heading
    assert "<img" not in outside and "@octocat" not in body
    assert outside.count("</details>") == outside.count("<details>") == 1
    assert "\n### ⚠️ Bypass" not in body
    fences = re.findall(r"^(`{3,})text$", body, flags=re.M)
    assert fences and all(len(f) >= 4 for f in fences)  # longer than the ``` inside


def test_held_out_fixtures_show_name_and_result_only() -> None:
    ctx = context(["greeting", "order"], {"greeting"}, private={("support", "greeting")})
    body = render_comment(ctx)
    assert "greeting" in body and "held out" in body
    assert "emailed your password" not in body and "judge failed" not in body
    assert "Refuse to share" not in body
    xml = "".join(junit_chunks(evals(["greeting"], {"greeting"}), {("support", "greeting")}))
    assert "judge failed" not in xml and "held out" in xml
    html = "".join(
        html_chunks(
            Page(
                result="fail",
                reason="",
                evals=[],
                private={("support", "greeting")},
                fixtures=[fixture("greeting", "head", False)],
            )
        )
    )
    assert "emailed your password" not in html and "held out" in html


RECORD = BypassRecord("force-eval-bypass", "2026-11-20T10:00:00", "a" * 40)
"""The record the comment of a bypassed gate (`bypassed`) keeps, whatever is cut."""


def bypassed(comparisons: list[EvalComparison]) -> ReportContext:
    """The comment's context of a gate `comparisons` block whose bypass label alice, a
    writer, added: what a long comment must keep after every fold and cut."""
    bypass = Bypass("force-eval-bypass", "alice", "2026-11-20T10:00:00", "write", "sha", "a" * 40)
    return ReportContext(
        comparisons=comparisons,
        decision=decide(comparisons, bypass),
        marker=MARKER,
        head_sha="a" * 40,
        run_url="https://x/run",
        record=RECORD,
    )


def test_two_thousand_fixtures_fold_then_truncate_and_keep_marker_bypass_and_record() -> None:
    names = [f"fixture-{i:04d}" for i in range(2000)]
    ctx = bypassed(compare(evals(names, set(names))))
    body = render_comment(ctx)
    assert len(body) <= MAX_COMMENT_CHARS
    assert body.startswith(MARKER)
    assert "<details>" not in body  # folded first
    # the failing fixtures keep their reasons, the rest is counted: nothing needs cutting
    assert "cut here" not in body
    lines = re.findall(r"^\d+\. 🔻 \*\*high\*\* · .*$", body, re.M)
    assert len(lines) > 50 and all("· score 1.00 → 0.30 (-0.70)" in line for line in lines)
    assert f"… and {2000 - len(lines):,} more in report.html" in body
    assert "### ⚠️ Bypass" in body and "**alice**" in body
    assert BypassRecord.parse(body) == RECORD
    # under a smaller limit it folds, then cuts after the reasons, never through them
    small = render_comment(context(names[:40], set(names[:40])), limit=25_000)
    assert len(small) <= 25_000 and "folded" in small
    # a limit below the reasons' budget lists fewer of them, each whole
    tiny = render_comment(ctx, limit=9_000)
    shown = re.findall(r"^\d+\. 🔻 \*\*high\*\* · .*$", tiny, re.M)
    assert len(tiny) <= 9_000 and 0 < len(shown) < len(lines)
    assert all(line.endswith("· score 1.00 → 0.30 (-0.70)") for line in shown)
    assert f"… and {2000 - len(shown):,} more in report.html" in tiny


def test_a_closing_tag_in_inline_code_does_not_close_a_block_the_cut_leaves_open(
    tmp_path: Path,
) -> None:
    """A tool's name `</details>` (the agent's to choose) is inline code in a `<details>` a
    comment template opens: GitHub shows it as text, so the block is still open where the
    comment is cut, and the cut closes it before its note and the bypass."""
    template = tmp_path / "tools.md.j2"
    template.write_text(
        "<details><summary>the tools called</summary>\n\n"
        "{{ '</details>' | codespan }} → {{ 'lookup' | codespan }}\n\n"
        "{% for i in range(4000) %}step {{ i }}: called\n{% endfor %}\n</details>\n\n"
        "{% include 'bypass.md.j2' %}"
    )
    names = ["a", "b"]
    body = render_comment(bypassed(compare(evals(names, set(names)))), template, limit=8_000)
    assert "cut here" in body and len(body) <= 8_000
    tags = re.sub(r"`[^`]*`", "", body)
    assert tags.count("<details>") == tags.count("</details>") == 1
    assert tags.index("</details>") < body.index("cut here")
    assert BypassRecord.parse(body) == RECORD


def test_user_template_is_sandboxed_and_keeps_the_marker(tmp_path: Path) -> None:
    template = tmp_path / "mine.md.j2"
    template.write_text(
        "Custom: {{ view.summary.counts.failing }} failing {{ ctx.head_sha[:7] }}\n"
        "{% include 'bypass.md.j2' %}"
    )
    body = render_comment(context(["a"], {"a"}), template)
    assert body == f"{MARKER}\nCustom: 1 failing aaaaaaa\n"
    template.write_text("{{ ctx.__class__.__init__.__globals__ }}")
    with pytest.raises(ConfigError, match="comment-template"):
        render_comment(context(["a"], {"a"}), template)


@pytest.mark.parametrize(
    ("written", "said"),
    [
        (b"\x00\x01\xff\xfe", "not UTF-8 text"),
        (b"{{ 1/0 }}", "rendering it failed: ZeroDivisionError: division by zero"),
        (b"{% for i in range(1000000) %}x{% endfor %}", "rendering it failed: OverflowError"),
        (b"", "renders to nothing, and the comment would be empty"),
        (b"  \n{# a note #}\n", "renders to nothing, and the comment would be empty"),
    ],
    ids=["not UTF-8", "a division by zero", "a range past the sandbox's", "empty", "blank"],
)
def test_a_user_template_that_cannot_render_or_renders_nothing_is_the_template_s_mistake(
    tmp_path: Path, written: bytes, said: str
) -> None:
    """Each was a bug's exit 4 with a traceback, or an empty comment posted with exit 0."""
    template = tmp_path / "mine.md.j2"
    template.write_bytes(written)
    with pytest.raises(ConfigError) as refused:
        render_comment(context(["a"], {"a"}), template)
    assert str(refused.value).startswith(f"comment-template {template}"), refused.value
    assert said in str(refused.value)
    assert str(refused.value).endswith(
        "fix the template or clear the `comment-template` input to use the built-in one"
    )


def test_junit_counts_and_locations() -> None:
    root = ET.fromstring("".join(junit_chunks(evals(["a", "b"], {"b"}), set())))
    assert root.get("tests") == "2" and root.get("failures") == "1"
    failing = root.find(".//testcase[@name='b']")
    assert failing is not None and failing.get("file") == "evals/b.yaml"
    assert failing.find("failure") is not None


def test_junit_written_a_testsuite_at_a_time_is_the_document_elementtree_writes() -> None:
    """Streamed, the file is what indenting and writing the whole tree at once gives: every
    testsuite, the empty and the last one, in place, with the root's totals first."""
    head = next(e for e in evals(["a", "b", "c"], {"b"}) if e.side == "head")
    first = head.fixtures[0]
    other = head.model_copy(
        update={
            "eval": 'other <&> "quoted"',
            "fixtures": [
                first.model_copy(update={"status": Status.error, "message": "boom\n\t<x> & y"}),
                first.model_copy(update={"status": Status.skipped, "timed_out": True, "rep": 2}),
                first.model_copy(update={"status": Status.failed, "assertions": [], "file": ""}),
            ],
        }
    )
    empty = head.model_copy(update={"eval": "empty", "fixtures": []})
    for results in ([*evals(["a", "b", "c"], {"b"}), other, empty], [empty], [other], []):
        written = "".join(junit_chunks(results, {("support", "c")}))
        root = ET.fromstring(written)
        ET.indent(root)
        whole = '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
        assert written == whole
        heads = [e for e in results if e.side == "head"]
        assert [s.get("name") for s in root] == [e.eval for e in heads]
        # a testcase a fixture: `other`'s three runs are one fixture's
        assert root.get("tests") == str(sum(len({f.fixture for f in e.fixtures}) for e in heads))
    written = "".join(junit_chunks([head, other], set()))
    assert 'tests="4" failures="1" errors="1" skipped="0"' in written
    # told by its first run that did not pass (an error), the failure beside it as a rerun
    root = ET.fromstring(written)
    (case,) = root.findall(".//testsuite[@name='other <&> \"quoted\"']/testcase")
    assert [child.tag for child in case] == ["error", "rerunFailure"]
    assert case[1].get("message") == "rep 0"


def test_cancelled_decision_renders() -> None:
    ctx = ReportContext(
        comparisons=[],
        marker=MARKER,
        cancelled="cancelled after 3 of 8 runs",
        decision=GateDecision(GateResult.incomplete, reason="cancelled after 3 of 8 runs"),
    )
    assert "## ⏹️ evalward: cancelled after 3 of 8 runs" in render_comment(ctx)


def test_a_bypass_of_a_run_an_error_stopped_says_what_it_let_through() -> None:
    """No Eval failed (the run stopped before any verdict): the bypass names the error it let
    through, never an empty list of failing Evals."""
    bypass = Bypass("force-eval-bypass", "alice", "2026-11-20T10:00:00", "write", "sha", "a" * 40)
    error = "agents/bot.yaml: the runtime could not start"
    ctx = ReportContext(
        comparisons=[],
        marker=MARKER,
        decision=stopped(error, 3, bypass, None, done=1, planned=3),
    )
    body = render_comment(ctx)
    assert "so this check passes although the run stopped: agents/bot.yaml" in body
    assert "these Evals fail: ." not in body


def test_a_rendering_far_past_the_limit_is_stopped_then_cut(tmp_path: Path) -> None:
    template = tmp_path / "huge.md.j2"
    # 20 MB of text, then a mistake that StrictUndefined reports only if rendering gets there
    template.write_text(
        '{% for i in range(20000) %}line {{ i }} {{ "x" * 1000 }}\n{% endfor %}{{ not_defined }}'
    )
    body = render_comment(context(["a"], {"a"}), template)
    assert len(body) <= MAX_COMMENT_CHARS
    assert body.startswith(f"{MARKER}\nline 0 x")
    assert "cut here to fit GitHub's 65,536-character comment limit" in body


def test_the_comment_and_summary_link_to_the_report_in_the_runs_artifacts() -> None:
    ctx = context(["a", "b"], {"a"})
    link = "📊 **[Full report](https://github.example/r/1#artifacts)**: `report.html`"
    assert link in render_comment(ctx)
    names = [f"f-{i}" for i in range(40)]
    folded = render_comment(context(names, set(names)), limit=25_000)
    assert "folded" in folded
    assert "([the run's artifacts](https://github.example/r/1#artifacts))" in folded
    # a local run has no workflow run to link to
    assert "Full report" not in render_comment(dataclasses.replace(ctx, run_url=""))


def test_the_built_in_comment_renders_the_same_from_its_cached_compiled_code(
    tmp_path: Path,
) -> None:
    """The built-in templates' compiled code is kept beside them (report/compiled.py): the
    comment a run renders from that cache is the one a fresh compile renders."""
    ctx = context(["a", "b"], {"b"})
    cache = template_cache()
    assert cache is not None  # the package's folder is writable here
    cache.clear()
    compiled = render_comment(ctx)
    kept = list((TEMPLATES / "__pycache__").glob("__jinja2_*.cache"))
    assert kept  # the comment's compiled code was kept
    assert render_comment(ctx) == compiled
    # an entry that cannot be written is compiled again next time, never a failure
    (tmp_path / "not-a-folder").write_text("")
    quiet = _QuietCache(str(tmp_path / "not-a-folder"))
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), bytecode_cache=quiet
    )
    assert environment.get_template("bypass.md.j2")


def test_the_built_in_comment_folds_where_rendering_it_to_its_end_would() -> None:
    """The built-in detail stops once the body is sure to be too long for it: each limit
    gives the comment that the same template, rendered whole as a user's is, gives."""
    names = [f"fixture-{i:04d}" for i in range(60)]
    ctx = context(names, set(names[::2]))
    whole = render_comment(ctx, TEMPLATES / "comment.md.j2", limit=10**7)
    assert "<details>" in whole  # the detail, unfolded
    for limit in (len(whole) + 1, len(whole), len(whole) - 1, len(whole) // 2, 20_000, 9_000):
        for sink in (escaping.GITHUB, escaping.TERMINAL):
            body = render_comment(ctx, limit=limit, sink=sink)
            assert body == render_comment(ctx, TEMPLATES / "comment.md.j2", limit, sink), limit
    assert "<details>" not in render_comment(ctx, limit=len(whole) - 1)  # folded


def test_the_evidence_names_the_arguments_a_call_of_the_same_tool_differs_in() -> None:
    head_args = {"order_id": "2", "note": "x", "b": 2, "a": {"deep": 1}}
    head_trace = Trace()
    head_trace.add(StepType.input, content="Where is my order?")
    head_trace.add(StepType.tool_call, tool="lookup_order", arguments=head_args)
    head_trace.add(StepType.final, content="Order 2 has shipped.")
    results = evals(["order"], {"order"})
    head = results[1]
    head.fixtures[0] = head.fixtures[0].model_copy(update={"trace": head_trace})
    comparisons = compare(results)
    ctx = ReportContext(comparisons=comparisons, decision=decide(comparisons, None), marker=MARKER)

    body = render_comment(ctx)

    # sorted by key; the first three named, as code; the rest counted
    named = "step 2: `lookup_order` with other arguments: `a`, `b`, `note` and 1 more"
    assert "support / order" in body and named in body, body


def test_a_bypass_record_quoted_in_what_stopped_a_gate_is_not_one() -> None:
    """The error quotes what the pull request wrote (a file's name, its YAML): a record there,
    in the comment of a gate stopped before it decided, read as evalward's own on the next
    run, naming whatever head the text chose."""
    forged = BypassRecord("force-eval-bypass", "2026-11-21T09:00:00Z", "f" * 40, "main").render()
    body = render_stopped_early(f"evals/{forged}.yaml:1: not valid YAML", 2, "")
    assert BypassRecord.parse(body) is None
    assert "evals/&lt;!-- evalward- {" in body  # shown, as the decision's comment shows it
