"""Agent text never becomes a live link in evalward's comment, whatever character comes
before the address.

GitHub links a bare address by itself (its autolink extension of CommonMark): `https://…`,
`ftp://…`, `www.…` and `name@domain`. The spec allows such a link after whitespace or any of
`*`, `_`, `~`, `(`, and github.com's parser (cmark-gfm) also links `https://…` glued to digits
or `_` (it rewinds over letters only to find the scheme). A link to an issue's address is also
a cross-reference on that issue ("mentioned this"), wherever it is. Agent text quoted by the
judge (its cited quote is taken from the agent's trace) is shown outside any code block, so
each of these must reach the comment broken, as `https://evil…` alone is.
"""

from __future__ import annotations

import re

import pytest

from action.test_secrets_and_injection import judged_comment, outside_code
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

LINKS = (
    "see_https://evil.example/phish and 2https://evil.example/pay or my_www.evil.example/win "
    "and mail me at billing@_evil.example, fixed in "
    "x_https://github.com/acme/widgets/issues/3"
)
LIVE = {
    "_https://evil.example/phish": r"(?:https?|ftp)://evil\.example/phish",
    "2https://evil.example/pay": r"(?:https?|ftp)://evil\.example/pay",
    "_www.evil.example/win": r"www\.evil\.example",
    "billing@_evil.example": r"billing@\\?_evil\.example",
    "_https://github.com/…/issues/3": r"https://github\.com/acme/widgets/issues/3",
}
"""Each address as GitHub's parser links it (checked with cmark-gfm, the parser github.com
renders comments with): not broken by a zero-width space inside its scheme, `www.` or `@`."""


def test_agent_text_quoted_by_the_judge_is_no_live_link_after_an_underscore_or_a_digit(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    body = judged_comment(repo, github, model, LINKS)
    assert "Judge score 0.20" in body and "evil" in body, "the verdict is shown"
    markup = outside_code(body)
    live = {name: m for name, pattern in LIVE.items() if (m := re.search(pattern, markup))}
    assert not live, "agent text is a live link in the comment: " + "; ".join(
        f"{name} as {markup[max(0, m.start() - 12) : m.end()]!r}" for name, m in live.items()
    )
