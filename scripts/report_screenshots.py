#!/usr/bin/env python3
"""Take docs/images/report-*.png: report.html of a real pull request, in headless Chromium.

    python scripts/report_screenshots.py [--chromium /usr/bin/chromium]

The pull request is the browser tests' (tests/support/report_scenario.py): two runs of `evalward
run` on main first, so the Evals have a trend, then `evalward run --base main` on the branch,
every model call answered by the tests' scripted model server on loopback. Needs the `dev`
extra (Playwright) and Debian's Chromium.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakes.model_server import ScriptedModelServer  # noqa: E402
from support.gitrepo import GitRepo  # noqa: E402
from support.report_scenario import make_pull_request, run, script  # noqa: E402

IMAGES = ROOT / "docs" / "images"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def build(root: Path) -> Path:
    repo = GitRepo(root / "repo")
    model = ScriptedModelServer()
    try:
        make_pull_request(repo)
        script(model)
        repo.checkout("main")
        for note in ("first", "second"):
            assert run(repo, model, "--no-cache").returncode in (0, 1)
            repo.commit(f"{note} note", {"NOTES.md": f"{note}\n", ".gitignore": ".evalward/\n"})
        repo.checkout("feature")
        repo.git("rebase", "-q", "main")
        out = root / "out"
        done = run(repo, model, "--base", "main", "--no-cache", "--output-dir", str(out))
        assert done.returncode == 1, done.stderr
        return out / "report.html"
    finally:
        model.close()


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evalward-shots-") as folder:
        page_path = build(Path(folder))
        url = page_path.as_uri()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url)
            page.wait_for_selector("#rows .row")
            page.screenshot(path=IMAGES / "report-overview.png")

            page.goto(url + "#filter=regressed&q=looked")
            page.wait_for_selector("#rows .row")
            page.locator("#app").screenshot(path=IMAGES / "report-filter.png")

            page.set_viewport_size({"width": 1280, "height": 1000})
            page.goto(url + "#open=support-bot-eval/greeting&step=h2")
            page.wait_for_selector("#s-h-2.highlight")
            page.locator("#detail").screenshot(path=IMAGES / "report-trace.png")

            dark = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme="dark")
            dark.goto(url + "#open=support-bot-eval/greeting")
            dark.wait_for_selector("#detail section.evidence")
            dark.screenshot(path=IMAGES / "report-dark.png")

            narrow = browser.new_page(viewport={"width": 400, "height": 900})
            narrow.goto(url)
            narrow.wait_for_selector("#rows .row")
            narrow.screenshot(path=IMAGES / "report-narrow.png")
            browser.close()
    for image in sorted(IMAGES.glob("report-*.png")):
        print(f"{image.relative_to(ROOT)}: {image.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
