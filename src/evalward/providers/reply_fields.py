"""Reading a provider's JSON reply field by field.

A reply is data from outside: a proxy, a self-hosted server or a buggy gateway can answer
HTTP 200 with any JSON at all. Every field a parser reads goes through one of these checks, so
a shape nobody expected becomes a `ProviderError` naming the field and what was found (short;
files and logs redact it further), never a crash. Fields a parser does not read are ignored.

One parser per wire format reads a reply through a reader it is given: `WireReader` for the
answer evalward acts on (a judge's verdict, a declarative agent's turn), and `LenientReader`
for a reply the model proxy passes on to an agent as it came, which it only meters and
records: a field of another shape reads as absent, and nothing is refused.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, TypeVar

from evalward.errors import ProviderError
from evalward.text.cuts import cap_chars

T = TypeVar("T")

SHOWN_CHARS = 80
"""How much of an unexpected value an error message quotes."""


def shown(value: object) -> str:
    """A short JSON rendering of `value` for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return cap_chars(text, SHOWN_CHARS)


class WireReader:
    """Typed reads from one provider's reply; each failure names `path` in that reply."""

    def __init__(self, provider: str) -> None:
        self.provider = provider

    def error(self, path: str, expected: str, found: object) -> ProviderError:
        return ProviderError(
            f"{self.provider}: malformed reply: {path} should be {expected}, got {shown(found)}"
        )

    def wrong(self, path: str, expected: str, found: object, default: T) -> T:
        """A value a parser cannot read: refused here (a lenient reader reads `default`)."""
        del default
        raise self.error(path, expected, found)

    def mapping(self, value: object, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(path, "an object", value)
        return value

    def optional_mapping(self, value: object, path: str) -> dict[str, Any]:
        """An object, or {} when the field is absent or null."""
        return {} if value is None else self.mapping(value, path)

    def array(self, value: object, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.error(path, "a list", value)
        return value

    def optional_array(self, value: object, path: str) -> list[Any]:
        return [] if value is None else self.array(value, path)

    def text(self, value: object, path: str) -> str:
        if not isinstance(value, str):
            raise self.error(path, "a string", value)
        return value

    def name(self, value: object, path: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.error(path, "a non-empty string", value)
        return value

    def optional_text(self, value: object, path: str) -> str:
        """A string, or "" when the field is absent or null."""
        return "" if value is None else self.text(value, path)

    def count(self, value: object, path: str) -> int:
        """A token count: a whole number ≥ 0 (0 when absent or null)."""
        if value is None:
            return 0
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (isinstance(value, float) and not (math.isfinite(value) and value.is_integer()))
            or value < 0
        ):
            raise self.error(path, "a whole number ≥ 0", value)
        return int(value)


class LenientReader(WireReader):
    """The reads of `WireReader` that never refuse: what is not of the shape asked for reads
    as absent (an empty object or list, "" or 0), an item of a list that is not an object is
    skipped (every list a reply parser reads is one of objects), and a scalar is read as
    text. For a reply the model proxy only meters and records."""

    def wrong(self, path: str, expected: str, found: object, default: T) -> T:
        del path, expected, found
        return default

    def mapping(self, value: object, path: str) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        return dict(value) if isinstance(value, Mapping) else {}

    def array(self, value: object, path: str) -> list[Any]:
        return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []

    def text(self, value: object, path: str) -> str:
        return str(value or "")

    name = text

    def count(self, value: object, path: str) -> int:
        """A token count as `WireReader` reads one, else 0: metering a reply passed on must
        not fail."""
        try:
            return super().count(value, path)
        except ProviderError:
            return 0
