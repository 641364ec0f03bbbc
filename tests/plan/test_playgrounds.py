"""`plan.playgrounds`: which playground a run gets (a fixture's own over its Eval's), from which
tree (the base branch's for a definition it has), what a cache key covers of it (its seed's
content), a seed the commit lacks, and state criteria with no playground to read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evalward.files.committed import RepoFiles
from evalward.plan.plan import Checkout, Plan, PlannedRun
from evalward.plan.playgrounds import (
    PlaygroundKeys,
    defined_playground,
    missing_seeds,
    source_of,
    state_without_playground,
    uses_playgrounds,
    world_names,
)
from evalward.rundata.sides import Side
from support.documents import eval_for
from support.gitrepo import GitRepo
from support.shop import refund_fixture, refunder, refunds_eval, shop

pytestmark = pytest.mark.integration

SQL = '{ type: sql, query: "SELECT order_id FROM refunds", rows: [[A-1]] }'
OWN = "playground: { name: own, sqlite: { seed: shop/own.sql } }"
EVAL_RUN = PlannedRun(Side.head, "refunds", "refund")
OWN_RUN = PlannedRun(Side.head, "refunds", "own")


def suite(
    repo: GitRepo, seed: str = "shop/own.sql", files: dict[str, str] | None = None
) -> Checkout:
    """The shop, its `own` fixture with a playground of its own seeded from `seed`."""
    return shop(
        repo,
        refunder(),
        refunds_eval("refund, own"),
        refund_fixture("refund", SQL),
        refund_fixture("own", SQL, playground=OWN.replace("shop/own.sql", seed)),
        files=files,
    )


def test_a_fixture_s_own_playground_wins_over_its_eval_s(repo: GitRepo) -> None:
    resources = suite(
        repo, files={"shop/own.sql": "CREATE TABLE refunds (order_id TEXT);"}
    ).resources

    eval_name, _, kind = defined_playground(resources, "refunds", "refund") or ("", None, "")
    own_name, own, own_kind = defined_playground(resources, "refunds", "own") or ("", None, "")

    assert (eval_name, kind) == ("shop", "Eval")
    assert (own_name, own_kind) == ("own", "EvalFixture")
    assert own is not None and own.sqlite is not None and own.sqlite.seed == "shop/own.sql"
    assert uses_playgrounds(Plan(runs=[EVAL_RUN]), resources, Side.head)
    assert not uses_playgrounds(Plan(runs=[EVAL_RUN]), resources, Side.base)


def test_a_definition_of_the_base_branch_is_made_from_its_tree(
    repo: GitRepo, tmp_path: Path
) -> None:
    checkout = suite(repo, files={"shop/own.sql": "CREATE TABLE refunds (order_id TEXT);"})
    world = tmp_path / "base-branch"
    gated = dataclasses.replace(
        checkout,
        world=world,
        world_names=frozenset({"Eval/refunds"}),
        world_files=RepoFiles.working_tree(world),
    )

    from_base = source_of(gated, EVAL_RUN)
    own = source_of(gated, OWN_RUN)

    assert from_base is not None and from_base.world == world and from_base.name == "shop"
    assert own is not None and own.world == repo.path  # the pull request's own fixture
    assert world_names(checkout.resources) == {
        "EvalFixture/refund",
        "EvalFixture/own",
        "Eval/refunds",
    }


def test_a_cache_key_covers_the_seed_s_content(repo: GitRepo) -> None:
    first = suite(repo, files={"shop/own.sql": "CREATE TABLE refunds (order_id TEXT);"})
    key = PlaygroundKeys().of(first, OWN_RUN)
    again = PlaygroundKeys().of(first, OWN_RUN)
    repo.commit("reseed", {"shop/own.sql": "CREATE TABLE refunds (id INTEGER);"})
    changed = PlaygroundKeys().of(first, OWN_RUN)

    assert key is not None and list(key["files"]) == ["shop/own.sql"]
    assert not key["files"]["shop/own.sql"].startswith("unreadable")
    assert key["definition"]["name"] == "own"
    assert key == again
    assert changed is not None and changed["files"] != key["files"]
    assert changed["definition"] == key["definition"]


def test_a_seed_the_commit_lacks_is_named(repo: GitRepo) -> None:
    checkout = suite(repo, seed="shop/missing.sql")
    source = source_of(checkout, OWN_RUN)
    assert source is not None

    missing = missing_seeds(source)

    assert [(part, seed) for part, seed, _ in missing] == [("sqlite", "shop/missing.sql")]
    committed = source_of(checkout, EVAL_RUN)
    assert committed is not None and missing_seeds(committed) == []


def test_state_criteria_without_a_playground_are_found(repo: GitRepo) -> None:
    bare = eval_for("refunder", "fixtures: [refund]").replace("refunder-eval", "bare")
    checkout = shop(
        repo,
        refunder(),
        bare,
        refunds_eval("refund"),
        refund_fixture("refund", "{ type: contains, value: done }", SQL),
    )

    assert state_without_playground(checkout.resources, "bare", "refund") == [1]
    assert state_without_playground(checkout.resources, "refunds", "refund") == []
