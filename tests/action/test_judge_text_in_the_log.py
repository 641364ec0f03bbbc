"""A judge's words reach the job log inside evalward's own `::error` annotation with their
control characters shown by name, not as they are.

The agent's own output is shown with controls by name wherever it is logged
(test_output_injection); the judge's summary, which the agent's words steer, is printed raw in
the failing fixture's `::error file=…::` line: an ESC sequence there recolours or rewrites what
the log viewer shows (and a VT or SOH rides along), where the annotation sent to the check run
shows the same text as `<U+001B>`.
"""

from __future__ import annotations

import pytest

from action.test_judge_text_in_junit import CONTROLS, judged_run
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile


def test_control_characters_in_a_judges_words_do_not_reach_the_log(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    run = judged_run(repo, github, model, CONTROLS)

    annotation = [line for line in run.stdout.splitlines() if "judge score 0.20" in line]
    assert annotation, "the failing judge is annotated in the log"
    for stream, log in (("stdout", run.stdout), ("stderr", run.stderr)):
        for control in ("\x1b", "\x01", "\x0b"):
            assert control not in log, f"{control!r} from the judge's words reaches {stream}"
