"""The one reader of the run record: results.json (`evalward diff`) and shard parts
(`evalward merge`, the action's `merge`), each checked against its model (`record.schema`);
what does not fit is one ConfigError naming the file and what was expected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalward.errors import ConfigError, UnsafeFile
from evalward.files.safe_files import read_text
from evalward.record.schema import (
    RESULTS_SCHEMA_VERSION,
    SHARD_KIND,
    SHARD_SCHEMA_VERSION,
    Results,
    ShardPart,
)
from evalward.text import jsontext

MAX_RECORD_BYTES = 1 << 30
"""The largest results.json or shard part read (a part may come from a job that ran a pull
request's code: it is read as any file someone else placed, `safe_files`)."""


def read_results(path: Path) -> Results:
    """A results.json evalward wrote."""
    document = _json(path, "a results.json")
    if not isinstance(document, dict) or "evals" not in document or "fixtures" not in document:
        raise ConfigError(f"{path}: not an evalward results.json (no `evals` and `fixtures`)")
    version = document.get("schemaVersion")
    if version != RESULTS_SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: results schemaVersion {version!r}; this evalward reads "
            f"{RESULTS_SCHEMA_VERSION}. Read it with the evalward version that wrote it "
            "(its `evalward` field), or run the Evals again with this one"
        )
    try:
        return Results.model_validate(document)
    except ValidationError as exc:
        raise ConfigError(f"{path}: a malformed results.json ({_first(exc)})") from None


def read_part(path: Path) -> tuple[dict[str, Any], ShardPart]:
    """A shard part `run --shard` wrote: its document as written (what its seal covers) and
    what it holds."""
    document = _json(path, "the files `run --shard` wrote")
    if not isinstance(document, dict) or document.get("kind") != SHARD_KIND:
        raise ConfigError(
            f"{path}: not an evalward shard results file; give the files that "
            "`evalward run --shard i/n` wrote (shard-i-of-n.json)"
        )
    if document.get("schemaVersion") != SHARD_SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: shard schemaVersion {document.get('schemaVersion')!r}; this evalward "
            f"reads {SHARD_SCHEMA_VERSION}: run every part with the same evalward version"
        )
    try:
        return document, ShardPart.model_validate(document)
    except ValidationError as exc:
        raise ConfigError(f"{path}: a malformed shard results file ({_first(exc)})") from None


def _json(path: Path, what: str) -> Any:
    try:
        return jsontext.loads(read_text(path, MAX_RECORD_BYTES))
    except UnsafeFile as exc:
        raise ConfigError(f"{path}: cannot read: it {exc.reason}; give {what}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc}); give {what}") from None


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]
