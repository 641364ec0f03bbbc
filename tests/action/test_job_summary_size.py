"""The job summary evalward writes fits GitHub's limit for it, however the text it quotes is
written.

The runner uploads `$GITHUB_STEP_SUMMARY` only while the file holds at most 1 MiB
(1,048,576 bytes); past that it refuses the whole summary ("upload aborted, supports content
up to a size of 1024k") and the job shows none. The summary is the comment rendered again with
a longer limit, and what fills it is agent output and definitions' text: in an alphabet of
four bytes a character (mathematical letters, emoji), far fewer characters than the limit's
bytes make a summary GitHub refuses.
"""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.documents import by_label, documents, eval_for
from support.gitrepo import GitRepo
from support.greeter import greeter_agent
from support.suite import provider_env

pytestmark = pytest.mark.hostile

SUMMARY_BYTES = 1_048_576
"""GitHub's limit for one step's job summary: 1 MiB."""
WIDE = "\U0001d538"
"""MATHEMATICAL DOUBLE-STRUCK CAPITAL A: one character, four bytes of UTF-8."""
FIXTURES = 24
CHECKS = 32
"""Per fixture: `notContains` checks whose values the head's answer holds."""
VALUES = [WIDE * 280 + f"{i:02d}" for i in range(CHECKS)]
ANSWER = "".join(VALUES)


def fixture(number: int) -> str:
    checks = "".join(
        f"    - {{ type: notContains, value: {json.dumps(value)} }}\n" for value in VALUES
    )
    return f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: wide-{number:02d}, labels: {{ agent: greeter }} }}
spec:
  targetAgent: greeter
  input: {{ type: prompt, payload: {{ prompt: "Hi {number}" }} }}
  assertions:
{checks}"""


def test_a_summary_of_wide_characters_stays_within_githubs_byte_limit(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    suite = documents(
        eval_for("greeter", by_label("greeter")), *(fixture(n) for n in range(FIXTURES))
    )
    base = repo.commit(
        "a greeter",
        {"agents/greeter.yaml": greeter_agent("openai/gpt-test", "BASE-V1"), "evals/g.yaml": suite},
    )
    repo.branch("feature")
    head = repo.commit(
        "a new prompt", {"agents/greeter.yaml": greeter_agent("openai/gpt-test", "HEAD-V2")}
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello!"))
    model.script(lambda b: "HEAD-V2" in json.dumps(b), text(ANSWER))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"cache": "off"},
    )

    assert run.returncode == 1, run.stderr
    assert f"0/{FIXTURES} fixtures pass on head" in run.summary, run.summary[:2000]
    size = len(run.summary.encode())
    assert size <= SUMMARY_BYTES, (
        f"the job summary is {size:,} bytes ({len(run.summary):,} characters): GitHub refuses "
        f"one over {SUMMARY_BYTES:,} bytes and shows none"
    )
