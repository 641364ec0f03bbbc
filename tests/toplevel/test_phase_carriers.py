"""The gate's path carries a few values, not dozens: the types in the signatures of its phase
entries, from the action's entry to the verdict it publishes, are counted here, so a phase
that gains a carrier fails this test instead of growing the trip unseen.

The path: `action.run.main` builds one `Job` and one `RunRequest`; `run` hands them to the
pull request's `gate` (or `run_all`); `flows.session.run` runs the phases (`pipeline`:
`plan(request) -> Planned`, `execute(planned) -> Ran`, scored into an `Outcome`), and
`session.decide` makes the Outcome and the weighed bypass label one `RunVerdict`, which the
front end publishes.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest

from evalward.action import pull_request
from evalward.action import run as action_run
from evalward.execute import run_plan
from evalward.flows import pipeline, session
from evalward.plan import planned

pytestmark = pytest.mark.unit

PATH: list[Callable[..., Any]] = [
    action_run.main,
    action_run.run,
    pull_request.gate,
    action_run.run_all,
    session.run,
    pipeline.run_change,
    planned.plan,
    run_plan.execute,
    session.decide,
]
"""The phase entries a pull request's run passes through, in order."""

CARRIERS = {
    "Host",
    "Job",
    "RunRequest",
    "Planned",
    "Ran",
    "Outcome",
    "LabelWeighed",
    "RunVerdict",
}
"""What those entries hand on: the process, the job, the request, each phase's value, the
bypass label as weighed, and the verdict."""


def _project_types(hint: Any) -> set[type]:
    """evalward's own classes in a type hint, however it is wrapped (Optional, Iterator ...)."""
    found: set[type] = set()
    if isinstance(hint, type) and hint.__module__.startswith("evalward"):
        found.add(hint)
    for argument in typing.get_args(hint):
        found |= _project_types(argument)
    origin = typing.get_origin(hint)
    if isinstance(origin, type) and origin.__module__.startswith("evalward"):
        found.add(origin)
    return found


def carriers_of(function: Callable[..., Any]) -> set[str]:
    """The names of evalward's classes a function's signature takes or returns."""
    unwrapped = inspect.unwrap(function)
    hints = typing.get_type_hints(unwrapped)
    return {t.__name__ for hint in hints.values() for t in _project_types(hint)}


def test_the_gates_path_hands_on_at_most_eight_carriers() -> None:
    carried = set().union(*(carriers_of(function) for function in PATH))

    assert carried == CARRIERS, (
        f"the phase entries' signatures carry {sorted(carried)}; a new carrier belongs inside "
        "the value a phase already hands on (Job, RunRequest, Planned, Ran, Outcome, "
        "RunVerdict), not beside it"
    )
    assert len(carried) <= 8


def test_each_phase_takes_the_value_the_one_before_it_made() -> None:
    assert carriers_of(planned.plan) == {"RunRequest", "Planned"}
    assert carriers_of(run_plan.execute) == {"Planned", "Ran"}
    assert carriers_of(pipeline.run_change) == {"RunRequest", "Ran"}
    assert carriers_of(session.run) == {"RunRequest", "Outcome"}
    assert carriers_of(session.decide) == {"Outcome", "LabelWeighed", "RunVerdict"}
    assert carriers_of(pull_request.gate) == {"Job", "RunRequest"}


def test_the_counter_sees_a_carrier_wrapped_in_a_generic() -> None:
    """The count would miss a type hidden in `X | None` or `Iterator[X]` if it read only the
    outer hint: `plan` returns its Planned inside an Iterator."""
    assert "Planned" in carriers_of(planned.plan)
    assert "LabelWeighed" in carriers_of(session.decide)  # given as `LabelWeighed | None`
