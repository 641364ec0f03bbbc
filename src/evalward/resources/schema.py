"""JSON Schema of the resource kinds, for editors (yaml-language-server) and other tools.

Point an editor at it with a first line in the YAML file:

    # yaml-language-server: $schema=./evalward.schema.json

after `evalward schema > evalward.schema.json` (or `evalward schema EvalFixture` for one kind).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from evalward.resources.common import API_VERSIONS
from evalward.resources.models import KINDS, Resource

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_AnyKind = Annotated[Resource, Field(discriminator="kind")]


def json_schema(kind: str | None = None) -> dict[str, Any]:
    """The schema of one kind, or of any kind (a `oneOf` on `kind`) when none is given."""
    if kind is None:
        schema = TypeAdapter(_AnyKind).json_schema(by_alias=True)
        schema["title"] = "evalward resource"
    else:
        schema = KINDS[kind].model_json_schema(by_alias=True)
    for definition in [schema, *schema.get("$defs", {}).values()]:
        _restrict_api_version(definition)
    return {"$schema": SCHEMA_DIALECT, **schema}


def _restrict_api_version(definition: dict[str, Any]) -> None:
    """Every kind's `apiVersion` is one of ours (pydantic only knows it is a string)."""
    properties = definition.get("properties", {})
    if "apiVersion" in properties and "kind" in properties:
        properties["apiVersion"] = {
            "title": "Api Version",
            "type": "string",
            "enum": list(API_VERSIONS),
        }
