"""An Eval's name in the comment's counts line is written as every other name in the comment
is: escaped, never live markdown.

The counts line leads with what blocks an Eval beside its fixtures' own results ("<eval>
blocked by its pooled sequential test: …"), and it is printed into the comment as it is,
where every other place a name appears goes through the `md` filter. A pull request may add
an Eval and name it `www.evil.example` (a valid name: lower case, dots): at the start of the
counts line GitHub turns it into a link to http://www.evil.example, while the headline and the
table show the same name broken (`www` + a zero-width space + `.`).
"""

from __future__ import annotations

import re

import pytest

from action.test_adaptive_story import DROP, EVAL, change
from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

NAME = "www.evil.example"


def test_an_eval_named_like_an_address_is_no_link_in_the_counts_line(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    base, head = change(repo, DROP, EVAL.replace("helper-eval", NAME))
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    done = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"mock-script": "mock.yaml", "cache": "off"},
    )

    assert done.returncode == 1, done.stdout + done.stderr
    body = github.comments_on(7)[0]["body"]
    counts = next(line for line in body.splitlines() if " fixtures pass on head" in line)
    assert "blocked by its pooled sequential test" in counts, counts
    assert "www\u200b.evil" in body, "the headline and the table break the name"
    live = re.search(r"(?<![\w\u200b])www\.evil\.example", counts)
    assert live is None, f"the Eval's name is a live link in the counts line: {counts!r}"
