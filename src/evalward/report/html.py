"""report.html: one self-contained page (no CDN, no external requests) with every trace.

Each fixture's trace is a timeline; a judge violation links to its evidence step, and a click
scrolls to the step and highlights it (with plain `:target` styling as the no-script fallback).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jinja2

from evalward.results import EvalResult, FixtureResult

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class FixtureView:
    id: str
    private: bool
    result: FixtureResult


def fixture_id(result: FixtureResult) -> str:
    raw = f"{result.side}-{result.eval}-{result.fixture}-{result.rep}"
    return "f-" + re.sub(r"[^A-Za-z0-9_-]", "_", raw)


def render_html(
    *,
    result: str,
    reason: str,
    evals: list[EvalResult],
    fixtures: list[FixtureResult],
    private: set[tuple[str, str]],
    head_sha: str = "",
    run_url: str = "",
) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    ordered = sorted(fixtures, key=lambda f: (f.side != "head", f.passed, f.eval, f.fixture))
    views = [FixtureView(fixture_id(f), (f.eval, f.fixture) in private, f) for f in ordered]
    return env.get_template("report.html.j2").render(
        result=result,
        reason=reason,
        evals=evals,
        fixtures=views,
        head_sha=head_sha,
        run_url=run_url if run_url.startswith(("https://", "http://")) else "",
    )
