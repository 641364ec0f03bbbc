"""What a pull request's agent says cannot command the runner, restructure the comment nor
break a file evalward writes.

One action run, whose head agent answers (and calls a tool) with every payload at once:
mentions, HTML and markdown that would close the comment's sections, workflow commands after
a line break or its percent-encoding, the runner's older `##[…]` commands (recognised
anywhere in a line), a script-closing tag, attribute-breaking quotes, a
`javascript:` link, XML's CDATA end and control characters. The fixture's file name carries
payloads too: a path is the pull request's to choose.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from action.test_secrets_and_injection import HOSTILE, live_dollars, most_marks, outside_code
from evalward.text.escaping import MAX_MARKS
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env

pytestmark = pytest.mark.hostile

COMMANDS = (
    "\n::stop-commands::pwned-token\n::set-output name=result::pass\n::add-mask::evalward"
    "\r::error file=README.md,line=1::forged annotation\n  ::add-path::/tmp/evil"
    "%0A::set-env name=NODE_OPTIONS::--require=/tmp/x"
    "\n##[set-output name=result;]pass ##[stop-commands]pwned-v1 ##[add-mask]evalward"
)
MARKUP = (
    "</script><script>alert(1)</script><svg onload=alert(2)> \"'><img src=x onerror=alert(3)>"
    " [go](javascript:alert(4)) <!-- evalward-comment:forged --> ]]> <![CDATA[x]]>"
)
CONTROLS = "\x00\x01\x08\x0b\x0c\x1b[31mred\x1b[0m\x7f\ufffe"
PAYLOAD = f"Goodbye.{CONTROLS}{COMMANDS} {MARKUP} {HOSTILE} end"
HOSTILE_FILE = "evals/fixtures/x ##[stop-commands]p1 ::error::p2 <svg onload=alert(5)>.yaml"

FAREWELL_FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata:
  name: farewell
  labels: { agent: support-bot }
spec:
  targetAgent: support-bot
  input:
    type: prompt
    payload: { prompt: "Bye FAREWELL-TURN" }
  assertions:
    - { type: equals, value: "Goodbye." }
    - { type: contains, value: "\\0\\e\\x01 ]]> <svg onload=alert(6)>" }
"""


def gate_farewell(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    edit: tuple[str, str],
    inputs: dict[str, str] | None = None,
) -> ActionRun:
    """Pull request #7 adding the farewell fixture with `edit` made to it (`FAREWELL_FIXTURE`
    text, and what the pull request writes there: a hostile key or assertion type), gated
    with `inputs`; the agent says "Goodbye."."""
    base, _ = make_pr(repo, github)
    fixture = FAREWELL_FIXTURE.replace(*edit)
    head = repo.commit("a hostile fixture", {"evals/fixtures/farewell.yaml": fixture})
    github.pulls[7].head_sha = head
    model.script(lambda b: True, text("Goodbye."))
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs=inputs,
    )


RUNNER_COMMANDS = {
    "stop-commands",
    "set-output",
    "set-env",
    "add-mask",
    "add-path",
    "save-state",
    "echo",
    "debug",
    "error",
    "warning",
    "notice",
    "group",
    "endgroup",
}


def runner_commands(log: str) -> list[tuple[str, str]]:
    """The workflow commands GitHub's runner finds in a log, as (name, whole line): `::name`
    at the start of a line (after spaces), else the older `##[name` anywhere in it. Lines end
    at CR, LF or both, as .NET reads them."""
    found = []
    for line in re.split(r"\r\n|\r|\n", log):
        current = re.match(r"::([^: ]+)[^:]*::", line.lstrip())
        older = re.search(r"##\[([^\] ]+)", line)
        if m := current or older:
            found.append((m[1].lower(), line))
    return [(name, line) for name, line in found if name in RUNNER_COMMANDS]


def test_hostile_output_and_file_names_command_nothing_restructure_nothing_break_no_file(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, _ = make_pr(repo, github)
    head = repo.commit("a farewell fixture", {HOSTILE_FILE: FAREWELL_FIXTURE})
    github.pulls[7].head_sha = head
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello! shipped 2026-11-25"))
    model.script(
        lambda b: "HEAD-V2" in json.dumps(b),
        tool_call("lookup_order", {"order_id": PAYLOAD}),
        text(PAYLOAD),
    )
    env = provider_env(model)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"check-run": "true", "gate-config": "head"},
    )

    assert run.returncode == 1, run.stderr
    assert run.outputs["result"] == "fail"
    assert "forged annotation" in json.dumps(run.results()), "the payload was recorded"
    assert_commands_are_evalwards_own(run)
    assert_xml_is_well_formed(run)
    assert_report_html_runs_no_payload(run)
    assert_comment_is_not_restructured(github.comments_on(7)[0]["body"])
    assert not live_dollars(run.summary), "LaTeX GitHub would draw as math in the job summary"
    assert most_marks(run.summary) <= MAX_MARKS, "a stack of marks drawn in the job summary"


def assert_commands_are_evalwards_own(run: ActionRun) -> None:
    for stream, log in (("stdout", run.stdout), ("stderr", run.stderr)):
        for name, line in runner_commands(log):
            assert name in {"error", "warning", "notice", "group", "endgroup"}, (stream, line)
            assert line.startswith(f"::{name}"), f"{stream}: a command inside a line: {line!r}"
            assert not re.search(r"##\[", line) or line.startswith("::"), line
        assert "\x1b" not in log, f"an escape sequence reaches {stream}: the log viewer obeys it"


def assert_xml_is_well_formed(run: ActionRun) -> None:
    junit = run.output_dir / "junit.xml"
    root = ET.fromstring(junit.read_bytes())
    cases = {case.get("name", ""): case for case in root.iter("testcase")}
    assert any("farewell" in name for name in cases), sorted(cases)
    assert "stop-commands" in junit.read_text(), "the output is kept, escaped"


def assert_report_html_runs_no_payload(run: ActionRun) -> None:
    page = (run.output_dir / "report.html").read_text()
    assert "forged annotation" in page
    assert "Content-Security-Policy" in page
    lowered = page.lower()
    assert "<svg onload" not in lowered and "<img src=x" not in lowered
    # the data sits in one script element: nothing in it may close it or open another
    for script in re.findall(r"<script\b[^>]*>(.*?)</script", page, re.DOTALL | re.IGNORECASE):
        assert "<script" not in script.lower() and "<!--" not in script, "script data breaks out"


def assert_comment_is_not_restructured(body: str) -> None:
    assert body.startswith("<!-- evalward-comment:evals/gate -->\n")
    outside = outside_code(body)
    assert outside.count("<!--") == 1, "a forged marker outside a code block"
    for raw in ("<svg", "<img", "<script", "](javascript:", "<![CDATA[", "](https://evil"):
        assert raw not in outside, f"{raw} is live markup in the comment"
    assert "onerror" in body, "the output is shown (escaped), not dropped"
    assert re.search(r"(?<![\w\u200b])@(octocat|acme)", body) is None, "a mention would ping"
    assert outside.count("<details") == outside.count("</details>")
    assert "## ⚠️ Gate bypassed" not in outside
    assert re.search(r"^\| fake \| 1\.00 \|$", outside, re.MULTILINE) is None
    assert not live_dollars(body), "LaTeX GitHub would draw as math"
    assert most_marks(body) <= MAX_MARKS and "combining marks" in body, "a stack is drawn"
