"""Values a pull request's YAML may write that no JSON holds, which an assertion or a seed
then writes as JSON: each is refused at its YAML line, never an internal error.

- An integer too long for Python to write in decimal (more than 4,300 digits:
  sys.get_int_max_str_digits): YAML reads `0x` and 5,000 hex digits as an int of 20,000
  bits (a power-of-two base has no digit limit; yaml-rs has none in any base). In an Eval's
  `equals` value it ended the gate on `json.dumps(a.value)` (scoring/assertions._equals) with
  a traceback; in a row of a playground's YAML seed, in sqlite_seed._sql_value.
- A value tagged with one of YAML 1.1's explicit tags: `!!binary` gave bytes, `!!set` a set,
  `!!timestamp` a date, and the same `json.dumps` ended the gate.
- `.inf` where a resource reads a number bounded below only (a weight, a timeout); `true`
  where it reads a number, which pydantic took as 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture

pytestmark = pytest.mark.hostile

BIG = "0x" + "f" * 5000
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
  fixtures: [valued]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: valued }
spec:
  targetAgent: greeter
  input: { type: prompt, payload: { prompt: "Hi!" } }
  assertions:
    - { type: equals, value: VALUE }
"""


PR_SHOP = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: pr-eval }
spec:
  targetAgent: greeter
  fixtures: [shopping]
  playground:
    name: shop
    sqlite: { seed: shop/seed.yaml }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: shopping }
spec:
  targetAgent: greeter
  input: { type: prompt, payload: { prompt: "Hi!" } }
  assertions:
    - { type: stateValue, at: db.orders.1.status, equals: new }
"""
TAGGED = ["!!binary aGVsbG8=", "!!set {x, y}", "!!timestamp 2020-01-01"]
SEED = f"orders:\n  - {{ id: 1, status: new, meta: {{ n: {BIG} }} }}\n"


@pytest.mark.parametrize(
    "files",
    [
        {"pr-eval.yaml": PR_EVAL.replace("VALUE", BIG)},
        {"pr-eval.yaml": PR_SHOP, "shop/seed.yaml": SEED},
        *({"pr-eval.yaml": PR_EVAL.replace("VALUE", tagged)} for tagged in TAGGED),
    ],
    ids=["a long number as a value", "a long number in a seed", "binary", "set", "timestamp"],
)
def test_a_value_no_json_holds_is_no_internal_error(
    repo: GitRepo, tmp_path: Path, files: dict[str, str]
) -> None:
    suite = documents(
        greeter_agent("openai/gpt-4.1-mini"),
        greeter_eval(),
        greeting_fixture("{ type: contains, value: Hello }"),
    )
    repo.commit(
        "a greeter", {"greeter.yaml": suite, "mock.yaml": MOCK, ".gitignore": ".evalward/\n"}
    )
    repo.branch("valued")
    repo.commit("an Eval of our own", files)

    done = evalward(
        "run", "--base", "main", "--mock-script", "mock.yaml", "--output-dir",
        str(tmp_path / "out"), cwd=repo.path,
    )  # fmt: skip

    said = done.stdout + done.stderr
    assert "internal error" not in said and "Traceback" not in said, said[-2500:]
    assert done.returncode == 2, said[-2500:]
    where = "pr-eval.yaml:9:" if "shop/seed.yaml" in files else "pr-eval.yaml:15:"
    assert where in said, said[-2500:]


@pytest.mark.parametrize(
    ("weight", "execution", "problem"),
    [
        (".inf", "{}", "spec.assertions[0].weight: expected a finite number; found inf"),
        (
            "1",
            "{ timeoutSeconds: .inf }",
            "spec.execution.timeoutSeconds: expected a finite number; found inf",
        ),
        ("true", "{}", "spec.assertions[0].weight: expected a valid number; found true"),
        (
            "1",
            "{ timeoutSeconds: false }",
            "spec.execution.timeoutSeconds: expected a valid number; found false",
        ),
        ("1", "{ parallel: 2.0 }", "spec.execution.parallel: expected a valid integer; found 2.0"),
    ],
    ids=["infinite-weight", "infinite-timeout", "true-weight", "false-timeout", "whole-float"],
)
def test_a_number_no_json_holds_or_not_written_as_one_is_refused_at_its_line(
    repo: GitRepo, tmp_path: Path, weight: str, execution: str, problem: str
) -> None:
    # YAML's `.inf` is a float no JSON holds: an infinite weight made its fixture's score NaN
    # (shown as 0.00 on a passing run) and results.json held `Infinity`; pydantic took `true`
    # as 1 where a number is expected (a weight or a timeout of 1, saying nothing) and `2.0`
    # as the integer 2
    suite = documents(
        greeter_agent("openai/gpt-4.1-mini"),
        greeter_eval(f"execution: {execution}"),
        greeting_fixture(f"{{ type: contains, value: Hello, weight: {weight} }}"),
    )
    repo.commit("a greeter", {"greeter.yaml": suite, "mock.yaml": MOCK})

    done = evalward(
        "run", "--mock-script", "mock.yaml", "--no-history", "--output-dir", str(tmp_path / "out"),
        cwd=repo.path,
    )  # fmt: skip

    said = done.stdout + done.stderr
    assert "internal error" not in said and "Traceback" not in said, said[-2500:]
    assert done.returncode == 2, said[-2500:]
    assert problem in said, said[-2500:]
    assert "greeter.yaml:" in said, said[-2500:]
