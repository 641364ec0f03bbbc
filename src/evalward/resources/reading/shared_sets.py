"""Loaded resources share the sets that say which of their fields were given.

pydantic keeps with each model the names of the fields its document gave
(`model_fields_set`): a set of 216 bytes or more, six or more of them a fixture, about a
fifth of what 100,000 loaded fixtures hold. Fixtures written alike give the same names, so
each distinct set is kept once. Only for a frozen model (every resource model,
`common.Model`): its fields cannot be assigned, so nothing adds a name to a set that others
share; a copy (`model_copy`) gets a set of its own.
"""

from __future__ import annotations

from typing import TypeVar, cast

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_SHARED: dict[tuple[type[BaseModel], frozenset[str]], set[str]] = {}
PLAIN_TYPES: frozenset[type] = frozenset({str, int, float, bool, type(None)})
"""The types of most values a model holds, none of which holds a model: a walk looking for
models passes over them without a call (a loaded fixture has about 50, a result as many)."""


def share_field_sets(model: M) -> M:
    """`model` and the models it holds (in fields, lists, tuples and dict values), each
    frozen one with the one set of its class that names the same fields."""
    for value in model.__dict__.values():
        kind = type(value)
        if kind not in _INERT:
            _share_in(value, kind)
    cls = type(model)
    frozen = _FROZEN.get(cls)
    if frozen is None:
        frozen = _FROZEN[cls] = bool(cls.model_config.get("frozen"))
    if frozen:
        given = model.__pydantic_fields_set__
        shared = _SHARED.setdefault((cls, frozenset(given)), given)
        object.__setattr__(model, "__pydantic_fields_set__", shared)
    return model


_INERT: set[type] = set(PLAIN_TYPES)
"""The types of values the walk passes over: the plain ones, and each type met that is not a
model, list, tuple or dict (an enum's, a path's), learnt as it is met."""
_FROZEN: dict[type[BaseModel], bool] = {}


def _share_in(value: object, kind: type) -> None:
    if issubclass(kind, BaseModel):
        share_field_sets(cast("BaseModel", value))
    elif issubclass(kind, (list, tuple)):
        for item in cast("list[object] | tuple[object, ...]", value):
            if type(item) not in _INERT:
                _share_in(item, type(item))
    elif issubclass(kind, dict):
        for item in cast("dict[object, object]", value).values():
            if type(item) not in _INERT:
                _share_in(item, type(item))
    else:
        _INERT.add(kind)
