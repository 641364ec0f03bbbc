"""PyYAML's loader with YAML 1.2's core schema: what every YAML file evalward reads means.

PyYAML resolves plain scalars by YAML 1.1's rules, where `no`, `on` and `Yes` are booleans,
`012` is octal, `1_000` a number and `2024-01-02` a date. YAML 1.2's core schema, which
yaml-rs and every current YAML library read by, keeps all of those strings. This loader reads
with libyaml's parser (when PyYAML has it) and resolves by the core schema (yaml.org/spec/1.2.2
section 10.3), with two additions: merge keys (`<<: *defaults`), which most YAML 1.2 readers
keep, and a refusal of duplicate keys, which yaml-rs refuses too.
"""

from __future__ import annotations

import re
import sys
from typing import Any, ClassVar

import yaml

_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_MERGE = re.compile(r"^<<$")

_CORE = {
    None,  # an unknown tag: SafeLoader's constructor refuses it
    *(
        f"tag:yaml.org,2002:{kind}"
        for kind in ("null", "bool", "int", "float", "str", "seq", "map")
    ),
}
_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CoreLoader(_BASE):  # type: ignore[valid-type,misc]
    """Parses with libyaml (or PyYAML's own parser) and resolves by YAML 1.2's core schema."""

    yaml_implicit_resolvers: ClassVar[dict[str | None, list[tuple[str, re.Pattern[str]]]]] = {}
    yaml_constructors: ClassVar[dict[Any, Any]] = {
        tag: construct for tag, construct in _BASE.yaml_constructors.items() if tag in _CORE
    }
    """The core schema's tags only: SafeLoader's others (`!!binary`, `!!set`, `!!timestamp`,
    `!!omap`, `!!pairs`) build bytes, sets and dates, which no JSON is; a node tagged so is
    refused at its line, as an unknown tag is."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A mapping; a key it gives twice is refused (the loader then locates it). A key it
        gives beside a merge (`<<: *defaults`) overrides the merged one, as merge keys
        mean: only the mapping's own keys are compared, before the merge adds its own."""
        if isinstance(node, yaml.MappingNode):
            self._refuse_duplicates(node)
            self.flatten_mapping(node)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping

    def _refuse_duplicates(self, node: yaml.MappingNode) -> None:
        keys: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in keys
            except TypeError:
                continue  # an unhashable key: the constructor refuses it
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            keys.add(key)


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    """An integer, refused at its line when Python would not write it in decimal (more than
    `sys.get_int_max_str_digits()` digits): it could be neither compared nor reported."""
    value = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    if not _INT.match(value):  # only a `!!int` tag gives text that is no integer here
        raise _not_as_tagged(node, value, "an integer (digits, 0o… or 0x…)")
    try:
        if value.startswith("0o"):
            number = int(value[2:], 8)
        elif value.startswith("0x"):
            number = int(value[2:], 16)
        else:
            number = int(value, 10)
        str(number)  # a power-of-two base reads any length; decimal has the limit
    except ValueError:
        limit = sys.get_int_max_str_digits()
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer of more than {limit:,} decimal digits", node.start_mark
        ) from None
    return number


def _construct_float(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    written = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    if not _FLOAT.match(written):  # only a `!!float` tag gives text that is no number here
        raise _not_as_tagged(node, written, "a number (`1.5`, `2e-3`, `.inf`, `.nan`)")
    value = written.lower()
    if value.endswith(".inf"):
        return float("-inf") if value.startswith("-") else float("inf")
    if value == ".nan":
        return float("nan")
    return float(value)


def _construct_bool(loader: yaml.SafeLoader, node: yaml.Node) -> bool:
    value = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    if not _BOOL.match(value):  # `!!bool yes` is YAML 1.1's true, and no 1.2 reader's
        raise _not_as_tagged(node, value, "true or false")
    return value.lower() == "true"


def _construct_null(loader: yaml.SafeLoader, node: yaml.Node) -> None:
    value = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    if not _NULL.match(value):  # `!!null prompts/a.md` would drop what it tags
        raise _not_as_tagged(node, value, "nothing, `~` or `null`")


def _not_as_tagged(node: yaml.Node, value: str, expected: str) -> yaml.constructor.ConstructorError:
    """The refusal of a scalar whose tag says it is what its text is not (only an explicit
    tag gets here): read as the tag says, `!!bool yes` was false and `!!null text` nothing,
    each a silent change of what the file says."""
    tag = node.tag.removeprefix("tag:yaml.org,2002:")
    shown = value if len(value) <= 40 else value[:40] + "…"
    return yaml.constructor.ConstructorError(
        None,
        None,
        f"`!!{tag}` tags {shown!r}, which is not {expected}: remove the tag or the text",
        node.start_mark,
    )


CoreLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
CoreLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
CoreLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
CoreLoader.add_constructor("tag:yaml.org,2002:null", _construct_null)
for _tag, _pattern, _first in (
    ("tag:yaml.org,2002:bool", _BOOL, "tTfF"),
    ("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", _INT, "-+0123456789"),
    ("tag:yaml.org,2002:float", _FLOAT, "-+.0123456789"),
    ("tag:yaml.org,2002:merge", _MERGE, "<"),
):
    CoreLoader.add_implicit_resolver(_tag, _pattern, list(_first))


def load(text: str) -> Any:
    """The one document of `text` (None when empty), by the core schema; yaml.YAMLError when
    it is not YAML. CoreLoader is a SafeLoader: it builds plain data only."""
    return yaml.load(text, Loader=CoreLoader)  # noqa: S506
