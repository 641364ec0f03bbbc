"""What every resource kind shares: the base model, metadata and severities."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, TypeGuard

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic_core import CoreSchema, PydanticCustomError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from referencing import Registry, Resource, Specification
    from referencing.exceptions import Unresolvable

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


def _names_a_file(path: str) -> str:
    if not path.strip():
        raise ValueError(
            "an empty path names no file: give the file's path from the repository root, or "
            "leave the field out"
        )
    return path


RepoPath = Annotated[str, NamesRepoFile(), AfterValidator(_names_a_file)]
"""A repository path a definition names (see `NamesRepoFile`); never empty, which read as no
file at all (`systemFile: ''`: an agent with no system prompt, and no word of it)."""


def _said(rubric: str) -> str:
    if not rubric.strip():
        raise ValueError("a blank rubric gives the judge nothing to score: say what it scores")
    return rubric


Rubric = Annotated[str, AfterValidator(_said)]
"""What a judge scores or compares by: blank (spaces alone too) is no rubric."""


AT_FIELD = "at_field"
"""The type of a validation error a validator of a whole object raises about one field in it
(`error_at`): the problem is told at that field's line (resources/reading/problems.py)."""


def error_at(path: tuple[str | int, ...], message: str) -> PydanticCustomError:
    """An error a validator of a whole object raises about the field at `path` (YAML keys,
    from the object): pydantic would place it at the object's first line."""
    return PydanticCustomError(AT_FIELD, "{message}", {"message": message, "at": path})


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


_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
"""The keywords by which one part of a JSON Schema stands for another."""

_REF_WITHIN = (
    "expected a $ref to a part of the schema, such as '#/$defs/name' "
    "(evalward fetches no URL or file)"
)
"""What a schema's `$ref` may point to, said where one that does not is refused."""


def valid_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` when it is a JSON Schema (of the draft its `$schema` names, else 2020-12) whose
    every `$ref` leads to a schema within it; else a ValueError saying where it is not one. A
    `$ref` to a URL or a file would make the verdict whatever that address serves when scored,
    and one to a value that is no schema (a `const`) would stop scoring with a traceback."""
    import jsonschema  # on use: it costs ~60 ms of start-up, and most suites have none

    problem = _schema_problem(schema, jsonschema.Draft202012Validator)
    if problem is None:
        draft = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
        try:
            problem = _first_unresolved_ref(schema, draft)
        except Exception:  # referencing assumes each part has its draft's shape; says nothing
            problem = (
                "the schema could not be read for its $refs: a part of it does not have the "
                f"shape {_draft_name(schema)} gives that part; write each keyword as that "
                "draft says (or name another draft in $schema)"
            )
    if problem is not None:
        raise ValueError(problem)
    return schema


def _schema_problem(contents: Any, default: type[Validator]) -> str | None:
    """Where `contents` is no JSON Schema (of the draft its `$schema` names, else `default`'s),
    and why; None when it is one."""
    import jsonschema

    # a `$schema` that is no string names no draft (check_schema says so) and breaks the look-up
    named = isinstance(contents, dict) and isinstance(contents.get("$schema", ""), str)
    draft = jsonschema.validators.validator_for(contents if named else {}, default)
    try:
        draft.check_schema(contents)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"invalid JSON Schema at {where}: {exc.message}"
    return None


def json_schema_validator(schema: dict[str, Any]) -> Validator:
    """A validator of `schema` whose `$ref`s resolve within it alone: one that points
    elsewhere raises `referencing.exceptions.Unresolvable` as it is followed, where jsonschema
    would fetch the URL."""
    import jsonschema  # on use: it costs ~60 ms of start-up, and most suites have none

    validator_class = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    return validator_class(schema, registry=_closed_registry())


def _closed_registry() -> Registry[Any]:
    """A registry that retrieves nothing: a schema's `$ref` finds only what the schema holds."""
    from referencing import Registry
    from referencing.exceptions import NoSuchResource

    def retrieve_nothing(uri: str) -> Resource[Any]:
        raise NoSuchResource(uri)

    return Registry(retrieve=retrieve_nothing)  # type: ignore[call-arg]


def _draft_name(schema: dict[str, Any]) -> str:
    """The draft `schema`'s `$schema` names, in words (2020-12 when it names none)."""
    from referencing.jsonschema import DRAFT202012

    return "draft " + DRAFT202012.detect(schema).name.removeprefix("draft").lstrip("-")


def _draft3_extends_either(contents: Any) -> Iterable[Any]:
    """The parts of a draft-03 schema that are schemas, its `extends` a schema or a list of
    them, as draft-03 allows (referencing reads only a list, and fails on one schema)."""
    from referencing.jsonschema import DRAFT3

    if isinstance(contents, dict) and isinstance(contents.get("extends"), dict):
        yield contents["extends"]
        contents = {key: value for key, value in contents.items() if key != "extends"}
    yield from DRAFT3.subresources_of(contents)


def _specification_of(schema: dict[str, Any]) -> Specification[Any]:
    """How the draft `schema`'s `$schema` names finds its parts and addresses."""
    from referencing import Specification
    from referencing.jsonschema import DRAFT3, DRAFT202012

    specification = DRAFT202012.detect(schema)
    if specification is not DRAFT3:
        return specification
    return Specification(  # type: ignore[call-arg]  # an attrs class mypy reads no fields of
        name=DRAFT3.name,
        id_of=DRAFT3.id_of,
        subresources_of=_draft3_extends_either,
        maybe_in_subresource=DRAFT3.maybe_in_subresource,
        anchors_in=lambda _, contents: DRAFT3.anchors_in(contents),
    )


def _first_unresolved_ref(schema: dict[str, Any], draft: type[Validator]) -> str | None:
    """What the first `$ref` of `schema` (or of a part a `$ref` leads to) that does not lead
    to a schema within it is and why, else None. Each part is walked once, as its draft reads
    it: a `$ref` in `const` or `examples` is data, not a reference."""
    from referencing import Resource
    from referencing.exceptions import Unresolvable

    specification = _specification_of(schema)
    root = specification.create_resource(schema)
    base = root.id() or ""
    # crawled once: each lookup of an unknown address would crawl the whole schema again
    registry = _closed_registry().with_resource(base, root).crawl()
    todo = [(root, registry.resolver(base))]
    seen: set[int] = set()
    leads: dict[int, list[tuple[str, int]]] = {}
    while todo:
        resource, resolver = todo.pop()
        if id(resource.contents) in seen:
            continue
        seen.add(id(resource.contents))
        for keyword in _REF_KEYWORDS:
            ref = resource.contents.get(keyword) if isinstance(resource.contents, dict) else None
            if not isinstance(ref, str):
                continue
            said = f"{keyword} {ref!r}"
            try:
                resolved = resolver.lookup(ref)
            except Unresolvable as exc:
                return unresolved_ref(exc, said)
            problem = _schema_problem(resolved.contents, draft)
            if problem is not None:
                return f"{said} leads to a value that is no schema ({problem}): {_REF_WITHIN}"
            if keyword == "$ref" or resource.contents is schema:  # else its target is dynamic
                leads.setdefault(id(resource.contents), []).append((said, id(resolved.contents)))
            target = Resource.from_contents(resolved.contents, default_specification=specification)
            todo.append((target, resolved.resolver))
        if isinstance(resource.contents, dict):  # checked against the same value, always
            for part in _in_place(resource.contents):
                leads.setdefault(id(resource.contents), []).append(("", id(part)))
        todo.extend((sub, resolver.in_subresource(sub)) for sub in resource.subresources())
    return _ref_loop(leads)


def _in_place(contents: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The parts of `contents` every value it checks is checked against as well, whatever
    the value: `allOf`'s and `oneOf`'s (each is asked), `anyOf`'s first (asked before any
    other), `not`'s and `if`'s. (`anyOf` stops at the first part that holds, `then` and
    `else` depend on `if`: a loop through them ends or not with the value.)"""
    for keyword in ("allOf", "oneOf", "anyOf"):
        parts = contents.get(keyword)
        if isinstance(parts, list):
            parts = parts[:1] if keyword == "anyOf" else parts
            yield from (part for part in parts if isinstance(part, dict))
    for keyword in ("not", "if"):
        part = contents.get(keyword)
        if isinstance(part, dict):
            yield part


def _ref_loop(leads: dict[int, list[tuple[str, int]]]) -> str | None:
    """The first reference whose chain of references (`leads`: each part's references, and
    its parts checked in place (`_in_place`, said ""), and the parts they lead to) comes
    back to where it started, and why that is refused; else None. Such a schema checks a
    value against itself before any of the value is checked, so no check of it would end:
    each would fail as nested too deeply."""
    for start, refs in leads.items():
        for said, first in refs:
            if not said:
                continue  # a loop is named by a reference of it
            chain, reached = [first], {first}
            while chain:
                here = chain.pop()
                if here == start:
                    return (
                        f"{said} leads back to itself before any of the value is checked, so "
                        "checking a value against it would never end: point it to a part "
                        "that checks something, such as '#/$defs/name'"
                    )
                for _, there in leads.get(here, []):
                    if there not in reached:
                        reached.add(there)
                        chain.append(there)
    return None


def unresolved_ref(exc: Unresolvable, written: str | None = None) -> str:
    """Which `$ref` did not resolve and why, in a user's words, and what it may be instead:
    `written` is the keyword and the reference as the schema holds them (else the place the
    reference led to names it)."""
    from referencing.exceptions import NoSuchAnchor, PointerToNowhere, Unresolvable

    if isinstance(exc.__cause__, Unresolvable):  # jsonschema wraps what referencing raised
        exc = exc.__cause__
    if isinstance(exc, PointerToNowhere):
        said, why = f"$ref to '#{exc.ref}'", "leads to nothing in the schema"
    elif isinstance(exc, NoSuchAnchor):
        said, why = f"$ref to '#{exc.anchor}'", "leads to no anchor of the schema"
    else:
        said, why = f"$ref {exc.ref!r}", "points outside the schema"
    return f"{written or said} {why}: {_REF_WITHIN}"


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
