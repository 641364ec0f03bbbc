"""`plan.reach`: what a side's runs read of a commit, so its checkout holds exactly that: the
files an agent's `watch` globs match (not their folder's others), its playground's seed, and
the whole commit once an agent runs a program that names no `watch`; and each agent's own,
which its working copy holds: what it reads, never what only its playground is made from."""

from __future__ import annotations

from functools import partial

import pytest

from evalward.git import Git
from evalward.plan.plan import PlannedRun
from evalward.plan.reach import Reach, agents_reach, joined, reach_of_each, world_reach
from evalward.rundata.sides import Side
from support.documents import labelled_suite
from support.gitrepo import GitRepo
from support.shop import refund_fixture, refunder, refunds_eval, shop

pytestmark = pytest.mark.integration

SQL = '{ type: sql, query: "SELECT order_id FROM refunds", rows: [[A-1]] }'
RUN = PlannedRun(Side.head, "refunds", "refund")


def test_an_agent_s_watched_files_and_its_playground_s_seed_are_read(repo: GitRepo) -> None:
    checkout = shop(repo, refunder(), refunds_eval("refund"), refund_fixture("refund", SQL))
    listing = partial(Git(repo.path).under, repo.head())  # as the base's checkout lists

    reach = agents_reach(checkout.resources, [RUN], listing)

    assert reach.whole == ""
    assert reach.checkout == {"tools/refund.py", "shop/seed.sql"}


def test_a_program_without_watch_needs_the_whole_commit(repo: GitRepo) -> None:
    checkout = shop(repo, refunder(watch=""), refunds_eval("refund"), refund_fixture("refund", SQL))

    reach = agents_reach(checkout.resources, [RUN], lambda folders: [])

    assert reach.whole == "agent 'refunder' runs a program and names no `watch`"
    assert reach.checkout is None


def test_runs_of_definitions_the_commit_lacks_read_nothing(repo: GitRepo) -> None:
    checkout = shop(repo, refunder(), refunds_eval("refund"), refund_fixture("refund", SQL))
    elsewhere = [PlannedRun(Side.head, "gone", "refund"), PlannedRun(Side.head, "refunds", "new")]

    reach = agents_reach(checkout.resources, elsewhere, lambda folders: [])

    assert reach == Reach()


def test_the_base_branch_s_playground_is_read_for_a_fixture_the_pull_request_adds(
    repo: GitRepo,
) -> None:
    gating = shop(repo, refunder(), refunds_eval("refund"), refund_fixture("refund", SQL))
    added = PlannedRun(Side.head, "refunds", "added-by-the-pull-request")

    reach = world_reach(gating.resources, [added, PlannedRun(Side.head, "gone", "refund")])

    assert reach.checkout == {"shop/seed.sql"}


NOTER = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: noter }
spec:
  runtime: { command: [python3, notes/notes.py] }
  watch: [tools/*.txt, notes/**]
"""


def test_each_agent_reads_only_what_its_own_runs_read(repo: GitRepo) -> None:
    """The refunder's reach holds none of the noter's files, nor the noter's the refunder's
    seed: an agent's copy lacks a file only the other names (the plan's, together, has all),
    and the seed its playground is made from, which evalward reads, not the agent."""
    notes = labelled_suite("noter", "note", "hi", "{ type: contains, value: ok }")
    checkout = shop(
        repo,
        refunder(),
        refunds_eval("refund"),
        refund_fixture("refund", SQL),
        NOTER,
        notes,
        files={"notes/notes.py": "print()\n"},
    )
    runs = [RUN, PlannedRun(Side.head, "noter-eval", "note")]
    listing = partial(Git(repo.path).under, repo.head())

    each = reach_of_each(checkout.resources, runs, listing)

    assert {name: reach.copied for name, reach in each.items()} == {
        "refunder": frozenset({"tools/refund.py"}),
        "noter": frozenset({"tools/notes.txt", "notes/notes.py"}),
    }
    together = agents_reach(checkout.resources, runs, listing)
    assert joined(each.values()).checkout == together.checkout
    assert "shop/seed.sql" in together.made_from


def test_an_agent_without_watch_gets_the_whole_commit_and_the_others_their_own(
    repo: GitRepo,
) -> None:
    checkout = shop(
        repo,
        refunder(),
        refunds_eval("refund"),
        refund_fixture("refund", SQL),
        NOTER.replace("  watch: [tools/*.txt, notes/**]\n", ""),
        labelled_suite("noter", "note", "hi", "{ type: contains, value: ok }"),
    )
    runs = [RUN, PlannedRun(Side.head, "noter-eval", "note")]

    each = reach_of_each(checkout.resources, runs, partial(Git(repo.path).under, repo.head()))

    assert each["noter"].copied is None
    assert each["refunder"].copied == frozenset({"tools/refund.py"})
    assert joined(each.values()).whole == "agent 'noter' runs a program and names no `watch`"


def test_the_first_reason_for_the_whole_commit_is_kept() -> None:
    reach = Reach({"a"})

    reach.everything("first")
    reach.everything("second")

    assert reach.whole == "first" and reach.checkout is None
