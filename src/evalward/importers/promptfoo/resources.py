"""The evalward documents an imported suite is made of, and their YAML.

One Agent per provider, one Eval per (prompt, provider) column selecting that column's
fixtures by label, one EvalFixture per test and column. Every document is validated by
evalward's own models before anything is written.
"""

from __future__ import annotations

import io
import re
from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import SingleQuotedScalarString

from evalward.errors import ConfigError
from evalward.importers.promptfoo.providers import PromptfooProvider
from evalward.resources.common import API_VERSION
from evalward.resources.models import KINDS

PLAIN = re.compile(r"^[A-Za-z][\w .-]*\Z")
"""A text safe unquoted in a flow mapping: letters, digits, spaces, dots and dashes."""
ResourceDocument = dict[str, Any]
"""An Agent, EvalFixture or Eval as the mapping written to its YAML file."""


def slug(text: str, limit: int = 48) -> str:
    """A resource name's part: lower-case letters, digits and dashes."""
    cut = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-")
    return cut or "x"


def column_labels(suite: str, prompt: str | None, provider: str | None) -> dict[str, str]:
    """The labels that put a fixture in its column's Eval: its prompt's and its provider's
    slugs (`distinct` ones), when the suite has more than one of them."""
    labels = {"suite": suite, "prompt": prompt, "provider": provider}
    return {key: value for key, value in labels.items() if value is not None}


def distinct(texts: list[str], limit: int = 24) -> list[str | None]:
    """A slug of each text, `-2`, `-3`… added where two would be the same (two providers of
    one model, or labels that agree on their first `limit` characters); None for a lone text,
    which has no other to be told from."""
    out: list[str] = []
    for text in texts:
        out.append(numbered(slug(text, limit), out))
    return [*out] if len(out) > 1 else [None] * len(out)


def numbered(base: str, taken: Container[str], limit: int | None = None) -> str:
    """`base`, or `base-2`, `base-3`… when `taken` has it (cut to `limit` characters with
    its number kept, when there is a limit)."""
    name, number = base, 1
    while name in taken:
        number += 1
        tail = f"-{number}"
        name = base + tail if limit is None else base[: limit - len(tail)].rstrip("-") + tail
    return name


def suffix(labels: dict[str, str]) -> list[str]:
    """What tells a column's resources from another's: its prompt's and provider's slugs."""
    return [value for key, value in labels.items() if key != "suite"]


def agent(name: str, provider: PromptfooProvider) -> ResourceDocument:
    given = {
        "models": [provider.model],
        "temperature": provider.temperature,
        "maxTokens": provider.max_tokens,
        "tools": provider.tools or None,
        "toolChoice": provider.tool_choice,
        "mcpServers": provider.mcp_servers or None,
    }
    spec = {key: value for key, value in given.items() if value is not None}
    return {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": name}, "spec": spec}


@dataclass(frozen=True)
class FixtureContent:
    """What one promptfoo test asks through one prompt: its description, the input as
    rendered, the assertions on the reply, and its vars (for code scorers)."""

    description: str
    rendered: str | list[dict[str, Any]]
    assertions: list[dict[str, Any]]
    variables: dict[str, Any]
    rule: dict[str, Any]
    """`passThreshold` and `scoringFunction`, when the test has its own rule (else empty)."""
    transform: dict[str, Any] | None
    """The test's `options.transform`, as the fixture's."""


def fixture(
    name: str, labels: dict[str, str], source: str, target: str, content: FixtureContent
) -> ResourceDocument:
    spec: dict[str, Any] = {"targetAgent": target}
    if content.description:
        spec["description"] = content.description
    if isinstance(content.rendered, str):
        spec["input"] = {"type": "prompt", "payload": {"prompt": content.rendered}}
    else:
        spec["input"] = {"type": "messages", "messages": content.rendered}
    if content.transform is not None:
        spec["transform"] = content.transform
    spec["assertions"] = content.assertions
    rule = content.rule
    coded = "scoringFunction" in rule or content.transform is not None or _coded(content.assertions)
    if content.variables and coded:
        spec["vars"] = content.variables  # what code scorers and transforms get as `context.vars`
    spec |= rule
    metadata = {"name": name, "labels": labels, "annotations": {"promptfoo": source}}
    return {"apiVersion": API_VERSION, "kind": "EvalFixture", "metadata": metadata, "spec": spec}


def _coded(assertions: list[dict[str, Any]]) -> bool:
    """Whether code runs on the output: a code scorer or a transform, in groups too."""
    return any(
        a["type"] == "code" or "transform" in a or _coded(a.get("assertions", []))
        for a in assertions
    )


def evaluation(
    name: str, target: str, labels: dict[str, str], judge: str | None, execution: dict[str, Any]
) -> ResourceDocument:
    """An Eval that passes only when every one of its fixtures does, as promptfoo's run."""
    spec: dict[str, Any] = {"targetAgent": target, "fixtureSelector": {"matchLabels": labels}}
    if judge is not None:
        spec["judge"] = {"model": judge}
    spec["scoring"] = {"passThreshold": 1.0}
    if "repsPerFixture" in execution:  # promptfoo's `repeat`: every repetition must pass
        spec["scoring"]["minRepPassRate"] = 1.0
    if execution:
        spec["execution"] = execution
    return {"apiVersion": API_VERSION, "kind": "Eval", "metadata": {"name": name}, "spec": spec}


def check(documents: list[ResourceDocument]) -> None:
    """Each document as evalward's loader will read it; a conversion that made one it refuses
    says which, and where in the promptfoo config it came from."""
    for document in documents:
        try:
            KINDS[document["kind"]].model_validate(document)
        except ValidationError as exc:
            source = document["metadata"].get("annotations", {}).get("promptfoo", "")
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(
                f"{source or document['metadata']['name']}: the converted {document['kind']} "
                f"{document['metadata']['name']!r} is not valid: {where}: {first['msg']}"
            ) from None


def render(documents: list[ResourceDocument], header: str) -> str:
    """The documents as one multi-document YAML file, assertions one per line."""
    yaml = YAML(typ="rt")
    yaml.width = 4096  # a flow mapping on one line, however long
    yaml.indent(mapping=2, sequence=4, offset=2)
    stream = io.StringIO()
    stream.write(header)
    for document in documents:
        stream.write("---\n")
        yaml.dump(_styled(document), stream)
    return stream.getvalue()


def _styled(document: ResourceDocument) -> CommentedMap:
    def convert(value: Any, flow: bool = False) -> Any:
        if isinstance(value, dict):
            styled: Any = CommentedMap((k, convert(v, flow)) for k, v in value.items())
        elif isinstance(value, list):
            styled = CommentedSeq(convert(v, flow) for v in value)
        elif flow and isinstance(value, str) and not PLAIN.match(value):
            # quoted, so that every YAML reader (1.1 ones too) reads a pattern as one text
            return SingleQuotedScalarString(value)
        else:
            return value
        if flow:
            styled.fa.set_flow_style()
        return styled

    root: CommentedMap = convert(document)
    for key in ("labels", "annotations"):
        if key in document["metadata"]:
            root["metadata"][key] = convert(document["metadata"][key], flow=True)
    spec = document["spec"]
    if "assertions" in spec:
        root["spec"]["assertions"] = CommentedSeq(
            convert(a, flow=a["type"] != "judge" and len(str(a)) < 90) for a in spec["assertions"]
        )
    for key in ("models", "judge", "scoring", "execution"):
        if key in spec:
            root["spec"][key] = convert(spec[key], flow=True)
    if "fixtureSelector" in spec:
        root["spec"]["fixtureSelector"]["matchLabels"] = convert(
            spec["fixtureSelector"]["matchLabels"], flow=True
        )
    return root
