"""The two sides a change is measured on, named where every layer can use them."""

from __future__ import annotations

from enum import StrEnum


class Side(StrEnum):
    """Where a run's agent comes from: the base (what the change is measured against) or the
    head (the change)."""

    base = "base"
    head = "head"


class GateConfig(StrEnum):
    """Where the Evals and fixtures that gate a change come from (input `gate-config`)."""

    base = "base"
    head = "head"
