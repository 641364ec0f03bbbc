"""`plan.preflight.static_checks.StaticChecks` on a SQLite playground: each `sql` criterion
prepared on the seeded database (a table or column it lacks named with the nearest, a write
refused), a seed that does not load blamed on its playground, and a fixture's code scorer
compiled, all before any run."""

from __future__ import annotations

import pytest

from evalward.plan.plan import Checkout, PlannedRun
from evalward.plan.preflight.static_checks import StaticChecks
from evalward.resources.reading.locate import Locator
from evalward.rundata.sides import Side
from support.gitrepo import GitRepo
from support.shop import refund_fixture, refunder, refunds_eval, shop

pytestmark = pytest.mark.integration

RUN = PlannedRun(Side.head, "refunds", "refund")


def sql(query: str) -> str:
    return f'{{ type: sql, query: "{query}", rows: [] }}'


def checked(checkout: Checkout) -> StaticChecks:
    checks = StaticChecks(Locator(checkout.resources), {"PATH": ""})
    checks.add(checkout, RUN)
    checks.check()
    return checks


def test_queries_that_prepare_on_the_seed_pass(repo: GitRepo) -> None:
    fixture = refund_fixture("refund", sql("SELECT order_id, amount FROM refunds"))
    checkout = shop(repo, refunder(), refunds_eval("refund"), fixture)

    assert checked(checkout).problems == []


def test_a_table_or_column_the_seed_lacks_is_named_with_the_nearest(repo: GitRepo) -> None:
    fixture = refund_fixture(
        "refund", sql("SELECT order_id FROM refund"), sql("SELECT amuont FROM refunds")
    )
    checkout = shop(repo, refunder(), refunds_eval("refund"), fixture)

    problems = checked(checkout).problems

    assert [p.file for p in problems] == ["shop.yaml", "shop.yaml"]
    table, column = (p.message for p in problems)
    assert "the query fails on the seed 'shop/seed.sql' of playground 'shop'" in table
    assert "no such table: refund (did you mean 'refunds'?)" in table
    assert "no such column: amuont" in column and "amount" in column
    assert problems[0].line is not None and problems[1].line == problems[0].line + 1


def test_a_query_that_would_write_is_refused(repo: GitRepo) -> None:
    fixture = refund_fixture("refund", sql("DELETE FROM refunds"))
    checkout = shop(repo, refunder(), refunds_eval("refund"), fixture)

    (problem,) = checked(checkout).problems

    assert "it would write; a criterion's query may only read" in problem.message


def test_a_recursive_query_reads_and_one_that_feeds_a_write_is_refused(repo: GitRepo) -> None:
    count = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3)"
    fixture = refund_fixture(
        "refund",
        sql(f"{count} SELECT count(*) FROM c"),
        sql(f"{count} INSERT INTO refunds (order_id) SELECT x FROM c"),
    )
    checkout = shop(repo, refunder(), refunds_eval("refund"), fixture)

    (problem,) = checked(checkout).problems

    assert problem.path == "spec.assertions[1].query"
    assert "it would write; a criterion's query may only read" in problem.message


def test_a_seed_that_does_not_load_is_the_playground_s_problem(repo: GitRepo) -> None:
    fixture = refund_fixture("refund", sql("SELECT 1"))
    bad = "CREATE TABLE orders (id TEXT);\nCREATE TABLE broken (;\n"
    checkout = shop(repo, refunder(), refunds_eval("refund"), fixture, files={"shop/seed.sql": bad})

    (problem,) = checked(checkout).problems

    assert problem.message.startswith("playground 'shop': ")
    assert "(the statement at shop/seed.sql:2)" in problem.message
    assert problem.path == "spec.playground.sqlite.seed"


def test_a_fixture_s_code_scorer_that_does_not_compile_is_found(repo: GitRepo) -> None:
    scorer = '{ type: code, language: python, source: "return (" }'
    fixture = refund_fixture("refund", sql("SELECT 1"), scorer)
    checkout = shop(repo, refunder(), refunds_eval("refund"), fixture)

    (problem,) = checked(checkout).problems

    assert "the inline Python scorer does not compile" in problem.message
