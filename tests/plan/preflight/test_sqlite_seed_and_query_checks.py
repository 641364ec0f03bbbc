"""A SQLite playground's seed and `sql` criteria through the command line: a seed `validate`
can tell a run cannot load or read (a folder, a NUL character, a virtual table, a TEMP table
a criterion reads, two rows a run's state would call alike) is refused at the definition's
line with exit 2, and a criterion's query that only reads, a recursive one too, validates
and is answered by the run, within the query's time bound when it never ends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.clirun import evalward, evalward_setting
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

COUNT_TO_3 = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) "
FOREVER = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "


def suite(query: str, rows: str = "[[3]]") -> str:
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


def test_a_table_the_seed_makes_temporary_is_one_a_criterion_cannot_read(
    repo: GitRepo,
) -> None:
    repo.commit(
        "a TEMP table",
        {
            "evals.yaml": suite("SELECT count(*) FROM orders", "[[1]]"),
            "agent.py": AGENT,
            "shop/seed.sql": SEED.replace("CREATE TABLE", "CREATE TEMP TABLE"),
        },
    )

    problem = refusal(evalward("validate", ".", cwd=repo.path))

    assert problem.endswith(
        "spec.assertions[0].query: the query fails on the seed 'shop/seed.sql' of playground "
        "'shop': no such table: orders (the seed makes it a TEMP table, gone once the seed is "
        "loaded: make it with CREATE TABLE)"
    ), problem


def test_a_virtual_table_the_seed_makes_is_refused_at_the_seed_s_line(repo: GitRepo) -> None:
    repo.commit(
        "a virtual table",
        {
            "evals.yaml": suite("SELECT count(*) FROM orders", "[[1]]"),
            "agent.py": AGENT,
            "shop/seed.sql": SEED + "CREATE VIRTUAL TABLE notes USING fts5(body);\n",
        },
    )

    problem = refusal(evalward("validate", ".", cwd=repo.path))

    assert problem.startswith(f"evals.yaml:{SEED_LINE}:"), problem
    assert problem.endswith(
        "the seed 'shop/seed.sql' makes the virtual table 'notes', which a run's state, read "
        "with nothing but reading allowed, cannot read; make it an ordinary table (CREATE TABLE)"
    ), problem


FIXTURES_SEED = """\
orders:
  - { id: 1, amount: 25 }
  - { id: 2, amount: 30 }
  - { id: "1", amount: 40 }
"""


@pytest.mark.parametrize(
    ("seed", "text", "where"),
    [
        ("shop/seed.yaml", FIXTURES_SEED, " (the row at shop/seed.yaml:4)"),
        (
            "shop/seed.sql",
            "CREATE TABLE orders (id PRIMARY KEY, amount REAL);\n"
            "INSERT INTO orders VALUES (1, 25), ('1', 40);\n",
            "",
        ),
    ],
    ids=["fixtures", "sql"],
)
def test_two_rows_a_run_s_state_would_call_alike_are_refused_before_any_run(
    repo: GitRepo, seed: str, text: str, where: str
) -> None:
    """SQLite keeps 1 and '1' apart in a column of no type; a run's state calls both rows
    '1' and fails every run: `validate` and `run` refuse the seed first, at its row."""
    evals = suite("SELECT count(*) FROM orders", "[[2]]").replace("shop/seed.sql", seed)
    repo.commit("a seed keyed 1 and '1'", {"evals.yaml": evals, "agent.py": AGENT, seed: text})

    for command in (["validate", "."], ["run", ".", "--no-cache", "--no-history"]):
        problem = refusal(evalward(*command, cwd=repo.path))

        assert problem.startswith(f"evals.yaml:{SEED_LINE}:"), problem
        assert problem.endswith(
            f"the seed {seed!r}: its table 'orders' holds two rows labelled '1' (keys of other "
            "types, as 1 and '1', or a row without one at that place): a state criterion could "
            f"not tell them apart; give each row a key of one type{where}"
        ), problem


def test_a_recursive_query_reads_and_is_answered(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit(
        "a recursive criterion",
        {
            "evals.yaml": suite(COUNT_TO_3 + "SELECT count(*) FROM c"),
            "agent.py": AGENT,
            "shop/seed.sql": SEED,
        },
    )
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 0, done.stdout + done.stderr

    out = tmp_path / "out"
    done = evalward("run", ".", "--no-cache", "--output-dir", str(out), cwd=repo.path)

    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = json.loads((out / "results.json").read_text())["fixtures"]
    assert result["status"] == "pass", result


BOUND = 2.0
"""The query bound this test runs evalward with, in place of QUERY_SECONDS (10 s): what it
proves is that the bound holds."""


def test_a_recursive_query_that_never_ends_fails_its_criterion_within_the_bound(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.commit(
        "a criterion that never ends",
        {
            "evals.yaml": suite(FOREVER + "SELECT count(*) FROM c"),
            "agent.py": AGENT,
            "shop/seed.sql": SEED,
        },
    )
    out = tmp_path / "out"
    args = ("run", ".", "--no-cache", "--output-dir", str(out))
    try:
        done = evalward_setting(  # without the bound, for ever
            "evalward.runtime.playground.sqlite_read.QUERY_SECONDS", BOUND, *args,
            cwd=repo.path, limit=300,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("a criterion's recursive query had no time bound: the run never ended")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    (result,) = json.loads((out / "results.json").read_text())["fixtures"]
    assert result["status"] == "error", result
    assert f"the query did not finish within {BOUND:g} s" in json.dumps(result), result
