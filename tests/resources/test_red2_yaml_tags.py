"""evalward reads YAML 1.2's core schema, whose values are JSON's; its loader honoured YAML
1.1's explicit tags too: `!!binary` gave bytes, `!!set` a set, `!!timestamp` a date. A pull
request that adds an Eval whose fixture's `equals` value carries one loaded cleanly, ran its
agent, and then ended the whole gate on `json.dumps(a.value)` (scoring/assertions._equals)
with an internal error and a traceback. Such a value is refused at its YAML line."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture

pytestmark = pytest.mark.hostile

MOCK = """\
replies:
  - match: { agent: greeter }
    always: { content: "Hello there" }
"""
PR_EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: pr-eval }
spec:
  targetAgent: greeter
  fixtures: [tagged]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: tagged }
spec:
  targetAgent: greeter
  input: { type: prompt, payload: { prompt: "Hi!" } }
  assertions:
    - { type: equals, value: VALUE }
"""


@pytest.mark.parametrize(
    "value",
    ["!!binary aGVsbG8=", "!!set {x, y}", "!!timestamp 2020-01-01"],
    ids=["binary", "set", "timestamp"],
)
def test_a_tagged_value_that_is_not_json_is_no_internal_error(
    repo: GitRepo, tmp_path: Path, value: str
) -> None:
    suite = documents(
        greeter_agent("openai/gpt-4.1-mini"),
        greeter_eval(),
        greeting_fixture("{ type: contains, value: Hello }"),
    )
    repo.commit(
        "a greeter", {"greeter.yaml": suite, "mock.yaml": MOCK, ".gitignore": ".evalward/\n"}
    )
    repo.branch("tagged")
    repo.commit("an Eval of our own", {"pr-eval.yaml": PR_EVAL.replace("VALUE", value)})

    done = evalward(
        "run", "--base", "main", "--mock-script", "mock.yaml", "--output-dir",
        str(tmp_path / "out"), cwd=repo.path,
    )  # fmt: skip

    said = done.stdout + done.stderr
    assert "internal error" not in said and "Traceback" not in said, said[-2500:]
    assert done.returncode in (1, 2), said[-2500:]
