"""Regenerate the vendored GitHub data from the npm packages (not run by the tests).

    npm install @octokit/webhooks-examples@7.6.1 @octokit/openapi@23.0.2 \
        @octokit/graphql-schema@15.26.1
    python tests/data/github/extract.py node_modules/@octokit

Writes webhooks/*.json (one real example payload per event/action evalward handles),
openapi-subset.json.gz: every operation of api.github.com (method, path, parameters) plus
the request-body schemas of the operations evalward calls and the answer schemas of those the
fake GitHub checks its answers against, descriptions stripped, and
graphql-subset.graphql: the fields of GitHub's GraphQL schema evalward queries.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
PAYLOADS = {
    "pull_request": [
        "opened",
        "synchronize",
        "reopened",
        "ready_for_review",
        "labeled",
        "unlabeled",
        "closed",
    ],
    "merge_group": ["checks_requested"],
    "push": [None],
    "workflow_dispatch": [None],
}
GRAPHQL_FIELDS = {"Query": ["viewer"]}
"""The root fields evalward queries; their types keep every field without arguments whose type
is a scalar or an enum."""
GRAPHQL_NAMED = {
    "Query": ["node"],
    "Node": ["id"],
    "IssueComment": ["editor", "id", "lastEditedAt"],
    "Actor": ["login"],
    "Bot": ["id", "login"],
}
"""Further fields evalward queries, by type (a comment's last editor, by its node id): each
kept as the schema gives it, with its arguments; an object type keeps the interfaces among
these it implements."""
BODIES = {
    "issues/create-comment",
    "issues/update-comment",
    "checks/create",
    "repos/create-commit-status",
    "pulls/create-review",
    "pulls/update-review-comment",
}
RESPONSES = {
    "actions/get-workflow-run",
    "actions/list-artifacts-for-repo",
    "pulls/create-review",
    "pulls/list-review-comments",
    "pulls/update-review-comment",
}
"""The operations whose successful answers the fake GitHub checks its own against."""


def strip(node: Any, names: bool = False) -> Any:
    """Drop prose; `names` marks a `properties` map, whose keys are field names, not prose."""
    if isinstance(node, dict):
        if names:
            return {k: strip(v) for k, v in node.items()}
        return {
            k: strip(v, names=k == "properties")
            for k, v in node.items()
            if k not in ("description", "examples", "example")
        }
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def main(root: Path) -> None:
    examples = json.loads((root / "webhooks-examples/api.github.com/index.json").read_text())
    for entry in examples:
        for action in PAYLOADS.get(entry["name"], []):
            payload = next(e for e in entry["examples"] if e.get("action") == action)
            name = entry["name"] + (f".{action}" if action else "")
            (HERE / "webhooks" / f"{name}.json").write_text(json.dumps(payload, indent=1) + "\n")
    spec = json.loads((root / "openapi/generated/api.github.com.deref.json").read_text())
    subset: dict[str, Any] = {
        "version": json.loads((root / "openapi/package.json").read_text())["version"],
        "paths": {},
    }
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method not in ("get", "post", "patch", "put", "delete"):
                continue
            entry = {
                "operationId": op.get("operationId"),
                "parameters": [
                    {k: v for k, v in p.items() if k in ("name", "in", "required", "schema")}
                    for p in op.get("parameters", [])
                ],
            }
            if op.get("operationId") in BODIES:
                body = op["requestBody"]
                entry["requestBody"] = {
                    "required": body.get("required", False),
                    "schema": strip(body["content"]["application/json"]["schema"]),
                }
            if op.get("operationId") in RESPONSES:
                entry["responses"] = {
                    status: strip(answer["content"]["application/json"]["schema"])
                    for status, answer in op["responses"].items()
                    if status.startswith("2") and "application/json" in answer.get("content", {})
                }
            subset["paths"].setdefault(path, {})[method] = strip(entry)
    data = json.dumps(subset, separators=(",", ":"), sort_keys=True).encode()
    (HERE / "openapi-subset.json.gz").write_bytes(gzip.compress(data, mtime=0))
    version = json.loads((root / "graphql-schema/package.json").read_text())["version"]
    subset_sdl = graphql_subset(root / "graphql-schema/schema.graphql")
    (HERE / "graphql-subset.graphql").write_text(
        f"# @octokit/graphql-schema {version}: the fields evalward queries (extract.py)\n\n"
        + subset_sdl
    )


def graphql_subset(schema_file: Path) -> str:
    """The root fields of GRAPHQL_FIELDS and the scalar fields of the types they return, as SDL."""
    from graphql import (
        GraphQLEnumType,
        GraphQLInterfaceType,
        GraphQLObjectType,
        GraphQLScalarType,
        build_schema,
        get_named_type,
        print_type,
    )

    schema = build_schema(schema_file.read_text(), assume_valid=True)
    blocks: list[str] = []
    named: dict[str, GraphQLScalarType | GraphQLEnumType] = {}
    for root, fields in GRAPHQL_FIELDS.items():
        root_type = schema.get_type(root)
        assert isinstance(root_type, GraphQLObjectType)
        lines = []
        for name in fields:
            field = root_type.fields[name]
            returned = get_named_type(field.type)
            assert isinstance(returned, GraphQLObjectType) and not field.args
            lines.append(f"  {name}: {field.type}")
            kept = []
            for sub, sub_field in sorted(returned.fields.items()):
                leaf = get_named_type(sub_field.type)
                if sub_field.args or not isinstance(leaf, GraphQLScalarType | GraphQLEnumType):
                    continue
                kept.append(f"  {sub}: {sub_field.type}")
                named[leaf.name] = leaf
            blocks.append(f"type {returned.name} {{\n" + "\n".join(kept) + "\n}")
        blocks.insert(0, f"type {root} {{\n" + "\n".join(lines) + "\n}")
    printed = {block.split(" ", 2)[1]: index for index, block in enumerate(blocks)}
    for type_name, fields in GRAPHQL_NAMED.items():
        found = schema.get_type(type_name)
        assert isinstance(found, GraphQLObjectType | GraphQLInterfaceType), type_name
        lines = []
        for name in fields:
            field = found.fields[name]
            args = ", ".join(f"{arg}: {value.type}" for arg, value in field.args.items())
            lines.append(f"  {name}{f'({args})' if args else ''}: {field.type}")
            leaf = get_named_type(field.type)
            if isinstance(leaf, GraphQLScalarType | GraphQLEnumType):
                named[leaf.name] = leaf
        if type_name in printed:  # a root's type: its own fields and these
            index = printed[type_name]
            blocks[index] = blocks[index].removesuffix("\n}") + "\n" + "\n".join(lines) + "\n}"
            continue
        kind = "interface" if isinstance(found, GraphQLInterfaceType) else "type"
        blocks.append(f"{kind} {type_name} {{\n" + "\n".join(lines) + "\n}")
    for index, block in enumerate(blocks):  # the interfaces kept that each type implements
        kind, type_name = block.split(" ", 2)[:2]
        found = schema.get_type(type_name)
        if (
            kind != "type"
            or not isinstance(found, GraphQLObjectType)
            or type_name in GRAPHQL_FIELDS
        ):
            continue  # a root is queried from, never as what an interface stands for
        kept = [i.name for i in found.interfaces if i.name in GRAPHQL_NAMED]
        if kept:
            blocks[index] = block.replace(
                f"type {type_name} {{", f"type {type_name} implements {' & '.join(kept)} {{", 1
            )
    builtin = {"String", "Int", "Float", "Boolean", "ID"}
    for name, leaf in sorted(named.items()):
        if name not in builtin:
            leaf.description = None
            if isinstance(leaf, GraphQLEnumType):
                for value in leaf.values.values():
                    value.description = None
            blocks.append(print_type(leaf))
    return "\n\n".join(blocks) + "\n"


if __name__ == "__main__":
    main(Path(sys.argv[1]))
