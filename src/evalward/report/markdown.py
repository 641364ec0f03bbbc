"""Render the PR comment (and the job summary) from a Jinja2 template file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from evalward import __version__
from evalward.changes import ChangeSet
from evalward.compare import Change, EvalComparison
from evalward.gate import GateDecision, GateResult
from evalward.report import escape

TEMPLATES = Path(__file__).parent / "templates"
MAX_COMMENT_CHARS = 65_536


@dataclass
class ReportContext:
    comparisons: list[EvalComparison]
    decision: GateDecision
    changes: ChangeSet | None = None
    skipped_base: dict[str, str] = field(default_factory=dict)
    repository: str = ""
    head_sha: str = ""
    run_url: str = ""
    marker: str = ""


def marker_for(key: str) -> str:
    """The hidden first line that lets a later run find and edit its own comment."""
    safe = "".join(ch for ch in key if ch.isalnum() or ch in "-_./:")
    return f"<!-- evalward-comment:{safe} -->"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=False,  # noqa: S701 - markdown, not HTML: the md/code filters escape
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = escape.inline
    env.filters["code"] = escape.block
    env.filters["pct"] = lambda value: f"{value:.2f}"
    env.filters["signed"] = lambda value: "—" if value is None else f"{value:+.2f}"
    env.globals["Change"] = Change
    env.globals["GateResult"] = GateResult
    return env


def render_comment(context: ReportContext, template: str = "comment.md.j2") -> str:
    body = (
        _environment()
        .get_template(template)
        .render(
            ctx=context,
            version=__version__,
            failing=sum(1 for c in context.comparisons if not c.head.passed),
        )
    )
    if not body.startswith(context.marker):
        body = f"{context.marker}\n{body}"
    if len(body) > MAX_COMMENT_CHARS:
        note = "\n\n… the comment was cut at GitHub's size limit; see the job summary.\n"
        body = body[: MAX_COMMENT_CHARS - len(note)] + note
    return body
