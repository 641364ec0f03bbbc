"""P5: report.html at scale. 20,000 fixtures changed and run on base and head (40,000 results,
mock provider), then the page opened in headless Chromium (Debian's, driven by Playwright):
its size, how long until the list is drawn, and how long a filter, a search and opening a
fixture's paired traces take.

    python bench/p5_report.py [--fixtures 20000] [--repeat 5] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from common import EVALWARD, timed
from synth import generate, git, init_git, write_agent

SCRIPT = 'replies: []\ndefault: "answer: case 1 of agent"\n'
AGENTS = 20
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def changed_everywhere(fixtures: int) -> Path:
    """`fixtures` fixtures over 20 agents on main, and a branch that edits every agent."""
    repo = Path(tempfile.mkdtemp(prefix="evalward-p5-")) / "repo"
    repo.mkdir()
    generate(repo, AGENTS, fixtures, tools=False, parallel=64)
    init_git(repo)
    git(repo, "checkout", "-q", "-b", "change")
    for index in range(AGENTS):
        write_agent(repo, index, tools=False, version=2)
    git(repo, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qam", "change")
    return repo


def until(page: Any, expression: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {expression}")
        time.sleep(0.002)


def timed_action(page: Any, expression: str, action: Any, *args: str) -> float:
    """Milliseconds from doing `action(*args)` until `expression` holds in the page."""
    start = time.perf_counter()
    action(*args)
    until(page, expression)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--fixtures", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()

    repo = changed_everywhere(args.fixtures)
    script = repo.parent / "mock.yaml"
    script.write_text(SCRIPT)
    out = repo.parent / "out"
    run = timed(
        [*EVALWARD, "run", str(repo), "--base", "main", "--mock-script", str(script),
         "--parallel", "64", "--no-cache", "--no-history", "--output-dir", str(out)],
        cwd=repo,
    )  # fmt: skip
    page_path = out / "report.html"
    size = page_path.stat().st_size
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(
        f"P5 run: {args.fixtures} fixtures on base and head ({2 * args.fixtures} results) in "
        f"{run.wall:.1f} s, peak RSS {peak / 1024:.0f} MB; report.html {size / 1e6:.1f} MB, "
        f"{size / args.fixtures:.0f} bytes per paired fixture, "
        f"{size / (2 * args.fixtures):.0f} per result"
    )

    shown = f"'Showing {args.fixtures} of {args.fixtures} fixtures.'"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=FLAGS)
        loads, filters, searches, opens = [], [], [], []
        for _ in range(args.repeat):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            start = time.perf_counter()
            page.goto(page_path.as_uri(), wait_until="commit")
            until(page, f"document.getElementById('count')?.textContent === {shown}")
            loads.append((time.perf_counter() - start) * 1000)
            until(page, "document.readyState === 'complete'")
            filters.append(
                timed_action(
                    page,
                    "document.getElementById('count').textContent.includes(' failing of ')",
                    page.click,
                    'button[data-filter="failing"]',
                )
            )
            needle = f"case-{args.fixtures - 1}"
            searches.append(
                timed_action(
                    page,
                    "document.querySelectorAll('#rows .row').length === 1",
                    page.fill,
                    "#search",
                    needle,
                )
            )
            opens.append(
                timed_action(
                    page,
                    "!!document.querySelector('#detail table.timeline')",
                    page.click,
                    "#rows .row",
                )
            )
            rows = page.evaluate("document.querySelectorAll('#rows .row').length")
            assert rows == 1, rows
            page.close()
        browser.close()

    def line(name: str, values: list[float]) -> str:
        return f"{name} median {statistics.median(values):.0f} ms (max {max(values):.0f})"

    print(
        "P5 Chromium, "
        + "; ".join(
            [
                line("open to list drawn", loads),
                line("filter", filters),
                line("search (with its 120 ms typing pause)", searches),
                line("open a fixture's traces", opens),
            ]
        )
        + f" over {args.repeat} page loads"
    )
    shutil.rmtree(repo.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
