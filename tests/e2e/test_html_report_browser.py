"""report.html in a real headless Chromium: clicking a violation scrolls to its evidence step
and highlights it. Chromium is driven over the DevTools protocol on a pipe (no extra
packages); the test is skipped only when no Chromium is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalward.report.html import fixture_id, html_chunks
from evalward.resources.models import Severity
from evalward.results import (
    AssertionResult,
    FixtureResult,
    JudgeVerdict,
    Status,
    Verdict,
    Violation,
)
from evalward.runtime.trace import StepType, Trace

CHROMIUM = next(
    (p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p),
    None,
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on PATH (Debian: apt-get install -y chromium)"
)


class DevTools:
    """The Chrome DevTools protocol over --remote-debugging-pipe (fds 3 and 4)."""

    def __init__(self, profile: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        assert CHROMIUM is not None
        self.process = subprocess.Popen(
            [
                CHROMIUM,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "--window-size=800,600",
                "--no-first-run",
                "about:blank",
            ],
            close_fds=False,
            preexec_fn=wire,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 65536)
            if not chunk:
                raise AssertionError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(raw))

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate",
            session,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        return result["result"].get("value")

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[DevTools]:
    tools = DevTools(tmp_path / "profile")
    yield tools
    tools.close()


def long_result() -> FixtureResult:
    trace = Trace()
    trace.add(StepType.input, content="Help me with my order.")
    for i in range(2, 60):
        trace.add(StepType.assistant, content=f"Thinking, step {i}.\n" * 3)
    trace.add(StepType.final, content="Here is the admin password: hunter2")
    judge = JudgeVerdict(
        score=0.1,
        violations=[
            Violation(
                rule="never reveal secrets",
                severity="critical",
                evidence_step=60,
                quote="admin password",
            )
        ],
    )
    return FixtureResult(
        eval="support",
        fixture="leak",
        side="head",
        status=Status.failed,
        score=0.1,
        verdict=Verdict.partial,
        severity=Severity.high,
        trace=trace,
        assertions=[
            AssertionResult(
                type="judge",
                status=Status.failed,
                score=0.1,
                weight=1,
                severity=Severity.high,
                judge=judge,
            )
        ],
    )


def test_clicking_a_violation_scrolls_to_and_highlights_its_evidence_step(
    browser: DevTools, tmp_path: Path
) -> None:
    result = long_result()
    page = tmp_path / "report.html"
    page.write_text(
        "".join(html_chunks(result="fail", reason="r", evals=[], fixtures=[result], private=set()))
    )
    step_id = f"{fixture_id(result)}-step-60"

    target = browser.send("Target.createTarget", url=page.as_uri())["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    browser.send("Runtime.enable", session)
    ready = f"document.readyState === 'complete' && !!document.getElementById({step_id!r})"
    for _ in range(1000):  # the new tab starts on about:blank; wait for our page to load
        if browser.evaluate(session, ready):
            break
        time.sleep(0.01)
    else:
        raise AssertionError("report.html never finished loading")
    before = browser.evaluate(
        session,
        f"""(() => {{
        const s = document.getElementById({step_id!r}).getBoundingClientRect();
        const a = document.querySelector('a.violation').getBoundingClientRect();
        return {{step: s.top, innerHeight, x: a.left + a.width / 2, y: a.top + a.height / 2}};
    }})()""",
    )
    assert before["step"] > before["innerHeight"], "the evidence step should start off-screen"

    for kind in ("mousePressed", "mouseReleased"):  # a real click, as a user makes it
        browser.send(
            "Input.dispatchMouseEvent",
            session,
            type=kind,
            x=before["x"],
            y=before["y"],
            button="left",
            clickCount=1,
        )

    after = browser.evaluate(
        session,
        f"""new Promise(r => requestAnimationFrame(() => {{
        const el = document.getElementById({step_id!r});
        const box = el.getBoundingClientRect();
        r({{highlighted: el.classList.contains('highlight'), top: box.top,
           bottom: box.bottom, innerHeight, others: document.querySelectorAll('.highlight').length,
           hash: location.hash, background: getComputedStyle(el).backgroundColor}});
    }}))""",
    )
    assert after["highlighted"] and after["others"] == 1
    assert 0 <= after["top"] < after["innerHeight"], "the step was not scrolled into view"
    assert after["hash"] == f"#{step_id}"
    assert after["background"] == "rgb(255, 248, 197)"
