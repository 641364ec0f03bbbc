"""Turn pydantic validation errors into located, human-worded problems.

Each problem names the field path as the YAML spells it (`spec.assertions[1].value`), says
what was expected and what was found, and suggests the nearest valid name for an unknown
field, kind or enum value.
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from evalward.errors import Problem
from evalward.resources.common import AT_FIELD, NAME_PATTERN
from evalward.resources.reading.yamlsource import Document, PathKey
from evalward.text.counts import counted


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """The nearest of `candidates` to `word`, as a hint; one that differs only in case first
    (`APIVERSION`, which difflib, comparing case, finds far from `apiVersion`)."""
    listed = list(candidates)
    close = [c for c in listed if c.lower() == word.lower() and c != word]
    close = close or difflib.get_close_matches(word, listed, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def render_path(loc: PathKey) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def found(value: Any) -> str:
    """A short rendering of what the document holds."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def problems_from_validation(
    exc: ValidationError, document: Document, file: str, model: type[BaseModel]
) -> list[Problem]:
    """One problem per offending YAML path (union branches are merged into one)."""
    problems = []
    for loc, message in located_messages(exc, document.data, model):
        line, column = document.locate(loc)
        problems.append(Problem(file, line, column, render_path(loc), message))
    return problems


def located_messages(
    exc: ValidationError, data: Any, model: type[BaseModel]
) -> list[tuple[PathKey, str]]:
    """Each offending YAML path of `data` and what is wrong there, for a caller that places
    them itself (an Eval's value may be a default from evalward.yaml)."""
    merged: dict[PathKey, list[dict[str, Any]]] = {}
    for error in exc.errors():
        loc = _yaml_loc(error, data)
        merged.setdefault(loc, []).append(dict(error))
    misspelt = _misspelt_required(merged)
    told = {id(error) for _, error in misspelt.values()}
    found = []
    for loc, errors in merged.items():
        left = [error for error in errors if id(error) not in told]
        if not left:
            continue  # told at the typo
        message = _message(left, loc, model, data)
        if loc in misspelt:
            message += f"; {misspelt[loc][0]!r} is required, and missing"
        found.append((loc, message))
    return found


def _misspelt_required(
    merged: dict[PathKey, list[dict[str, Any]]],
) -> dict[PathKey, tuple[str, dict[str, Any]]]:
    """An unknown field whose nearest name is a required field missing beside it (one typo:
    `targetAgnet`), by its path, with the missing field's name and error: told once, at the
    typo. The missing field's own problem, at the object's first line and listed first, would
    hide the cause. A field that may be left out but not left empty (a fixture's
    `assertions`, whose default is refused) is missing the same way when its key is absent."""
    absent: dict[PathKey, dict[str, dict[str, Any]]] = {}
    """By the object's path, each field its document lacks that the object needs."""
    for loc, errors in merged.items():
        for error in errors:
            raw = tuple(error["loc"])
            if error["type"] == "missing" and loc:
                absent.setdefault(loc[:-1], {}).setdefault(str(loc[-1]), error)
            elif error["type"] != "extra_forbidden" and raw and raw[:-1] == loc:
                # its key is not in the document (_yaml_loc left it out): its default refused
                absent.setdefault(loc, {}).setdefault(str(raw[-1]), error)
    found: dict[PathKey, tuple[str, dict[str, Any]]] = {}
    for loc, errors in merged.items():
        if errors[0]["type"] != "extra_forbidden" or not loc:
            continue
        missing = absent.get(loc[:-1], {})
        close = difflib.get_close_matches(str(loc[-1]), list(missing), n=1, cutoff=0.6)
        if close:
            found[loc] = (close[0], missing.pop(close[0]))  # one typo per missing field
    return found


def _yaml_loc(error: Any, data: Any) -> PathKey:
    """pydantic's `loc` minus the parts that are union branch tags, not YAML keys."""
    raw: tuple[str | int, ...] = tuple(error["loc"])
    if error["type"] == AT_FIELD:  # `error_at`: the field inside the object it names
        raw += tuple(error["ctx"]["at"])
    loc: list[str | int] = []
    current = data
    for index, part in enumerate(raw):
        last = index == len(raw) - 1
        in_dict = isinstance(current, dict) and part in current
        in_list = isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        if in_dict or in_list:
            # a key YAML reads as another type (`1:`) is marked by its text, as it is written
            loc.append(str(part) if in_dict and not isinstance(part, str) else part)
            current = current[part]
        elif last and error["type"] in ("missing", "extra_forbidden"):
            loc.append(part)
    return tuple(loc)


def _message(errors: list[dict[str, Any]], loc: PathKey, model: type[BaseModel], data: Any) -> str:
    first = errors[0]
    kind = first["type"]
    value = first.get("input")
    if first["loc"] and first["loc"][-1] == "[key]" and kind == "string_type":
        return (
            f"expected a key that is a string; found {found(value)}: YAML reads it as "
            f"another type, so quote it ({json.dumps(str(value))})"
        )
    if kind == "extra_forbidden":
        name = str(loc[-1]) if loc else "?"
        home = _block_holding(model, loc, data)
        if home is not None:
            return (
                f"unknown field {name!r} here: it belongs in the `{home}` block "
                f"({render_path((*loc[:-1], home, name))})"
            )
        siblings = siblings_of(model, loc, data)
        hint = did_you_mean(name, siblings)
        if not hint and siblings:
            hint = f"; expected one of: {', '.join(sorted(siblings))}"
        return f"unknown field {name!r}{hint}"
    if kind == "missing":
        return f"missing required field {loc[-1]!r}" if loc else "missing required field"
    if kind == "union_tag_invalid":
        ctx = first.get("ctx", {})
        tags = re.findall(r"'([^']*)'", str(ctx.get("expected_tags", "")))
        tag = str(ctx.get("tag", value))
        return (
            f"unknown assertion type {tag!r}; expected one of: {', '.join(tags)}"
            f"{did_you_mean(tag, tags)}"
        )
    if kind == "union_tag_not_found":
        return "missing required field 'type'"
    if kind in ("enum", "literal_error"):
        options = re.findall(r"'([^']*)'", str(first.get("ctx", {}).get("expected", "")))
        return (
            f"expected one of: {', '.join(options)}; found {found(value)}"
            f"{did_you_mean(str(value), options)}"
        )
    if kind == "string_pattern_mismatch" and first.get("ctx", {}).get("pattern") == NAME_PATTERN:
        return (
            "expected a lowercase name of letters, digits, '.', '_' or '-' that starts and ends "
            f"with a letter or digit; found {found(value)}"
        )
    if kind == "too_short":
        ctx = first.get("ctx", {})
        minimum = ctx.get("min_length", 1)
        return f"expected at least {counted(minimum, 'item')}; found none"
    if kind == "string_too_short":
        return f"expected a non-empty string; found {found(value)}"
    if kind == AT_FIELD:
        return str(first["ctx"]["message"])
    if kind == "value_error":
        return str(first["msg"]).removeprefix("Value error, ")
    if kind == "list_type" and isinstance(value, str):
        return f"expected a valid list; found {found(value)}; {_as_a_list(value, loc)}"
    expectations = dict.fromkeys(_expectation(str(error["msg"])) for error in errors)
    return f"expected {' or '.join(expectations)}; found {found(value)}"


_ARGV_FIELDS = frozenset({"run", "start", "dump", "command", "args"})
"""Lists that are a program's arguments: one string of several words is their argv."""


def _as_a_list(text: str, loc: PathKey) -> str:
    """How a list written as one string (`watch: crm/**`, `start: python3 server.py`) is
    written: the string as its one item, or, for a program's arguments, its words as items
    where it holds several (a fact the simulated user knows stays one item)."""
    import yaml  # lazy: a run's start-up leaves PyYAML to what needs it

    words = text.split()
    argv = bool(loc) and loc[-1] in _ARGV_FIELDS and len(words) > 1
    flow = yaml.safe_dump(words if argv else [text], default_flow_style=True, width=1_000)
    if argv:
        return f"write it as a list of its items (a command's arguments: {flow.strip()})"
    return f"write it as a list: {flow.strip()}"


def _expectation(message: str) -> str:
    text = message.removeprefix("Input should be ")
    if text.startswith("a valid dictionary"):  # "… or instance of ProviderSettings"
        return "a mapping"
    if text.startswith(("greater", "less")):
        return f"a number {text}"
    if text.startswith("String should match pattern "):
        return "a string matching " + text.removeprefix("String should match pattern ")
    return text


def siblings_of(model: type[BaseModel], loc: PathKey, data: Any) -> list[str]:
    """Valid field names at the level of `loc`'s last part, for did-you-mean."""
    chosen = _model_at(model, loc, data)
    return [] if chosen is None else [f.alias or n for n, f in chosen.model_fields.items()]


def _block_holding(model: type[BaseModel], loc: PathKey, data: Any) -> str | None:
    """The field at the level of `loc`'s last part that holds one object (a block, not a
    list or mapping) of which that last part is a field: `execution` for `repsPerFixture`
    written beside it under `spec`. None when no block has it."""
    if not loc:
        return None
    chosen = _model_at(model, loc, data)
    if chosen is None:
        return None
    for name, field_info in chosen.model_fields.items():
        block = _block_model(field_info.annotation)
        if block is not None and loc[-1] in {f.alias or n for n, f in block.model_fields.items()}:
            return field_info.alias or name
    return None


def _block_model(annotation: object) -> type[BaseModel] | None:
    """The model a field holds one object of (`ExecutionConfig`, maybe optional); None for a
    list, a mapping, a union of several models or a plain value."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    union = typing.get_origin(annotation) is typing.Union or isinstance(annotation, types.UnionType)
    if not union:
        return None
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    return _block_model(args[0]) if len(args) == 1 else None


def _model_at(model: type[BaseModel], loc: PathKey, data: Any) -> type[BaseModel] | None:
    """The model of the object `loc`'s last part is in.

    Walks the models along the path; where a field holds a union of models (assertions), the
    one whose `type` literal matches the document's `type` is taken.
    """
    candidates: list[type[BaseModel]] = [model]
    keyed = False  # the part is a key of a mapping of models (`providers.openai`), not a field
    for part in loc[:-1]:
        if isinstance(part, int) or keyed:
            data = _child(data, part)
            keyed = False
            continue
        current = _pick(candidates, data)
        data = _child(data, part)
        fields = current.model_fields.items() if current is not None else []
        field_info = next((f for n, f in fields if (f.alias or n) == part), None)
        candidates = _models_in(field_info.annotation) if field_info is not None else []
        keyed = field_info is not None and _keyed(field_info.annotation)
    return _pick(candidates, data)


def _child(data: Any, part: str | int) -> Any:
    if isinstance(data, dict):
        return data.get(part)
    if isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
        return data[part]
    return None


def _pick(candidates: list[type[BaseModel]], data: Any) -> type[BaseModel] | None:
    if len(candidates) <= 1 or not isinstance(data, dict):
        return candidates[0] if candidates else None
    for candidate in candidates:
        field_info = candidate.model_fields.get("type")
        tags = getattr(field_info.annotation, "__args__", ()) if field_info else ()
        if data.get("type") in tags:
            return candidate
    return candidates[0]


def _keyed(annotation: object) -> bool:
    """Whether a field holds a mapping (`dict[str, Price]`, maybe optional), whose keys are
    names the document chooses, so the fields below them are the mapped model's."""
    origin = typing.get_origin(annotation)
    if origin is dict:
        return True
    union = origin is typing.Union or isinstance(annotation, types.UnionType)
    return union and any(_keyed(arg) for arg in typing.get_args(annotation))


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [found for arg in getattr(annotation, "__args__", ()) for found in _models_in(arg)]
