"""Check a request against GitHub's official OpenAPI description (vendored subset), and a
GraphQL query against GitHub's GraphQL schema (the vendored fields evalward queries).

A request GitHub would reject — unknown method and path, a missing required parameter, a
query value of the wrong type, a body that breaks the operation's schema, a GraphQL query
asking for a field the schema lacks, a check run's text past GitHub's limits in bytes — is a
violation. So is an answer of the fake that breaks the schema GitHub documents for it, where
the vendored subset holds one (`check_answer`).
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import graphql
import jsonschema

SPEC = Path(__file__).parent.parent / "data" / "github" / "openapi-subset.json.gz"
GRAPHQL_SCHEMA = Path(__file__).parent.parent / "data" / "github" / "graphql-subset.graphql"
GRAPHQL_PATH = "/graphql"


CHECK_RUN_BYTES = {"summary": 65_535, "text": 65_535}
"""A check run's output, in bytes of UTF-8. The description says "Maximum length: 65535
characters" (the schema's `maxLength`, which counts characters); GitHub counts bytes and
refuses the check run past them ("Only 65535 characters are allowed; … were supplied",
github/rest-api-description#5399)."""
ANNOTATION_BYTES = {"message": 64_000, "raw_details": 64_000, "title": 255}
"""An annotation's, as GitHub documents them ("The maximum size is 64 KB", 255 characters for
the title), in bytes of UTF-8 as the output's are; 64 KB read the stricter way."""
CHECK_RUN_OPERATIONS = ("checks/create", "checks/update")
COMMENT_CHARS = 65_536
"""A comment's body, in characters, as GitHub's refusal states it ("Body is too long (maximum
is 65536 characters)", 422), keeping the comment as it was; the description gives no
`maxLength`. Bodies measured against github.com are refused past 262,144 bytes of UTF-8,
which 65,536 characters never exceed: held to the message, a body fits on either reading."""
COMMENT_OPERATIONS = (
    "issues/create-comment",
    "issues/update-comment",
    "pulls/create-review",
    "pulls/update-review-comment",
)


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    pattern: re.Pattern[str]
    spec: dict[str, Any]


@cache
def spec_version() -> str:
    return str(_spec()["version"])


@cache
def _spec() -> dict[str, Any]:
    return dict(json.loads(gzip.decompress(SPEC.read_bytes())))


@cache
def _operations() -> list[Operation]:
    ops = []
    for template, item in _spec()["paths"].items():
        regex = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template))
        for method, op in item.items():
            ops.append(Operation(method.upper(), template, re.compile(f"^{regex}$"), op))
    # literal segments beat parameters: /repos/{o}/{r}/check-runs before /{o}/{r}/{anything}
    ops.sort(key=lambda o: o.template.count("{"))
    return ops


def _nullable(schema: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` is JSON Schema's `null` type, in an `enum` too (OpenAPI
    3.0.3: null is allowed whatever the enum lists)."""
    if isinstance(schema, dict):
        out = {k: _nullable(v) for k, v in schema.items() if k != "nullable"}
        if schema.get("nullable") and "type" in out:
            out["type"] = [out["type"], "null"]
        if schema.get("nullable") and "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(schema, list):
        return [_nullable(v) for v in schema]
    return schema


@cache
def graphql_schema() -> graphql.GraphQLSchema:
    return graphql.build_schema(GRAPHQL_SCHEMA.read_text())


def check_graphql(method: str, body: bytes) -> list[str]:
    """Problems GitHub's GraphQL endpoint would answer with errors for; empty when it conforms."""
    if method != "POST":
        return [f"{method} {GRAPHQL_PATH}: GitHub's GraphQL endpoint takes POST"]
    try:
        document = json.loads(body)
        parsed = graphql.parse(document["query"])
    except (ValueError, KeyError, TypeError, graphql.GraphQLError) as exc:
        return [f"POST {GRAPHQL_PATH}: not a GraphQL request ({exc})"]
    return [f"POST {GRAPHQL_PATH}: {e.message}" for e in graphql.validate(graphql_schema(), parsed)]


def _operation(method: str, path: str) -> Operation | str:
    """The operation GitHub serves `method path` with, or why there is none."""
    candidates = [o for o in _operations() if o.pattern.match(path)]
    if not candidates:
        return f"{method} {path}: no such path in GitHub's REST API {spec_version()}"
    matching = [o for o in candidates if o.method == method]
    if not matching:
        allowed = sorted({o.method for o in candidates})
        return f"{method} {path}: method not allowed (GitHub allows {', '.join(allowed)})"
    return matching[0]


def _schema_problems(schema: dict[str, Any], document: Any, where: str, what: str) -> list[str]:
    validator = jsonschema.Draft7Validator(_nullable(schema))
    return [
        f"{where}: {what} {'/'.join(str(p) for p in error.absolute_path) or '(body)'}: "
        f"{error.message}"
        for error in validator.iter_errors(document)
    ]


def check_answer(method: str, path: str, status: int, document: Any) -> list[str]:
    """Problems with an answer the fake gives, against the schema GitHub documents for that
    operation and status; empty when it conforms or the subset holds no such schema."""
    op = _operation(method, path)
    if isinstance(op, str):
        return []
    schema = op.spec.get("responses", {}).get(str(status))
    if schema is None:
        return []
    where = f"{method} {op.template} ({op.spec['operationId']}) answered {status}"
    return _schema_problems(schema, document, where, "answer")


def check(method: str, path: str, query: dict[str, list[str]], body: bytes) -> list[str]:
    """Problems GitHub would reject the request for; empty when it conforms."""
    if path == GRAPHQL_PATH:
        return check_graphql(method, body)
    op = _operation(method, path)
    if isinstance(op, str):
        return [op]
    problems = []
    where = f"{method} {op.template} ({op.spec['operationId']})"
    for param in op.spec.get("parameters", []):
        if param["in"] == "query":
            values = query.get(param["name"])
            if values is None:
                if param.get("required"):
                    problems.append(f"{where}: missing required query parameter {param['name']}")
                continue
            kind = param.get("schema", {}).get("type")
            if kind == "integer" and not all(v.lstrip("-").isdigit() for v in values):
                problems.append(f"{where}: query {param['name']}={values} is not an integer")
            enum = param.get("schema", {}).get("enum")
            if enum and not all(v in enum for v in values):
                problems.append(f"{where}: query {param['name']}={values} not in {enum}")
        elif param["in"] == "path" and param.get("schema", {}).get("type") == "integer":
            segments = dict(zip(op.template.split("/"), path.split("/"), strict=False))
            value = segments.get("{" + param["name"] + "}", "")
            if not value.isdigit():
                problems.append(f"{where}: path parameter {param['name']}={value!r} not an integer")
    request_body = op.spec.get("requestBody")
    if request_body is None:
        return problems
    if not body:
        if request_body.get("required"):
            problems.append(f"{where}: the request body is required")
        return problems
    try:
        document = json.loads(body)
    except ValueError:
        return [*problems, f"{where}: the request body is not JSON"]
    problems += _schema_problems(request_body["schema"], document, where, "body")
    if op.spec["operationId"] in CHECK_RUN_OPERATIONS:
        problems += _check_run_bytes(document, where)
    if op.spec["operationId"] in COMMENT_OPERATIONS:
        problems += _comment_chars(document, where)
    return problems


def _comment_chars(document: Any, where: str) -> list[str]:
    """A comment's body (a review's, and each of its comments') past GitHub's limit."""
    if not isinstance(document, dict):
        return []
    bodies = [("body", document.get("body"))]
    bodies += [
        (f"comments/{index}/body", comment.get("body"))
        for index, comment in enumerate(document.get("comments") or [])
        if isinstance(comment, dict)
    ]
    return [
        f"{where}: body {name}: Body is too long ({len(value):,} characters; the maximum is "
        f"{COMMENT_CHARS:,})"
        for name, value in bodies
        if isinstance(value, str) and len(value) > COMMENT_CHARS
    ]


def _check_run_bytes(document: Any, where: str) -> list[str]:
    """A check run's texts past GitHub's limits in bytes of UTF-8, or not UTF-8 at all (a
    lone surrogate, which JSON can escape and UTF-8 cannot hold)."""
    output = document.get("output") if isinstance(document, dict) else None
    if not isinstance(output, dict):
        return []
    fields = [(f"output/{key}", output.get(key), most) for key, most in CHECK_RUN_BYTES.items()]
    for index, annotation in enumerate(output.get("annotations") or []):
        if isinstance(annotation, dict):
            fields += [
                (f"output/annotations/{index}/{key}", annotation.get(key), most)
                for key, most in ANNOTATION_BYTES.items()
            ]
    problems = []
    for name, value, most in fields:
        if not isinstance(value, str):
            continue
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            problems.append(f"{where}: body {name}: not UTF-8 (a lone surrogate)")
            continue
        if size > most:
            problems.append(f"{where}: body {name}: {size:,} bytes, over GitHub's {most:,}")
    return problems
