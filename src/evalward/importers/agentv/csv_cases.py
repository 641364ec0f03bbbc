"""AgentV's CSV datasets (`tests: [file://cases/magic.csv]`), read as AgentV's own reader
reads them (docs/resources.md, "AgentV files", says what each column means): the first row
names the columns and each further row is a test, its cells quoted as CSV quotes them
(Python's `csv`). What AgentV refuses (`__providerOutput`, an unknown compact assertion with
a value, a `file://` that is not a `.py` file) is refused here, with the CSV's row.
"""

from __future__ import annotations

import csv
import io
import math
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from evalward.errors import AgentVProblem
from evalward.resources.reading.yamlsource import PathKey

SUPPORTED = {
    "contains", "contains-any", "contains-all", "icontains", "icontains-any", "icontains-all",
    "starts-with", "ends-with", "regex", "is-json", "equals", "latency", "cost",
}  # fmt: skip
"""The compact assertions AgentV's CSV reader maps (others, with a value, it refuses)."""
THRESHOLD_DEFAULT = {"starts-with": 0.75}
COMPACT = re.compile(r"^((?:not-)?[a-z][a-z0-9-]*)(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$")
MAX_ROWS = 100_000


def csv_cases(text: str, reference: str, path: PathKey) -> list[dict[str, Any]]:
    """Every row of the CSV at `reference` (its text) as an AgentV test."""
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    try:
        rows = [row for row in reader if any(cell for cell in row)]
    except csv.Error as exc:
        raise AgentVProblem(path, f"{reference}:{reader.line_num}: invalid CSV: {exc}") from None
    if len(rows) > MAX_ROWS:
        raise AgentVProblem(path, f"{reference}: more than {MAX_ROWS:,} rows")
    if not rows:
        return []
    headers = [header.strip() for header in rows[0]]
    cases = []
    for number, row in enumerate(rows[1:], start=1):
        record = {h: row[i] if i < len(row) else "" for i, h in enumerate(headers) if h}
        try:
            cases.append(_case(record, number, reference))
        except ValueError as exc:
            raise AgentVProblem(path, f"{reference}, row {number}: {exc}") from None
    return cases


@dataclass
class _Columns:
    """What one row's columns say, before they are put together as a test."""

    found: dict[str, Any] = field(default_factory=dict)
    """`id`, `input`, `criteria`, `metric`, `threshold`: the cells with a fixed meaning."""
    variables: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    assertions: list[dict[str, Any]] = field(default_factory=list)
    configs: dict[int, float] = field(default_factory=dict)
    """`__config:__expectedN:threshold`, by the assertion's index."""
    prefix: str = ""
    suffix: str = ""


def _case(record: dict[str, str], number: int, reference: str) -> dict[str, Any]:
    """One row as the test AgentV makes of it (its `parseCsvCases`)."""
    columns = _Columns()
    for key, value in record.items():
        _read_column(columns, key, value, reference)
    found, metadata = columns.found, columns.metadata
    for index, assertion in enumerate(columns.assertions):
        if found.get("metric"):
            assertion["metric"] = found["metric"]
        if index in columns.configs:
            assertion["min_score"] = columns.configs[index]
            metadata["threshold"] = columns.configs[index]
    given = str(found.get("id", ""))
    case: dict[str, Any] = {"id": given if given.strip() else f"row-{number}"}
    if "input" in found:
        case["input"] = f"{columns.prefix}{found['input']}{columns.suffix}"
    if found.get("criteria"):
        case["criteria"] = found["criteria"]
    if columns.assertions:
        case["assert"] = columns.assertions
    if "threshold" in found:
        case["threshold"] = found["threshold"]
    if columns.variables:
        case["vars"] = columns.variables
    if metadata:
        case["metadata"] = metadata
    return case


def _read_column(columns: _Columns, key: str, value: str, reference: str) -> None:
    """One cell into what the row says, by its column's name."""
    if key in ("id", "input"):
        columns.found[key] = value
    elif key.startswith("__expected"):
        if value.strip():
            columns.assertions.append(_assertion(value.strip(), reference))
    elif key == "__prefix":
        columns.prefix = value
    elif key == "__suffix":
        columns.suffix = value
    elif key == "__description":
        columns.found["criteria"] = value
    elif key in ("__provider_output", "__providerOutput"):
        raise ValueError(f"{key} gives a fixed output, which runs no agent: AgentV refuses it too")
    elif key == "__metric":
        columns.found["metric"] = value
    elif key == "__threshold":
        threshold = _number(value)
        if threshold is not None:
            columns.found["threshold"] = threshold
    elif key.startswith("__metadata:"):
        _metadata(columns.metadata, key.removeprefix("__metadata:"), value)
    elif key.startswith("__config:"):
        index, threshold = _config(key, value)
        columns.configs[index] = threshold
    else:
        _var(columns.variables, key, value)


def _assertion(expected: str, reference: str) -> dict[str, Any]:
    """One `__expected` cell as AgentV reads it (its `parseAssertionFromString`): a prefixed
    form, else the compact form, else a text the answer must equal."""
    prefixed = _prefixed(expected, reference)
    if prefixed is not None:
        return prefixed
    match = COMPACT.match(expected)
    if match is None:
        return {"type": "equals", "value": expected}
    kind, threshold_text, raw = match.groups()
    negate = kind.startswith("not-")
    base = kind.removeprefix("not-")
    if base not in SUPPORTED:
        if raw is not None or threshold_text is not None:
            raise ValueError(
                f"{base!r} is not a CSV assertion AgentV reads; it reads "
                + ", ".join(sorted(SUPPORTED))
            )
        return {"type": "equals", "value": expected}
    threshold = float(threshold_text) if threshold_text else THRESHOLD_DEFAULT.get(base)
    if base in ("latency", "cost") and threshold is None:
        raise ValueError(f"`{base}` needs a numeric limit, e.g. {base}(1)")
    out: dict[str, Any] = {"type": base}
    if negate:
        out["negate"] = True
    value = raw.strip() if raw is not None else None
    if base in ("contains-any", "contains-all", "icontains-any", "icontains-all"):
        out["value"] = [item.strip() for item in value.split(",")] if value else []
    elif value is not None:
        out["value"] = value
    if base == "latency":
        out["threshold"] = threshold
    elif base == "cost":
        out["budget"] = threshold
    elif threshold is not None:
        out["min_score"] = threshold
    return out


def _prefixed(expected: str, reference: str) -> dict[str, Any] | None:
    """A rubric (`grade:`, `llm-rubric:`) or a script grader beside the CSV (`python:`,
    `file://`); an inline JavaScript one is refused; None for any other cell."""
    if expected.startswith(("grade:", "llm-rubric:")):  # the prefix ends at the first colon
        return {"type": "llm-rubric", "value": expected.partition(":")[2].strip()}
    if expected.startswith(("javascript:", "fn:", "eval:")):
        raise ValueError(
            f"{expected[:40]!r}: an inline JavaScript assertion; write it as a `script` "
            "grader (a file) instead"
        )
    if not expected.startswith(("python:", "file://")):
        return None
    script = expected.removeprefix("python:").removeprefix("file://").strip()
    if not script.endswith(".py"):
        raise ValueError(f"{expected!r}: only file://*.py script graders are supported")
    beside = posixpath.normpath(posixpath.join(posixpath.dirname(reference), script))
    return {"type": "script", "command": ["python3", beside]}  # beside the CSV


def _number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _metadata(metadata: dict[str, Any], key: str, value: str) -> None:
    if not value.strip():
        return
    if key.endswith("[]"):
        items = [i.strip().replace("\\,", ",") for i in re.split(r"(?<!\\),", value)]
        metadata[key[:-2]] = [i for i in items if i]
    else:
        metadata[key] = value


def _config(key: str, value: str) -> tuple[int, float]:
    expected, _, setting = key.removeprefix("__config:").partition(":")
    if setting != "threshold":
        raise ValueError(f"{key}: a `__config` column sets `threshold` alone")
    if expected == "__expected":
        index = 0
    elif re.fullmatch(r"__expected\d+", expected):
        index = int(expected.removeprefix("__expected")) - 1
    else:
        raise ValueError(f"{key}: expected `__config:__expectedN:threshold`")
    threshold = _number(value)
    if index < 0 or threshold is None:
        raise ValueError(f"{key}: expected a number for an `__expectedN` column")
    return index, threshold


def _var(variables: dict[str, Any], key: str, value: str) -> None:
    """A column as a var; `vars.a.b` nests (AgentV's `assignCsvVar`)."""
    parts = [p.strip() for p in key.removeprefix("vars.").split(".") if p.strip()]
    if not key.startswith("vars.") or not parts:
        variables[key] = value
        return
    current = variables
    for part in parts[:-1]:
        if not isinstance(current.get(part), dict):
            current[part] = {}
        current = current[part]
    current[parts[-1]] = value
