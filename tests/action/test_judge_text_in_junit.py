"""What a judge says about a head agent is untrusted text (the agent's own words steer it,
and its cited quotes are taken from the agent's trace): in junit.xml, each character XML 1.0
cannot hold is named (it was written raw), and so is each control the comment names (a
bidirectional override showed a dashboard's reader the words in another order).

A judge reply whose summary carries C0 controls (SOH, VT, ESC) and the noncharacters U+FFFE
and U+FFFF, all illegal in XML 1.0, is written into the failing testcase's `message` attribute
and its text as they are: junit.xml is no longer well-formed, and the CI dashboard or test
reporter that reads it refuses the whole file. The agent's own output is kept out of reach
(assertion messages quote it with `repr`); the judge's words are not.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from action.test_secrets_and_injection import judged_greeting
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

CONTROLS = "bad\x01\x0b\x1b[31mred\x1b[0m\ufffe\uffff \u202edne\u202c end"


def judged_run(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, said: str
) -> ActionRun:
    """A pull request whose greeting fixture is judged, the judge answering `said` in its
    summary, its violation and its advice (the agent's reply holds the quote)."""
    base, head = judged_greeting(repo, github)
    verdict = {
        "score": 0.2,
        "confidence": 0.9,
        "summary": said,
        "violations": [{"rule": said, "severity": "high", "evidence_step": 1, "quote": said}],
        "what_would_raise_score": said,
    }
    model.script(lambda b: "EVALWARD-DATA" in json.dumps(b), text(json.dumps(verdict)))
    model.script(lambda b: True, text(f"Hello! {said}"))
    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"gate-config": "head", "cache": "off", "check-run": "true"},
    )
    assert run.returncode == 1, run.stderr
    assert model.requests_mentioning("EVALWARD-DATA"), "the judge never ran"
    return run


def test_control_characters_in_a_judges_words_leave_junit_xml_well_formed(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    run = judged_run(repo, github, model, CONTROLS)

    junit = (run.output_dir / "junit.xml").read_bytes()
    try:
        root = ET.fromstring(junit)
    except ET.ParseError as exc:
        pytest.fail(f"junit.xml is not well-formed XML 1.0: {exc}")
    (greeting,) = (case for case in root.iter("testcase") if case.get("name") == "greeting")
    failure = greeting.find("failure")
    assert failure is not None and "red" in (failure.get("message") or ""), "the verdict is kept"
    written = junit.decode()
    assert "\u202e" not in written and "\u202c" not in written
    assert "<U+202E>dne<U+202C>" in (failure.get("message") or "")
