"""Render the PR comment (and the job summary) from a Jinja2 template file.

The built-in template lives in the package; a user template is rendered in Jinja2's sandbox
with the same data. Whatever a template does, the hidden marker comes first, the bypass
record comes last, and the body fits GitHub's 65,536-character limit: per-fixture detail is
folded first, then the text is cut at a line, with every `<details>` and code fence the cut
leaves open closed, and a pointer to the full report.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from evalward import __version__
from evalward.errors import ConfigError
from evalward.past.status_run import SinceScheduled
from evalward.plan.changes import ChangeSet
from evalward.record.evaluation import Evaluation
from evalward.record.schema import RunInfo
from evalward.record.summary import RunSummary, eval_score_text, summarize, threshold_of
from evalward.record.write import run_summary
from evalward.report.attribution_text import attribution_markdown
from evalward.report.compiled import TEMPLATES, template_cache
from evalward.report.pairwise_text import pairwise_lines
from evalward.report.reps import axes_text, has_run_numbers, percent, reps_text
from evalward.report.story import Blocking, Reason
from evalward.report.view import REASONS_BUDGET, LineBudget, build_view
from evalward.rundata.sides import Side
from evalward.rundata.spool import TraceSource
from evalward.text import escaping, utf8
from evalward.text.counts import counted
from evalward.text.numbers import delta_text, threshold_text
from evalward.verdict.compare import Change, EvalComparison
from evalward.verdict.gate import BypassRecord, GateDecision, GateResult

MAX_COMMENT_CHARS = 65_536
IN_THE_WORKFLOW = "the job summary, `results.json` and `report.html`"
"""Where a workflow run's whole report is, which a comment cut or folded to fit points to."""
RECORD_PREFIX = "<!-- evalward-bypass-record"
UNRECORDED = "&lt;!-- evalward-"
"""What the record's start is shown as in any text of a comment but evalward's own record."""
RENDER_CAP = 4
"""A rendering is stopped once it reaches this many times the limit: it can only be folded or
cut then, and 20,000 fixtures' detail need not exist as text first (bench/p4_footprint.py)."""
UNLOADABLE_SHOWN = 50
"""Problems the comment on definitions that do not load lists at most."""
UNLOADABLE_ROOM = 1_000
"""What that comment's lines but its problems' take at most, in characters or bytes."""


@dataclass(frozen=True)
class RunReason:
    """What ran and why, when nothing was compared with a base: a scheduled, manual or
    push run ("Scheduled run (cron `0 6 * * 1`): every Eval with this schedule — a, b")."""

    title: str
    scope: str
    cron: str = ""
    evals: tuple[str, ...] = ()

    @property
    def cron_code(self) -> str:
        """The cron as inline code, reduced to the characters a cron expression uses."""
        kept = "".join(
            ch for ch in self.cron if ch.isascii() and (ch.isalnum() or ch in "*/,-?# ")
        ).strip()
        return f"`{kept}`" if kept else ""


@dataclass
class ReportContext:
    comparisons: list[EvalComparison]
    decision: GateDecision
    changes: ChangeSet | None = None
    skipped_base: dict[str, str] = field(default_factory=dict)
    not_run: dict[str, str] = field(default_factory=dict)
    """Evals that gate but could not run on the head (their agent is gone), and why."""
    dropped: dict[str, str] = field(default_factory=dict)
    repository: str = ""
    head_sha: str = ""
    run_url: str = ""
    marker: str = ""
    notes: list[str] = field(default_factory=list)
    private: set[tuple[str, str]] = field(default_factory=set)
    cancelled: str = ""
    record: BypassRecord | None = None
    gate_config: str = "base"
    cache_hits: int = 0
    skipped_runs: int = 0
    skipped_evals: dict[str, int] = field(default_factory=dict)
    """By Eval, the head runs the budget skipped: its row's result is of what ran alone."""
    ran: RunReason | None = None
    """What ran and why, for a run with no base (schedule, dispatch, push): said instead of
    the changed agents, which would all be "new"."""
    since_scheduled: list[SinceScheduled] = field(default_factory=list)
    """On a scheduled run: each Eval beside the previous scheduled run (`status_run`)."""
    summary: RunSummary | None = None
    """The run in numbers (`record.summary`), shared with results.json and report.html;
    computed from the comparisons and the decision when not given."""
    run: RunInfo = field(default_factory=RunInfo)
    """How long the run took and what its model calls spent (`record.schema.RunInfo`)."""
    trace_of: TraceSource | None = None
    """Reads a fixture run's trace (the run's spool): the blocking fixtures' evidence."""
    attribution_md: str = ""
    """The section on which hunks of the change caused its regressions, rendered and
    escaped (`attribution_text`); "" where attribution did not run."""
    report_file: bool = False
    """report.html is written beside comment.md: its fixtures are linked as
    `report.html#open=…`."""

    def __post_init__(self) -> None:
        if self.summary is None:
            self.summary = summarize(self.comparisons, self.decision)

    @property
    def numbers(self) -> RunSummary:
        assert self.summary is not None, "set in __post_init__"
        return self.summary

    @cached_property
    def blocking(self) -> Blocking:
        """The blocking fixtures worst first, each one's reason read once for every rendering
        of this comment (the file's, the terminal's, the job summary's)."""
        return Blocking(self.comparisons, self.private, self.trace_of)

    def link(self, reason: Reason) -> str:
        """Where a blocking fixture's line links to: the fixture opened in report.html."""
        if self.report_file:
            return f"report.html#{reason.anchor}"
        return self.report_url

    @property
    def report_url(self) -> str:
        """Where report.html is: the workflow run's artifacts (docs/report.md)."""
        return f"{self.run_url}#artifacts" if self.run_url else ""


@dataclass(frozen=True)
class WorkflowNotes:
    """What only a workflow run adds to the comment: which definitions gate, the bypass
    record the comment keeps, and, for a run without a base, what ran and why."""

    gate_config: str = "base"
    record: BypassRecord | None = None
    ran: RunReason | None = None
    on_the_lines: str = ""
    """Where else attribution's lines are said (the review), or why not (a fork)."""


def report_context(
    evaluation: Evaluation,
    decision: GateDecision,
    *,
    marker: str,
    run: RunInfo | None = None,
    show_changes: bool = True,
    workflow: WorkflowNotes | None = None,
    report_file: bool = False,
) -> ReportContext:
    """What the comment shows of an Evaluation, for the action and the command line alike.

    `show_changes` is off when nothing was compared with a base: every agent would be "new";
    `workflow.ran` then says what ran and why instead. `run` says where the run happened, how
    far it went (a cancelled run says why in the comment: the decision's reason), how long it
    took and what it spent; the run's summary (`record.write.run_summary`) is computed here,
    once, for every report. `report_file`: report.html is written beside comment.md.
    """
    run = run or RunInfo()
    workflow = workflow or WorkflowNotes()
    return ReportContext(
        ran=workflow.ran,
        comparisons=evaluation.comparisons,
        decision=decision,
        changes=evaluation.changes if show_changes and workflow.ran is None else None,
        skipped_base=evaluation.plan.skipped_base,
        not_run=evaluation.plan.not_run,
        dropped=evaluation.plan.dropped,
        repository=run.repository,
        head_sha=run.head_sha,
        run_url=run.run_url,
        marker=marker,
        notes=evaluation.notes,
        private=evaluation.private,
        cancelled=decision.reason if run.cancelled else "",
        record=workflow.record,
        gate_config=workflow.gate_config,
        cache_hits=evaluation.cache_hits,
        skipped_runs=len(evaluation.skipped),
        skipped_evals=dict(Counter(r.eval for r in evaluation.skipped if r.side is Side.head)),
        summary=run_summary(evaluation, decision),
        run=run,
        trace_of=evaluation.trace_of,
        report_file=report_file,
        attribution_md=attribution_markdown(
            evaluation.attribution,
            server=_server_of(run.run_url, run.repository),
            repository=run.repository,
            head_sha=run.head_sha,
            on_the_lines=workflow.on_the_lines,
        ),
    )


def _server_of(run_url: str, repository: str) -> str:
    """The GitHub server a run's URL is on (`https://github.com`), "" when it does not say."""
    marker = f"/{repository}/"
    return run_url.split(marker, 1)[0] if repository and marker in run_url else ""


def pieces_md(parts: tuple[tuple[str, bool], ...], sink: escaping.Sink) -> str:
    """A sentence of text and code pieces (`story.Piece`), each escaped for `sink`, the
    spaces between them kept."""
    out = []
    for text, code in parts:
        if code:
            out.append(escaping.code_span(text))
            continue
        lead = " " if text[:1].isspace() else ""
        trail = " " if text[-1:].isspace() else ""
        out.append(lead + sink.inline(text, 200) + trail)
    return "".join(out)


def marker_for(key: str) -> str:
    """The hidden first line that lets a later run find and edit its own comment."""
    safe = "".join(ch for ch in key if ch.isalnum() or ch in "-_./:")
    return f"<!-- evalward-comment:{safe} -->"


def _configure(env: jinja2.Environment, sink: escaping.Sink) -> jinja2.Environment:
    env.filters["md"] = sink.inline
    env.filters["code"] = sink.block
    env.filters["pct"] = lambda value: f"{value:.2f}"
    env.filters["signed"] = delta_text
    env.filters["threshold"] = threshold_text
    env.filters["codespan"] = escaping.code_span
    env.globals["eval_score"] = eval_score_text
    env.globals["threshold_of"] = threshold_of
    env.globals["pieces"] = lambda parts: pieces_md(parts, sink)
    env.filters["percent"] = percent
    env.globals["reps_text"] = reps_text
    env.globals["axes_text"] = axes_text
    env.globals["has_run_numbers"] = has_run_numbers
    env.globals["pairwise_lines"] = pairwise_lines
    env.globals["Change"] = Change
    env.globals["GateResult"] = GateResult
    return env


_OPTIONS: dict[str, Any] = {
    "autoescape": False,  # markdown, not HTML: the md/code filters escape
    "undefined": jinja2.StrictUndefined,
    "trim_blocks": True,
    "lstrip_blocks": True,
    "keep_trailing_newline": True,
}


def _builtin(sink: escaping.Sink) -> jinja2.Environment:
    loader = jinja2.FileSystemLoader(TEMPLATES)
    env = jinja2.Environment(loader=loader, bytecode_cache=template_cache(), **_OPTIONS)  # noqa: S701
    return _configure(env, sink)


def _sandboxed(path: Path, sink: escaping.Sink) -> tuple[jinja2.Environment, str]:
    """A user's template: it may include the built-in partials, and cannot reach Python."""
    loader = jinja2.ChoiceLoader(
        [jinja2.FileSystemLoader(path.parent), jinja2.FileSystemLoader(TEMPLATES)]
    )
    sandbox = SandboxedEnvironment(loader=loader, **_OPTIONS)
    return _configure(sandbox, sink), path.name


def render_comment(
    context: ReportContext,
    template: Path | None = None,
    limit: int = MAX_COMMENT_CHARS,
    sink: escaping.Sink = escaping.GITHUB,
    *,
    measure: Callable[[str], int] = len,
    named: tuple[str, str] | None = None,
    whole_report: str = IN_THE_WORKFLOW,
) -> str:
    """The comment body, at most `limit` long, marker first, bypass record last; folded or
    cut to fit, it says the whole report is in `whole_report` (Markdown).

    `sink` is where it will be shown: rendered by GitHub (the default), or printed on a
    terminal, where links and mentions are left as they are (escaping.py). `measure` is what
    `limit` counts: characters (GitHub's comment limit), or `utf8.size` (the job summary's,
    which GitHub counts in bytes). `named` is how a mistake in `template` names it: its path
    as the user knows it and whose file it is (the action reads the base commit's from a
    private copy, whose path tells the user nothing)."""
    env, name = _sandboxed(template, sink) if template else (_builtin(sink), "comment.md.j2")

    def at(line: object = None) -> str:
        return _template_at(template, named, line)

    terminal = sink is escaping.TERMINAL
    # the reasons cut to a third of `limit` (links cost their length where they are shown)
    lines = LineBudget(
        escape=sink.inline,
        link=0 if terminal else len(context.report_url) + 40,
        total=min(REASONS_BUDGET, limit // 3),
    )
    view = build_view(context, lines)

    def link(reason: Reason) -> str:
        return "" if terminal else context.link(reason)

    tail = f"\n{context.record.render()}\n" if context.record else ""

    # The built-in detail stops once the body is sure to be too long, and is folded (a user's
    # template renders on, so that an error further in it is still reported). It is counted
    # in characters as it renders: no text is shorter in bytes than in characters.
    room = limit - measure(tail)

    def render(detail: bool) -> str:
        past = room if detail and template is None else math.inf
        try:
            generated = env.get_template(name).generate(
                ctx=context,
                view=view,
                detail=detail,
                version=__version__,
                link=link,
                whole_report=whole_report,
            )
            return _body(generated, context.marker, RENDER_CAP * limit, past)
        except jinja2.TemplateError as exc:
            line = getattr(exc, "lineno", None) or _line_of(exc, template)
            where = at(line) if template else f"comment-template {name}"
            raise ConfigError(f"{where}: {exc}; {_OWN_OR_BUILT_IN}") from None
        except UnicodeDecodeError:
            if template is None:
                raise
            raise ConfigError(f"{at()}: not UTF-8 text; {_OWN_OR_BUILT_IN}") from None
        except (ArithmeticError, LookupError, TypeError, ValueError) as exc:
            if template is None:
                raise
            # what the template's own expressions raise as it renders (`{{ 1/0 }}`, a range
            # past the sandbox's bound): the template's mistake, not a bug of evalward's
            raise ConfigError(
                f"{at(_line_of(exc, template))}: rendering it failed: {type(exc).__name__}: "
                f"{exc}; {_OWN_OR_BUILT_IN}"
            ) from None

    body = render(detail=True)
    if template is not None and not body.replace(context.marker, "").strip():
        raise ConfigError(
            f"{at()}: renders to nothing, and the comment would be empty; {_OWN_OR_BUILT_IN}"
        )
    if measure(body) > room:
        body = render(detail=False)
    if measure(body) > room:
        bypass = _builtin(sink).get_template("bypass.md.j2").render(ctx=context)
        room -= measure(bypass)
        body = _truncate(body, room, context.report_url, whole_report, measure) + bypass
    return body + tail


_OWN_OR_BUILT_IN = "fix the template or clear the `comment-template` input to use the built-in one"


def _template_at(template: Path | None, named: tuple[str, str] | None, line: object) -> str:
    """A user's template as a mistake in it names it: `named` (its path in the repository,
    and whose file it is) or its path, at `line` when one is known."""
    shown, whose = named or (str(template), "")
    place = f"{shown}:{line}" if line is not None else shown
    return f"comment-template {place}{f' ({whose})' if whose else ''}"


def parse_template(template: Path, named: tuple[str, str] | None = None) -> None:
    """Refuse a user's comment template that does not parse, or is no UTF-8 text, before
    anything runs (`named` as `render_comment` takes it): found as the comment is rendered,
    once the runs are done, the mistake would cost the job's model calls to be told."""
    env, name = _sandboxed(template, escaping.GITHUB)
    try:
        env.get_template(name)
    except jinja2.TemplateError as exc:
        at = _template_at(template, named, getattr(exc, "lineno", None))
        raise ConfigError(f"{at}: {exc}; {_OWN_OR_BUILT_IN}") from None
    except UnicodeDecodeError:
        at = _template_at(template, named, None)
        raise ConfigError(f"{at}: not UTF-8 text; {_OWN_OR_BUILT_IN}") from None


def _line_of(exc: BaseException, template: Path | None) -> int | None:
    """The line of `template` an error raised as it rendered stands at (None: not known):
    Jinja gives an error of its expressions (an undefined attribute, `{{ 1/0 }}`) no
    `lineno`, but writes the template's own lines into its traceback."""
    if template is None:
        return None
    file, line = os.path.normpath(template), None
    frame = exc.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code.co_filename == file:
            line = frame.tb_lineno
        frame = frame.tb_next
    return line


def _body(generated: Iterator[str], marker: str, cap: int, past: float) -> str:
    """The body from what a template prints: stopped once it reaches `cap` characters, or
    once it is sure to be longer than `past` (finished, the text so far is at most `slack`
    longer than the same part of the whole: a marker, a record prefix or a CRLF cut in two
    where it ends)."""
    slack = 2 * (len(marker) + len(RECORD_PREFIX)) + 16
    pieces: list[str] = []
    size = 0
    check_at = past + slack
    for piece in generated:
        pieces.append(piece)
        size += len(piece)
        if size > cap:
            break
        if size > check_at:
            if len(_finished(pieces, marker)) > past + slack:
                break  # too long: it will be folded
            check_at = 2 * size
    return _finished(pieces, marker)


def _finished(pieces: list[str], marker: str) -> str:
    # Whatever a template prints (a user template may print raw output), bidirectional
    # controls are shown by name in the whole body, not only through the `md` filter.
    text = escaping.reveal_controls("".join(pieces))
    text = text.replace(marker, "").replace(RECORD_PREFIX, UNRECORDED)
    return f"{marker}\n{text.lstrip()}"


def _truncate(
    body: str, limit: int, report_url: str, whole_report: str, measure: Callable[[str], int]
) -> str:
    """`body` cut at a line to fit `limit` with the note that says so, and every code fence
    and `<details>` the cut leaves open closed before the note: an open one would take in
    the rest of the comment, the note and the bypass with it."""
    where = f" ([the run's artifacts]({report_url}))" if report_url else ""
    note = (
        f"\n\n**… cut here to fit GitHub's {MAX_COMMENT_CHARS:,}-character comment limit.** "
        f"The full report is in {whole_report}{where}.\n"
    )
    room = limit - measure(note)
    within = room
    while True:  # a cut further back may leave other blocks open: until its closers fit too
        cut = max(body.rfind("\n", 0, utf8.start_within(body, within, measure)), 0)
        kept = body[:cut] + _closers(body[:cut])
        over = measure(kept) - room
        if over <= 0 or cut == 0:
            return kept + note
        within -= over


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_DETAILS = re.compile(r"<(/?)details\b", re.IGNORECASE)
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)")
"""Inline code (CommonMark: closed by a backtick run of its opener's length), where a tag is
text: a tool's name `</details>` closes nothing."""


def _closers(text: str) -> str:
    """What closes the blocks `text` leaves open at its end: the code fence it is in (a
    fence's own line, as CommonMark reads one), then each `<details>` outside fences and
    inline code."""
    fence = ""
    depth = 0
    for line in text.split("\n"):
        opening = _FENCE.match(line)
        if fence:
            if opening and opening[1].startswith(fence) and not line[opening.end() :].strip():
                fence = ""
        elif opening is not None and not (opening[1][0] == "`" and "`" in line[opening.end() :]):
            fence = opening[1]
        else:
            for tag in _DETAILS.finditer(_CODE_SPAN.sub("", line)):
                depth = max(0, depth + (-1 if tag[1] else 1))
    return (f"\n{fence}" if fence else "") + "\n\n</details>" * depth


SHOWN_HEAD = re.compile(r" · head `([0-9a-f]{12})`")
"""How the foot of every comment evalward writes names the head it reports."""


def shown_head(body: str) -> str | None:
    """The head (its first 12 hex digits) evalward's comment `body` reports, as its foot
    names it; None where it names none (a repository's own template may leave it out)."""
    found = SHOWN_HEAD.findall(body)
    return found[-1] if found else None


def render_unloadable(
    marker: str,
    problems: list[str],
    head_sha: str,
    run_url: str,
    source: str = "",
    after: tuple[str, ...] = (),
    *,
    limit: int = MAX_COMMENT_CHARS,
    measure: Callable[[str], int] = len,
) -> str:
    """The comment when resources do not load — the pull request's, or (`source`) the base
    branch's whose definitions gate, with what to do then (`after`: `prepare.BASE_FIRST`
    and the bypass): nothing ran, and the gate fails until they load; every
    problem is listed (file:line: what is wrong), of the first `UNLOADABLE_SHOWN` as many as
    fit `limit` as `measure` counts it (the job summary's bytes, the comment's characters): a
    problem quotes what the pull request wrote, escaping can make each character of it
    fourteen (`$`), and GitHub refuses a longer comment whole, keeping the one it had."""
    whose = f"the resources of {source}" if source else "this pull request's resources"
    heading = f"## ❌ evalward: {escaping.inline(whose)} do not load"
    foot = [
        "",
        f"<sub>evalward {__version__}"
        + (f" · head `{head_sha[:12]}`" if head_sha else "")
        + (f" · [workflow run]({run_url})" if run_url else "")
        + "</sub>",
        "",
    ]
    way = [escaping.inline(line, limit=1000) for line in after]
    # what is not a problem's line takes less than `UNLOADABLE_ROOM`: the heading, the
    # count, the line saying what was cut and the foot
    room = limit - measure("\n".join([marker, heading, *way, *foot])) - UNLOADABLE_ROOM
    shown: list[str] = []
    for problem in problems[:UNLOADABLE_SHOWN]:
        line = f"- {escaping.inline(problem, limit=500)}"
        room -= measure(line) + 1
        if room < 0:
            break
        shown.append(line)
    cut = len(problems) - len(shown)  # past the first UNLOADABLE_SHOWN, or past the room
    for_room = len(shown) < min(len(problems), UNLOADABLE_SHOWN)
    first = f"{counted(len(problems), 'problem')}; the first {len(shown)}:" if cut else ""
    said = "the job's log lists every one (`evalward validate` does too)"
    why_cut = ", cut to fit GitHub's size limit" if for_room else ""
    lines = [
        marker,
        heading,
        "",
        "Nothing ran, and the gate fails until they load. " + first,
        "",
        *shown,
        *([f"- … and {cut:,} more{why_cut}: {said}."] if cut else []),
        *(["", *way] if way else []),
        *foot,
    ]
    return "\n".join(lines)


def render_stopped_early(message: str, exit_code: int, run_url: str, head_sha: str = "") -> str:
    """The job summary of a run an error stopped before it wrote a decision (the pull request
    GitHub's API would not give, an input that is wrong), and the pull request's comment
    where its head stopped it: what stopped it, in the words of the error the log ends
    with."""
    lines = [
        "## ⏹️ evalward: stopped before a decision",
        "",
        f"The gate decided nothing; the job exits {exit_code}. What stopped it:",
        "",
        # the error quotes what the pull request wrote (a file's name, its YAML): a bypass
        # record in it must not read as one, as in the decision's comment (`_finished`)
        escaping.block(message).replace(RECORD_PREFIX, UNRECORDED),
        "",
        f"<sub>evalward {__version__}"
        + (f" · head `{head_sha[:12]}`" if head_sha else "")
        + (f" · [workflow run]({run_url})" if run_url else "")
        + "</sub>",
        "",
    ]
    return "\n".join(lines)
