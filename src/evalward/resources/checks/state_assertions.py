"""State criteria: assertions on the state a fixture's playground is left in after the run, one
document (`files`, `db`, `service`) read at dotted paths (docs/playgrounds.md, "State
criteria")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalward.resources.checks.assertion_base import AssertionBase
from evalward.resources.checks.patterns import compiled_pattern


def _one_of(model: Any, names: tuple[str, ...], what: str) -> None:
    given = [name for name in names if name in model.model_fields_set]
    if len(given) != 1:
        shown = ", ".join(f"`{type(model).model_fields[name].alias or name}`" for name in names)
        raise ValueError(f"{what} needs exactly one of {shown}; it has {len(given)}")


def valid_pattern(pattern: str | None) -> str | None:
    if pattern is not None:
        compiled_pattern(pattern)
    return pattern


class StateCriterion(AssertionBase):
    """What every state criterion shares: it reads the state once, as the run ends."""

    @model_validator(mode="after")
    def _after_the_last_turn(self) -> StateCriterion:
        if self.turn is not None:
            raise ValueError(
                f"`turn` does not apply: a `{getattr(self, 'type', 'state')}` criterion reads "
                "the playground's state as the run left it, after the conversation's last "
                "turn, and no turn's state before it; remove `turn`, or check that turn's "
                "reply with a check of its text or its tool calls"
            )
        return self


class StateValueAssertion(StateCriterion):
    """The value at `at` in the playground's state (or in the JSON/YAML `file` of its files
    playground) equals, contains or matches what is given, or exists (or not)."""

    type: Literal["stateValue"]
    at: str = Field(
        default="",
        description="A dotted path of the state (`service.orders.0.status`), or inside `file`.",
    )
    file: str | None = Field(
        default=None, description="A JSON or YAML file of the files playground to read `at` in."
    )
    equals: Any = None
    contains: Any = None
    matches: str | None = Field(default=None, min_length=1)
    exists: bool | None = None

    @model_validator(mode="after")
    def _one_check(self) -> StateValueAssertion:
        _one_of(self, ("equals", "contains", "matches", "exists"), "a `stateValue` assertion")
        if not self.at and self.file is None:
            raise ValueError("a `stateValue` assertion needs `at`, `file` or both")
        return self

    _compiles = field_validator("matches")(valid_pattern)


class SqlAssertion(StateCriterion):
    """A read-only query on the SQLite playground returns these `rows` (in order; each a list
    of values, or an object by column name) or this many (`count`)."""

    type: Literal["sql"]
    query: str = Field(min_length=1, description="One SELECT statement (read-only).")
    rows: list[list[Any] | dict[str, Any]] | None = None
    count: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_check(self) -> SqlAssertion:
        _one_of(self, ("rows", "count"), "an `sql` assertion")
        return self


class FileStateAssertion(StateCriterion):
    """A file of the files playground exists (or not), holds a text, or equals a JSON value."""

    type: Literal["fileState"]
    path: str = Field(min_length=1, description="The file, relative to the playground's folder.")
    exists: bool | None = None
    contains: str | None = None
    equals_json: Any = None

    @model_validator(mode="after")
    def _one_check(self) -> FileStateAssertion:
        _one_of(self, ("exists", "contains", "equals_json"), "a `fileState` assertion")
        return self


class StateSnapshotAssertion(StateCriterion):
    """The state (or its part at `at`) equals an expected snapshot, except at the `except`
    paths: the check of tau-bench, which compares the final database with the one the right
    actions produce."""

    type: Literal["stateSnapshot"]
    at: str = Field(default="", description="The part of the state compared (default: all).")
    snapshot: str | None = Field(
        default=None,
        description="A JSON or YAML file of the repository (the gate's side) holding the "
        "expected state.",
    )
    value: Any = None
    excepted: list[str] = Field(
        default_factory=list, alias="except", description="Paths left out of the comparison."
    )

    @model_validator(mode="after")
    def _one_check(self) -> StateSnapshotAssertion:
        _one_of(self, ("snapshot", "value"), "a `stateSnapshot` assertion")
        return self


class StateUnchangedAssertion(StateCriterion):
    """Nothing of the state (or of its part at `at`) changed during the run, except at the
    `except` paths."""

    type: Literal["stateUnchanged"]
    at: str = Field(default="", description="The part of the state checked (default: all).")
    excepted: list[str] = Field(
        default_factory=list, alias="except", description="Paths allowed to change."
    )


STATE_TYPES = (
    StateValueAssertion,
    SqlAssertion,
    FileStateAssertion,
    StateSnapshotAssertion,
    StateUnchangedAssertion,
)
