"""A pull request whose definitions do not load gets a comment GitHub takes, however much the
problems quote.

GitHub refuses a comment body over 65,536 characters (422) and keeps the one it had. Each
problem quotes what the pull request wrote (an assertion type, a key, a path), and escaping
makes a quoted character up to fourteen (a `$` is `<span>$</span>`): fifty problems of a
few hundred dollars each were a comment GitHub refused, so the pull request's comment still
said what an earlier push passed with while its head did not load.
"""

from __future__ import annotations

import pytest

from fakes.github_api import WORKFLOW_BOT, FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env

pytestmark = pytest.mark.hostile

MARKER = "<!-- evalward-comment:evals/gate -->"
EARLIER = f"{MARKER}\n## ✅ evalward: every affected Eval passes\n"
"""What the gate of an earlier, harmless push of the pull request commented."""


def _fixture(types: int) -> str:
    """A fixture whose every assertion has an unknown type of 450 dollars: a problem each."""
    items = "".join(
        f'    - {{ type: "{"$" * 450}{n}", value: "Goodbye." }}\n' for n in range(types)
    )
    return f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: farewell }}
spec:
  targetAgent: support-bot
  input: {{ type: prompt, payload: {{ prompt: "Bye" }} }}
  assertions:
{items}"""


def test_problems_that_escape_to_more_than_the_limit_still_replace_the_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, _ = make_pr(repo, github)
    head = repo.commit("a broken fixture", {"evals/fixtures/farewell.yaml": _fixture(60)})
    github.pulls[7].head_sha = head
    github.add_comment(7, EARLIER, author=WORKFLOW_BOT)
    model.script(lambda b: True, text("Goodbye."))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
    )

    assert run.returncode == 2, run.stdout + run.stderr
    assert github.contract_violations == [], "GitHub refused the comment"
    (comment,) = github.comments_on(7)
    body = comment["body"]
    assert len(body) <= 65_536, len(body)
    assert "every affected Eval passes" not in body, "the earlier push's pass still stands"
    assert body.startswith(f"{MARKER}\n## ❌ evalward: this pull request"), body[:200]
    assert "do not load" in body
    assert "unknown assertion type" in body, "the first problems are shown"
    assert "60 problems" in body and "the job's log lists every one" in body, body[-600:]
    shown = [line for line in body.splitlines() if line.startswith("- ") and "unknown" in line]
    assert f"60 problems; the first {len(shown)}:" in body
    # every one not shown is counted: those past the room, and those past the first 50
    assert f"- … and {60 - len(shown)} more, cut to fit GitHub's size limit" in body
    assert run.summary.count("unknown assertion type") > 50, "the job summary lists the first 50"
    assert (run.stdout + run.stderr).count("unknown assertion type") >= 60, "the log, all"
