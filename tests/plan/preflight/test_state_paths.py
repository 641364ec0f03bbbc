"""Whether a state criterion's path is one a playground's state can hold, as far as its seeds
and its provisioned state tell (`plan/preflight/state_paths.py`): a warning naming the nearest
name where one is close, nothing where the rest is the run's to make."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from evalward.plan.preflight.state_paths import StateShape, held_warnings, path_warnings, why_not
from evalward.resources.checks.assertions import Assertion
from evalward.resources.checks.state_assertions import StateUnchangedAssertion, StateValueAssertion

pytestmark = pytest.mark.unit

SHAPE = StateShape(
    parts=frozenset({"db", "files", "service"}),
    tables={"orders": ["id", "status", "meta.note"], "users": ["id", "email"]},
    files=frozenset({"inbox/refund.eml", "config.json"}),
    service=frozenset({"orders", "customers"}),
    told_by={"db": "the seed 'shop/seed.sql'"},
)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("db.orders.7.status", None),
        ("db.orders.*.meta.note", None),
        ("db.orders.7.meta.note", None),
        ("db.orders", None),
        ("service.orders.A-1.status", None),
        ("files.inbox/brand-new.txt", None),  # the agent's to write
        ("*.anything", None),
        (
            "dv.orders",
            "the playground's state has no 'dv': it holds db, files, service",
        ),
        (
            "servce.orders",
            "the playground's state has no 'servce' (did you mean 'service'?): it holds db, "
            "files, service",
        ),
        (
            "db.order.7.status",
            "the seed 'shop/seed.sql' makes no table 'order' (did you mean 'orders'?)",
        ),
        (
            "db.orders.7.statuz",
            "table 'orders' of the seed 'shop/seed.sql' has no column "
            "'statuz' (did you mean 'status'?)",
        ),
        ("service.orderz.A-1", "the service's seed has no key 'orderz' (did you mean 'orders'?)"),
        (
            "files.config.jsn",
            "the files seed holds no file 'config.jsn' (did you mean 'config.json'?)",
        ),
    ],
)
def test_a_path_the_seeds_cannot_hold_names_the_nearest(path: str, why: str | None) -> None:
    assert why_not(path, SHAPE) == why


def test_a_table_with_no_near_name_lists_what_there_is() -> None:
    assert why_not("db.zzz.1.x", SHAPE) == (
        "the seed 'shop/seed.sql' makes no table 'zzz'; it has 'orders', 'users'"
    )


def test_each_path_of_a_criterion_is_checked_at_its_field() -> None:
    unchanged = StateUnchangedAssertion.model_validate(
        {"type": "stateUnchanged", "at": "db.users", "except": ["db.users.1.emial", "db.x"]}
    )
    warnings = path_warnings(unchanged, SHAPE)
    assert [at for at, _ in warnings] == [("except", 0), ("except", 1)]
    absent = StateValueAssertion.model_validate(
        {"type": "stateValue", "at": "db.nothing.1.x", "exists": False}
    )
    assert path_warnings(absent, SHAPE) == []  # asked to be absent: nothing to hold


@pytest.mark.parametrize(
    ("criterion", "why"),
    [
        ({"type": "stateValue", "at": "db.refunds.1", "exists": False}, None),
        ({"type": "fileState", "path": "outbox/sent.eml", "exists": False}, None),
        (
            {"type": "stateValue", "at": "dbb.orders.1", "exists": False},
            "the playground's state has no 'dbb' (did you mean 'db'?): it holds db, files, "
            "service; so it is never there and `exists: false` always holds",
        ),
        (
            {"type": "stateValue", "at": "db.order.1", "exists": False},
            "the seed 'shop/seed.sql' makes no table 'order' (did you mean 'orders'?); so it "
            "is never there and `exists: false` always holds",
        ),
        (
            {"type": "fileState", "path": "config.jsn", "exists": False},
            "the files seed holds no file 'config.jsn' (did you mean 'config.json'?); so it "
            "is never there and `exists: false` always holds",
        ),
    ],
)
def test_a_path_asked_to_be_absent_warns_only_where_it_could_never_be_there(
    criterion: dict[str, object], why: str | None
) -> None:
    """`exists: false` on a part the playground lacks, or on a typo of the seed's name,
    holds whatever the agent does; on a name the run could make, absence is the point."""
    assertion = TypeAdapter(Assertion).validate_python(criterion)
    assert [w for _, w in path_warnings(assertion, SHAPE)] == ([why] if why else [])
    no_files = StateShape(parts=frozenset({"db"}))
    outside = StateValueAssertion.model_validate(
        {"type": "stateValue", "file": "report.txt", "exists": False}
    )
    assert path_warnings(outside, no_files) == [
        (
            ("file",),
            "the playground has no files folder to hold 'report.txt'; so it is never there "
            "and `exists: false` always holds",
        )
    ]


def test_the_provisioned_state_shows_a_near_key_or_a_value_that_holds_none() -> None:
    state = {"service": {"orders": {"A-1042": {"status": "shipped", "total": 12}}}}
    near = StateValueAssertion.model_validate(
        {"type": "stateValue", "at": "service.orders.A-1042.statuz", "equals": "refunded"}
    )
    assert held_warnings(near, state) == [
        (
            ("at",),
            "the provisioned state has no key 'statuz' at 'service.orders.A-1042' "
            "(did you mean 'status'?)",
        )
    ]
    through = StateValueAssertion.model_validate(
        {"type": "stateValue", "at": "service.orders.A-1042.total.cents", "equals": 1200}
    )
    assert held_warnings(through, state) == [
        (
            ("at",),
            "the provisioned state holds 12 at 'service.orders.A-1042.total', which "
            "has no key 'cents'",
        )
    ]
    new_order = StateValueAssertion.model_validate(
        {"type": "stateValue", "at": "service.orders.B-7.status", "equals": "new"}
    )
    assert held_warnings(new_order, state) == []  # a new order is the run's to add
