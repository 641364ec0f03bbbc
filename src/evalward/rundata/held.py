"""Results as they are held from the end of their run until the run's files are written.

A scored run is held to the end in its summary (its trace waits on disk: `spool.py`), and a
run of 100,000 fixtures holds 100,000 of them: what each costs is what the run's memory
grows by.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from evalward.resources.reading.shared_sets import PLAIN_TYPES
from evalward.rundata.results import Interval

M = TypeVar("M", bound=BaseModel)
_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}
_INTERVALS: dict[tuple[float, float], Interval] = {}
_MOST_INTERVALS = 10_000
_INERT: set[type] = set(PLAIN_TYPES)
"""The types of values the walk passes over: the plain ones, and each type met that is not a
model or a list (a status's, a verdict's), learnt as it is met."""


def held(model: M) -> M:
    """`model`, and the models in it, with one set of field names shared by every instance
    of its class, where pydantic keeps one per instance of the names it was given (about
    600 bytes each, several a scored run: a quarter of what 10,000 runs held). The set only
    says which fields were given (`model_fields_set`), which nothing reads of a result; a
    later assignment adds a name the set has already."""
    for name, value in model.__dict__.items():
        kind = type(value)
        if kind in _INERT:
            continue
        if issubclass(kind, Interval):
            model.__dict__[name] = _one_of_its_value(value)
        elif issubclass(kind, BaseModel):
            held(value)
        elif issubclass(kind, list):
            for item in value:
                if isinstance(item, BaseModel):
                    held(item)
        else:
            _INERT.add(kind)
    cls = type(model)
    shared = _ALL_FIELDS.get(cls)
    if shared is None:  # once a class: `setdefault` would build the set on every call
        shared = _ALL_FIELDS[cls] = set(cls.model_fields)
    object.__setattr__(model, "__pydantic_fields_set__", shared)
    return model


def _one_of_its_value(interval: Interval) -> Interval:
    """One instance of each interval: a fixture's pass-rate interval is one of a few (its
    reps' passes of its reps), and 100,000 fixtures held 100,000 copies of two of them. Only
    the first 10,000 values are kept, so that scores that are all different cost nothing."""
    key = (interval.low, interval.high)
    found = _INTERVALS.get(key)
    if found is None:
        if len(_INTERVALS) >= _MOST_INTERVALS:
            return held(interval)
        found = _INTERVALS[key] = held(interval)
    return found
