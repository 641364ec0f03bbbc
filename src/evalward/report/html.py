"""report.html: one self-contained page (no CDN, no external requests) with every trace.

Each fixture's trace is a timeline; a judge violation links to its evidence step, and a click
scrolls to the step and highlights it (with plain `:target` styling as the no-script fallback).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import jinja2
from markupsafe import Markup

from evalward.report.escape import reveal_bidi
from evalward.results import EvalResult, FixtureResult
from evalward.runtime.trace import Trace

TEMPLATES = Path(__file__).parent / "templates"

TraceSource = Callable[[FixtureResult], Trace]
"""Reads a result's trace: from the result itself, or from the run's trace spool."""


def trace_in_result(result: FixtureResult) -> Trace:
    if result.trace is None:
        raise ValueError(f"{result.fixture}: the trace is in a spool; pass its trace_of")
    return result.trace


@dataclass(frozen=True)
class FixtureView:
    id: str
    private: bool
    result: FixtureResult
    traces: TraceSource

    @property
    def trace(self) -> Trace:
        """Read when the page reaches this fixture, so one trace is in memory at a time."""
        return self.traces(self.result)


def fixture_id(result: FixtureResult) -> str:
    raw = f"{result.side}-{result.eval}-{result.fixture}-{result.rep}"
    return "f-" + re.sub(r"[^A-Za-z0-9_-]", "_", raw)


def _shown(value: object) -> object:
    """Every text the page shows, with bidirectional controls shown by name (escape.py).

    Markup is HTML the page built itself (`tojson`, which writes them as `\\u202e`)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return reveal_bidi(value)
    return value


def html_chunks(
    *,
    result: str,
    reason: str,
    evals: list[EvalResult],
    fixtures: list[FixtureResult],
    private: set[tuple[str, str]],
    head_sha: str = "",
    run_url: str = "",
    trace_of: TraceSource = trace_in_result,
) -> Iterator[str]:
    """The page in pieces as it renders, for writing without holding it whole."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    ordered = sorted(fixtures, key=lambda f: (f.side != "head", f.passed, f.eval, f.fixture))
    views = [
        FixtureView(fixture_id(f), (f.eval, f.fixture) in private, f, trace_of) for f in ordered
    ]
    return env.get_template("report.html.j2").generate(
        result=result,
        reason=reason,
        evals=evals,
        fixtures=views,
        head_sha=head_sha,
        run_url=run_url if run_url.startswith(("https://", "http://")) else "",
    )
