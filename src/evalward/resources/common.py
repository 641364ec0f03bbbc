"""What every resource kind shares: the base model, metadata and severities."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated, Any, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic_core import CoreSchema

API_VERSION = "evalward.dev/v1"
API_VERSIONS = (API_VERSION, "pai.io/v1")
"""`pai.io/v1` is accepted so that seed 003's examples load unchanged."""

AGENTV_DEFAULT_TARGET = "default"
"""The target of a test that names none (nor its file, nor `defaults.targetAgent`): AgentV's
own default target. Its fixtures carry the label `agent: default`, and whichever Eval selects
them runs them with its agent (no Agent need be named `default`)."""

NAME_PATTERN = r"^[a-z0-9]([a-z0-9._-]{0,251}[a-z0-9])?$"


class NamesRepoFile:
    """Marks a field whose value names a file (or folder) of the repository: what it names is
    read only through files/committed.py, the side's commit as data
    (tests/resources/test_file_fields.py walks the schema for these)."""

    def __repr__(self) -> str:
        return "NamesRepoFile()"


RepoPath = Annotated[str, NamesRepoFile()]
"""A repository path a definition names (see `NamesRepoFile`)."""


def repeated(items: list[str]) -> str:
    """The items listed more than once, sorted and comma-joined ("" when none): what a list
    that names each thing once refuses."""
    return ", ".join(sorted({item for item in items if items.count(item) > 1}))


def mode_alone(section: str, value: object, modes: Iterable[str]) -> object:
    """`value`, unless a section of evalward.yaml that is a mapping was written as one of its
    modes alone (`cache: read-write`): then why, and the mapping that says it."""
    if isinstance(value, str) and value in {str(mode) for mode in modes}:
        raise ValueError(
            f"expected a mapping; found {value!r}: write the mode under `mode` "
            f"(`{section}: {{mode: {value}}}`)"
        )
    return value


def is_number(value: Any) -> TypeGuard[int | float]:
    """A number as YAML and JSON mean one: an int or a float, never a bool (which Python
    counts as an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def valid_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` when it is a JSON Schema (of the draft its `$schema` names, else 2020-12);
    else a ValueError saying where it is not one."""
    import jsonschema  # on use: it costs ~60 ms of start-up, and most suites have none

    validator = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ValueError(f"invalid JSON Schema at {where}: {exc.message}") from None
    return schema


def _strict_numbers(schema: object) -> None:
    """Make every integer and number in a core schema strict. Pydantic's own `strict=True`
    would make the rest strict too: an enum field would take only the enum's members, and
    YAML gives every one as a string (`severity: low` refused)."""
    if isinstance(schema, dict):
        if schema.get("type") in ("int", "float"):
            schema["strict"] = True
        for value in schema.values():
            _strict_numbers(value)
    elif isinstance(schema, list):
        for value in schema:
            _strict_numbers(value)


class StrictModel(BaseModel):
    """What every model of a file a user writes shares (a resource, evalward.yaml's provider
    settings): camelCase aliases, no unknown fields, immutable, no infinite or NaN number
    (YAML's `.inf`, which no JSON holds: an infinite weight made its fixture's score NaN and
    results.json unreadable to a strict JSON reader), and numbers as they are written."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        allow_inf_nan=False,
    )

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[BaseModel], handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """Numbers strict: where one is expected, pydantic would take `true` as 1, saying
        nothing; an integer is written as one (`2`, not `2.0`)."""
        schema = handler(source)
        _strict_numbers(schema)
        return schema


class Model(StrictModel):
    """Base of every resource model (`StrictModel`'s rules), built when first used.

    A field's `description` is its description in the JSON Schema (editors show it) and in
    docs/reference.md. (Attribute docstrings would say the same, but pydantic reads them by
    parsing each model's source at import, 40 ms of every start.)
    """

    model_config = ConfigDict(defer_build=True)


class Severity(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"
    critical = "critical"


DEFAULT_SEVERITY_WEIGHTS: dict[Severity, float] = {
    Severity.low: 0.5,
    Severity.medium: 1.0,
    Severity.high: 2.0,
    Severity.critical: 4.0,
}


class Metadata(Model):
    name: str = Field(pattern=NAME_PATTERN)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    generation: int | None = None
