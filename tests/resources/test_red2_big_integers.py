"""YAML reads `0x` followed by 5,000 hex digits as an int of 20,000 bits (a base that is a
power of two has no digit limit; yaml-rs has none in any base), but Python will not write it
in decimal (more than 4,300 digits: sys.get_int_max_str_digits). A pull request that added an
Eval whose fixture's `equals` assertion held such a number loaded cleanly, ran its agent,
and then ended the whole gate on `json.dumps(a.value)` (scoring/assertions._equals) with an
internal error and a traceback; the same number in a row of a playground's YAML seed ended
it in sqlite_seed._sql_value. Such a number is refused at its YAML line."""

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
PR_EVAL = f"""\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: pr-eval }}
spec:
  targetAgent: greeter
  fixtures: [big]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: big }}
spec:
  targetAgent: greeter
  input: {{ type: prompt, payload: {{ prompt: "Hi!" }} }}
  assertions:
    - {{ type: equals, value: {BIG} }}
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
SEED = f"orders:\n  - {{ id: 1, status: new, meta: {{ n: {BIG} }} }}\n"


@pytest.mark.parametrize(
    "files",
    [{"pr-eval.yaml": PR_EVAL}, {"pr-eval.yaml": PR_SHOP, "shop/seed.yaml": SEED}],
    ids=["equals value", "fixtures seed"],
)
def test_a_number_too_long_to_write_in_decimal_is_no_internal_error(
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
    repo.branch("big")
    repo.commit("an Eval of our own", files)

    done = evalward(
        "run", "--base", "main", "--mock-script", "mock.yaml", "--output-dir",
        str(tmp_path / "out"), cwd=repo.path,
    )  # fmt: skip

    said = done.stdout + done.stderr
    assert "internal error" not in said and "Traceback" not in said, said[-2500:]
    assert done.returncode in (1, 2), said[-2500:]
