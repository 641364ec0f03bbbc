"""A SQLite playground's seed through the command line: a seed `validate` can tell a run
cannot load (a folder, a NUL character) is refused at the definition's line with exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
import json, sys
json.load(sys.stdin)
print(json.dumps({"type": "final", "content": "done"}))
"""

SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL);
INSERT INTO orders VALUES ('A-1', 25);
"""


def suite(query: str, rows: str) -> str:
    """A command agent's suite whose one fixture has the criterion `query` (expecting `rows`)
    on a playground seeded from shop/seed.sql."""
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: worker }}
spec:
  runtime:
    command: {{ run: [{sys.executable}, agent.py] }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: shop }}
spec:
  targetAgent: worker
  fixtures: [count]
  playground:
    name: shop
    sqlite: {{ seed: shop/seed.sql }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: count }}
spec:
  targetAgent: worker
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions:
    - {{ type: sql, query: "{query}", rows: {rows} }}
"""


SEED_LINE = 16
"""The line of `suite`'s `sqlite: { seed: shop/seed.sql }`."""


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The one problem of a refusal: exit 2, no traceback."""
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "Traceback" not in said and "internal error" not in said, said
    (problem,) = [x.removeprefix("evalward:").strip() for x in done.stderr.splitlines()[1:]]
    return problem


def test_a_seed_that_is_a_folder_is_refused_by_validate_at_the_seed_s_line(
    repo: GitRepo,
) -> None:
    repo.commit(
        "a folder seed",
        {
            "evals.yaml": suite("SELECT count(*) FROM orders", "[[1]]"),
            "agent.py": AGENT,
            "shop/seed.sql/orders.sql": SEED,
        },
    )
    lines = (repo.path / "evals.yaml").read_text().splitlines()
    assert lines[SEED_LINE - 1].strip() == "sqlite: { seed: shop/seed.sql }"

    problem = refusal(evalward("validate", ".", cwd=repo.path))

    assert problem.startswith(f"evals.yaml:{SEED_LINE}:"), problem
    assert problem.endswith(
        "spec.playground.sqlite.seed: playground 'shop': cannot read the seed 'shop/seed.sql': "
        "it is a folder, not a file; name the .sql script or .json/.yaml fixtures file in it"
    ), problem


def test_a_nul_character_in_an_sql_seed_is_the_seed_s_error_at_its_line(repo: GitRepo) -> None:
    repo.commit(
        "a seed with a NUL",
        {
            "evals.yaml": suite("SELECT count(*) FROM orders", "[[1]]"),
            "agent.py": AGENT,
            "shop/seed.sql": SEED + "\x00\n",
        },
    )

    for command in (["validate", "."], ["run", ".", "--no-cache", "--no-history"]):
        problem = refusal(evalward(*command, cwd=repo.path))

        assert problem.startswith(f"evals.yaml:{SEED_LINE}:"), problem
        assert "the seed 'shop/seed.sql' does not load: it holds a NUL character" in problem
        assert problem.endswith("(the NUL character at shop/seed.sql:3)"), problem
