"""A check run's texts are cut to GitHub's limits in bytes of UTF-8, never through a character:
an annotation's message to 64 KB, the summary to 65,535. GitHub counts bytes where its
description says characters, and refuses the whole check run past them, so a pull request
whose text is four-byte characters (a fixture's expected answer, an assertion type, quoted
back) would otherwise leave the gate without its check run. The fake GitHub API refuses what
GitHub refuses (fakes/github_contract.py), and the `github` fixture fails the test on it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from action.test_output_injection import gate_farewell
from evalward.action.github import ANNOTATION_BYTES, SUMMARY_BYTES
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

EMOJI = "\U0001f600" * 20_000
"""20,000 characters, 80,000 bytes of UTF-8: within a comment's 65,536 characters, past every
check run limit in bytes."""
CONTAINS = '    - { type: contains, value: "\\0\\e\\x01 ]]> <svg onload=alert(6)>" }\n'


def check_run_request(github: FakeGitHub) -> dict[str, Any]:
    """The one check run evalward asked for, read from the bytes it sent: valid UTF-8."""
    (sent,) = [r for r in github.requests if r.method == "POST" and r.path.endswith("/check-runs")]
    document: dict[str, Any] = json.loads(sent.body.decode("utf-8"))
    return document


def test_an_annotation_quoting_four_byte_characters_is_cut_to_64_kb_of_whole_characters(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    edit = (CONTAINS, f'    - {{ type: contains, value: "{EMOJI}" }}\n')

    run = gate_farewell(repo, github, model, edit, inputs={"check-run": "true"})

    assert run.returncode == 1, run.stdout + run.stderr
    output = check_run_request(github)["output"]
    (annotation,) = [a for a in output["annotations"] if "farewell" in a["title"]]
    message = annotation["message"]
    assert message.startswith(f"contains: '{EMOJI[:100]}") and message.endswith("\U0001f600")
    assert ANNOTATION_BYTES - 4 < len(message.encode("utf-8")) <= ANNOTATION_BYTES
    assert len(output["summary"].encode("utf-8")) <= SUMMARY_BYTES
    (check,) = github.check_runs
    assert check["conclusion"] == "failure"


def test_a_summary_quoting_four_byte_characters_is_cut_to_65535_bytes_of_whole_characters(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    edit = (CONTAINS, f'    - {{ type: "{EMOJI}", value: "Goodbye." }}\n')

    run = gate_farewell(repo, github, model, edit, inputs={"check-run": "true"})

    assert run.returncode == 2, run.stdout + run.stderr
    output = check_run_request(github)["output"]
    summary = output["summary"]
    assert "unknown assertion type" in summary and summary.endswith("\U0001f600")
    assert SUMMARY_BYTES - 4 < len(summary.encode("utf-8")) <= SUMMARY_BYTES
    (check,) = github.check_runs
    assert check["conclusion"] == "cancelled"  # nothing ran: not a pass
