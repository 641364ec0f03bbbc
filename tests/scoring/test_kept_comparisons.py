"""A job's kept documents compared record by record once: the differences a state criterion
finds with the job's `KeptPairs` are the ones it finds without, run after run, whatever the
records hold (`true` against `1`, `1` against `1.0`, keys in another order), and nothing of
a run's own state is held after it."""

from __future__ import annotations

import copy
import gc
import json
import random
import weakref
from typing import Any

import pytest

from evalward.resources.checks.state_assertions import StateSnapshotAssertion
from evalward.rundata.playground_state import (
    Derived,
    KeptPairs,
    PlaygroundRun,
    PlaygroundState,
    bounded_json,
    canonical,
    derived,
    shared_with,
    state_changes,
)
from evalward.rundata.results import Status
from evalward.scoring.state import check_state, differences

pytestmark = pytest.mark.unit

VALUES: list[Any] = [0, 1, 1.0, True, False, None, "1", "", [], {}, [1], {"a": 1}]


def record(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    keys = rng.sample(["a", "b", "c", "d", "e", "f"], rng.randint(1, 5))
    return {
        key: (record(rng, depth + 1) if depth < 2 and rng.random() < 0.2 else rng.choice(VALUES))
        for key in keys
    }


def twin(rng: random.Random, value: Any) -> Any:
    """`value` as an expected snapshot might hold it: equal, or differing by a little that
    `==` alone would miss (`true` for `1`), or keys in another order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: twin(rng, value[key]) for key in keys}
    roll = rng.random()
    if roll < 0.05 and isinstance(value, bool):
        return int(value)  # `1` for `true`
    if roll < 0.05 and type(value) is int and value in (0, 1):
        return bool(value)
    if roll < 0.08 and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if roll < 0.1:
        return rng.choice(VALUES)
    return copy.deepcopy(value)


def changed(rng: random.Random, kept: dict[str, Any], derive: bool = False) -> dict[str, Any]:
    """A run's state as a delta leaves it: the kept document with a few records replaced,
    added or removed, every other record shared with it (`derive`: its orders a `Derived`
    of the kept ones, as a SQLite database read by what changed gives them)."""
    state = dict(kept)
    orders = Derived(kept["orders"]) if derive else dict(kept["orders"])
    keys: set[str] = set()
    for _ in range(rng.randint(0, 3)):
        key = rng.choice(list(orders))
        roll = rng.random()
        if roll < 0.6:
            orders[key] = dict(orders[key]) | {"status": rng.choice(VALUES)}
        elif roll < 0.8:
            key = f"new-{rng.randint(0, 9)}"
            orders[key] = record(rng)
        else:
            del orders[key]
        keys.add(key)
    state["orders"] = derived(orders, keys) if isinstance(orders, Derived) else orders
    return state


def test_differences_with_kept_pairs_are_the_differences_without() -> None:
    rng = random.Random(7)
    for _ in range(20):
        kept = {"orders": {f"W{n:03}": record(rng) for n in range(80)}, "users": record(rng)}
        expected = twin(rng, kept)
        pairs = KeptPairs()
        pairs.keep(kept)
        pairs.keep(expected)
        for run in range(8):  # runs of one job, each with its own state
            state = changed(rng, kept, derive=run % 2 == 1)
            plain = state | {"orders": dict(state["orders"])}
            assert list(differences(expected, state, (), pairs)) == list(
                differences(expected, plain)
            )
            assert list(differences(state, expected, (), pairs)) == list(
                differences(plain, expected)
            )
            assert list(differences(kept, state, (), pairs)) == list(differences(kept, plain))
            assert state_changes(kept, state) == state_changes(kept, plain)
            assert state_changes(state, kept) == state_changes(plain, kept)


def test_a_criterion_decides_the_same_and_holds_nothing_of_a_run() -> None:
    kept = {"orders": {f"W{n:03}": {"paid": 1, "items": [1, 2]} for n in range(200)}}
    expected = json.loads(json.dumps(kept))
    expected["orders"]["W007"]["paid"] = True  # equal by `==`, not as JSON
    snapshot = StateSnapshotAssertion(type="stateSnapshot", at="service", value=expected)
    pairs = KeptPairs()
    pairs.keep(kept)
    verdicts = []
    for run in range(3):
        state = changed(random.Random(run), kept) if run else dict(kept)

        class Held(list[int]):  # a run's own object, to see whether it is let go
            pass

        mine = Held([1, 2])
        state["orders"] = dict(state["orders"]) | {"W100": {"paid": 1, "items": mine}}
        gone = weakref.ref(mine)
        final = PlaygroundState("crm", {"service": state})
        playground = PlaygroundRun(PlaygroundState("crm", {"service": kept}), final, pairs)
        verdicts.append(check_state(snapshot, playground))
        without = PlaygroundRun(PlaygroundState("crm", {"service": kept}), final)
        assert check_state(snapshot, without) == verdicts[-1]
        del state, mine, final, playground, without
        gc.collect()
        assert gone() is None
    assert all(status is Status.failed for status, _ in verdicts)
    assert all("service.orders.W007.paid" in why for _, why in verdicts)


def test_a_state_read_whole_shares_only_the_records_alike_the_kept_ones() -> None:
    """A changed state read whole, its unchanged records replaced by the kept document's:
    it still reads as what was read (`true` stays `true` where the kept one holds `1`), and
    the kept document is not changed."""
    rng = random.Random(11)
    for _ in range(30):
        kept = {"orders": {f"W{n:03}": record(rng) for n in range(60)}, "users": record(rng)}
        frozen = json.dumps(kept, sort_keys=True)
        read = twin(rng, changed(rng, kept))  # parsed anew: no object shared
        read = json.loads(json.dumps(read))
        expected = json.dumps(read, sort_keys=True)
        shared = shared_with(read, kept)
        assert json.dumps(shared, sort_keys=True) == expected
        assert json.dumps(kept, sort_keys=True) == frozen
        for label, row in shared.get("orders", {}).items():
            if row is kept["orders"].get(label):
                assert json.dumps(row, sort_keys=True) == json.dumps(
                    json.loads(expected)["orders"][label], sort_keys=True
                )


def test_a_records_text_made_from_kept_records_is_the_text_made_whole() -> None:
    """The run's record of its state (its first characters of canonical text) is the same
    text whether kept records' texts are reused or every record is written anew."""
    rng = random.Random(5)
    for trial in range(40):
        kept = {
            "orders": {f"W{n:03}": record(rng) for n in range(40)},
            "users": record(rng),
            "notes": ["line\none", "\u00fc", {"b": [1, 2.5]}],
        }
        pairs = KeptPairs()
        pairs.keep(kept)
        for run in range(4):
            made = changed(random.Random(trial * 10 + run), kept, derive=run % 2 == 1)
            state = {"db": made, "z": {"x\n": None}}
            whole = canonical(state)
            for limit in (0, 50, 700, 3000, 10**6):
                made, over = pairs.made_past(state, limit)
                assert whole.startswith(made) and over == (len(whole) > limit)
                assert len(made) > limit or made == whole
                assert bounded_json(state, limit, kept=pairs) == bounded_json(state, limit)


def test_a_deep_copy_of_a_derived_table_is_a_plain_one_that_copies_nothing_of_its_base() -> None:
    base = {"W1": {"paid": 1}, "W2": {"paid": 0}}
    table = Derived(base)
    table["W2"] = {"paid": 2}
    table.settle({"W2"})
    made = copy.deepcopy({"orders": table, "again": table})
    assert type(made["orders"]) is dict and made["orders"] == table
    assert made["again"] is made["orders"]  # one object copied once, as deepcopy does
    assert made["orders"]["W1"] is not base["W1"]
