"""Which regressed fixtures attribution's variants run: all of them while the budget left
covers a variant of them for each hunk and the proof, else the one whose gate runs made the
fewest calls. The runs through the action and the command line are in
tests/action/test_attribution_gate.py and tests/cli/test_run_attribution.py."""

from __future__ import annotations

import pytest

from evalward.flows.attribution_runs import witnesses

pytestmark = pytest.mark.unit

CALLS = {"refund-a": 4, "refund-b": 1, "greet": 1}


def _cost(fixtures: tuple[str, ...]) -> int:
    return sum(CALLS[f] for f in fixtures)


def test_every_fixture_runs_while_a_variant_of_them_fits_for_each_hunk_and_the_proof() -> None:
    every = ("refund-a", "refund-b", "greet")  # 6 calls a variant; three hunks: four variants

    assert witnesses(every, 3, 24, _cost, False, 24) == ()
    assert witnesses(every, 3, 23, _cost, False, 24) == ("refund-b",)  # the first of the two


def test_the_cheapest_fixture_runs_alone_wherever_it_stands() -> None:
    assert witnesses(("greet", "refund-a"), 2, 5, _cost, False, 24) == ("greet",)
    assert witnesses(("refund-a", "greet"), 2, 5, _cost, False, 24) == ("greet",)


def test_no_budget_one_fixture_or_a_cached_one_hunk_change_run_them_all() -> None:
    every = ("refund-a", "refund-b")

    assert witnesses(every, 5, None, _cost, False, 24) == ()  # no budget: nothing to fit
    assert witnesses(("refund-a",), 5, 0, _cost, False, 24) == ()
    # one hunk: its two proofs are the gate's own runs, which the result cache holds
    assert witnesses(every, 1, 0, _cost, True, 24) == ()
    assert witnesses(every, 1, 0, _cost, False, 24) == ("refund-b",)


def test_a_change_past_the_cap_counts_the_cap_s_variants() -> None:
    every = ("refund-a", "refund-b")  # 5 calls a variant

    assert witnesses(every, 100, 5 * 24, _cost, False, 24) == ()
    assert witnesses(every, 100, 5 * 24 - 1, _cost, False, 24) == ("refund-b",)
