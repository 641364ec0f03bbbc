"""Agent text cannot make evalward's comment reference other issues and pull requests.

GitHub turns `#123`, `GH-123` and `owner/repo#123` in a comment into links and records a
cross-reference on the issue named ("evalward-bot mentioned this pull request"), in this
repository or any other the token's account can see. A head agent that writes such references
(here quoted back by the judge, whose cited quote must come from the trace) would have
evalward's own bot plant backlinks wherever it likes, the way an unescaped `@name` would ping:
`@` is neutralised; the references must be too.
"""

from __future__ import annotations

import re

import pytest

from action.test_secrets_and_injection import judged_comment, outside_code
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo

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
    body = judged_comment(repo, github, model, REFERENCES)
    assert "Judge score 0.20" in body and "widgets" in body, "the verdict is shown"
    markup = outside_code(body)
    for reference, pattern in LIVE.items():
        found = re.search(pattern, markup)
        assert found is None, (
            f"{reference} from agent text is a live cross-reference in the comment: "
            f"{markup[max(0, found.start() - 80) : found.end() + 20]!r}"
        )
