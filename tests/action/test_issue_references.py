"""Agent text cannot make evalward's comment reference other issues and pull requests.

GitHub turns `#123`, `GH-123` and `owner/repo#123` in a comment into links and records a
cross-reference on the issue named ("evalward-bot mentioned this pull request"), in this
repository or any other the token's account can see. A head agent that writes such references
(here quoted back by the judge, whose cited quote must come from the trace) would have
evalward's own bot plant backlinks wherever it likes, the way an unescaped `@name` would ping:
`@` is neutralised; the references must be too.
"""

from __future__ import annotations

import json
import re

import pytest

from action.test_secrets_and_injection import judged_greeting, outside_code
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

REFERENCES = "Closes #1, see GH-2 and acme/widgets#3"
LIVE = {
    "#1": r"(?<![\w\\\u200b&])#1\b",
    "GH-2": r"(?<![\w\\\u200b])GH-2\b",
    "acme/widgets#3": r"acme/widgets#3\b",
}
"""Each reference as GitHub would link it: not broken by a zero-width space or a backslash."""


def test_agent_text_quoted_by_the_judge_plants_no_issue_reference_in_the_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = judged_greeting(repo, github)
    verdict = {
        "score": 0.2,
        "confidence": 0.9,
        "summary": f"The agent wrote: {REFERENCES}",
        "violations": [
            {"rule": "stay on topic", "severity": "high", "evidence_step": 1, "quote": REFERENCES}
        ],
        "what_would_raise_score": REFERENCES,
    }
    model.script(lambda b: "EVALWARD-DATA" in json.dumps(b), text(json.dumps(verdict)))
    model.script(lambda b: True, text(f"Hello! {REFERENCES}"))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"gate-config": "head", "cache": "off"},
    )

    assert run.returncode == 1, run.stderr
    assert model.requests_mentioning("EVALWARD-DATA"), "the judge never ran"
    body = github.comments_on(7)[0]["body"]
    assert "Judge score 0.20" in body and "widgets" in body, "the verdict is shown"
    markup = outside_code(body)
    for reference, pattern in LIVE.items():
        found = re.search(pattern, markup)
        assert found is None, (
            f"{reference} from agent text is a live cross-reference in the comment: "
            f"{markup[max(0, found.start() - 80) : found.end() + 20]!r}"
        )
