"""State criteria checked against a playground's final state (docs/playgrounds.md).

Each says what it expected and what the state held. One that cannot be evaluated (no
playground, a query that fails, a snapshot file that is missing, a file that is not JSON)
is `error`, never a pass. Paths are dotted; a key with dots in it (`files.out/refund.json`)
is found whole, and in `except` lists `*` stands for any one key.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from typing import Any

from evalward.resources.checks.assertions import Assertion
from evalward.resources.checks.patterns import compiled_pattern
from evalward.resources.checks.state_assertions import (
    FileStateAssertion,
    SqlAssertion,
    StateSnapshotAssertion,
    StateUnchangedAssertion,
    StateValueAssertion,
)
from evalward.rundata.playground_state import (
    FILE_HASH_LIMIT,
    FILE_TEXT_LIMIT,
    KeptPairs,
    PlaygroundRun,
    QueryAnswer,
    SnapshotMissing,
    alike,
    same,
)
from evalward.rundata.results import Status
from evalward.scoring.assertions import REGEX_TIMEOUT_SECONDS, CheckOutcome, pass_or_fail
from evalward.text import jsontext
from evalward.text.counts import and_others, first_few
from evalward.text.cuts import cap_chars

MAX_LISTED = 5
_FILES = "files"
"""The files folder's key in the state (`FilesPart.state_part`)."""


class _Unevaluable(Exception):
    pass


_MISSING = object()


def check_state(assertion: Assertion, playground: PlaygroundRun | None) -> CheckOutcome:
    """One state criterion against the run's playground (None: it had none, or its state
    could not be read)."""
    if playground is None:
        return Status.error, (
            "no playground state to check: the fixture (or its Eval) names no `playground`"
        )
    try:
        if isinstance(assertion, StateValueAssertion):
            return _value(assertion, playground)
        if isinstance(assertion, SqlAssertion):
            return _sql(assertion, playground.final.queries.get(assertion.query))
        if isinstance(assertion, FileStateAssertion):
            return _file(assertion, playground)
        if isinstance(assertion, StateSnapshotAssertion):
            return _snapshot(assertion, playground)
        if isinstance(assertion, StateUnchangedAssertion):
            return _unchanged(assertion, playground)
    except _Unevaluable as exc:
        return Status.error, str(exc)
    return Status.error, f"assertion type {assertion.type!r} is not a state criterion"


# --- paths -------------------------------------------------------------------------------


def lookup(document: Any, path: str) -> Any:
    """The value at a dotted path, or _MISSING (`located`)."""
    found = located(document, path)
    return _MISSING if found is None else found[1]


def located(document: Any, path: str) -> tuple[tuple[str, ...], Any] | None:
    """The keys a dotted path names in `document` and the value there, or None. A key with
    dots in it is found whole (`files.out/refund.json`); a path that could name two values
    (a row the run added, keyed `A-1042.status`, beside the row `A-1042` and its `status`)
    cannot be evaluated: which one it means is never the run's to choose."""
    readings = list(_readings(document, path.split(".") if path else []))
    if len(readings) > 1:
        raise _Unevaluable(_two_ways(path, readings[0][0], readings[1][0]))
    return readings[0] if readings else None


def _two_ways(path: str, one: tuple[str, ...], other: tuple[str, ...]) -> str:
    return (
        f"{path} names more than one place in the playground's state, the keys "
        f"{json.dumps(list(one))[:200]} and {json.dumps(list(other))[:200]}: a key of it "
        "holds a dot, and which the path means is not the run's to choose"
    )


def _readings(
    value: Any, parts: list[str], *, wild: bool = False
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each way `parts` names keys of `value` (a key with dots in it takes several parts;
    with `wild`, as in `except` lists, `*` any one key, and never part of a dotted key: a
    row the agent keys `*.updated_at` would otherwise be read as the pattern at its row,
    and pass whole), with the value there."""
    if not parts:
        yield (), value
        return
    if isinstance(value, dict):
        for size in range(len(parts), 0, -1):
            if wild and size > 1 and "*" in parts[:size]:
                continue  # a key spelt `*.updated_at` is the agent's, never the pattern
            key = ".".join(parts[:size])
            if key in value:
                for keys, found in _readings(value[key], parts[size:], wild=wild):
                    yield (key, *keys), found
        if wild and parts[0] == "*":
            for key, inner in value.items():
                if key != "*":  # a key `*` was read as itself above
                    for keys, found in _readings(inner, parts[1:], wild=wild):
                        yield (str(key), *keys), found
    elif isinstance(value, list):
        indexes = (
            range(len(value))
            if wild and parts[0] == "*"
            else [int(parts[0])]
            if parts[0].isdigit() and int(parts[0]) < len(value)
            else []
        )
        for index in indexes:
            for keys, found in _readings(value[index], parts[1:], wild=wild):
                yield (str(index), *keys), found


def differences(
    before: Any, after: Any, at: tuple[str, ...] = (), kept: KeptPairs | None = None
) -> Iterator[tuple[str, ...]]:
    """Every path where `after` differs from `before` (a key added, removed or changed);
    what is `alike` is passed over whole, at C speed, or, for records of documents the job
    keeps (`kept`), by the verdict found in an earlier run."""
    if kept is None:
        if alike(before, after):
            return
    elif not kept.split(before, after) and kept.alike(before, after):
        return
    if isinstance(before, dict) and isinstance(after, dict):
        keys = None if kept is None else kept.differing_keys(before, after)
        for key in sorted(before.keys() | after.keys(), key=str) if keys is None else keys:
            if key not in before or key not in after:
                yield (*at, str(key))
            elif kept is None or not kept.known(before[key], after[key]):
                yield from differences(before[key], after[key], (*at, str(key)), kept)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            yield from differences(old, new, (*at, str(index)), kept)
    elif not same(before, after):
        yield at


def shown(value: Any, limit: int = 120) -> str:
    if value is _MISSING:
        return "nothing (the path is not there)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return cap_chars(text, limit)


def _listing(paths: list[tuple[str, ...]]) -> str:
    return first_few([".".join(p) or "(the whole state)" for p in paths], MAX_LISTED)


# --- the criteria ------------------------------------------------------------------------


def _value(a: StateValueAssertion, playground: PlaygroundRun) -> CheckOutcome:
    document: Any = playground.final.document
    where = a.at or "the state"
    if a.file is not None:
        document = _parsed_file(a.file, playground)
        where = f"{a.file}" + (f" at {a.at}" if a.at else "")
    found = located(document, a.at)
    actual = _MISSING if found is None else found[1]
    # a file of the folder whose text the state does not hold stands there as a record of
    # it (runtime/playground/files.py): never the text a criterion on its text reads
    unread = {} if a.file is not None or found is None else _unread_files(*found)
    record = actual in unread.values()  # the value is a file's record, not its text
    held = shown(actual) + (_nearest(document, a.at) if actual is _MISSING else "")
    if a.exists is not None:
        there = actual is not _MISSING
        if a.exists and record and not _a_file(actual):
            return _not_a_file(where, held, "to exist as a file")
        found_there = f"it holds {held}" if there else "it is not there" + _nearest(document, a.at)
        return _existence(a.exists, where, there, found_there)
    if record and not _a_file(actual):
        return _not_a_file(where, held)
    if unread and (a.matches is not None or record):
        raise _Unevaluable(_no_text(unread))
    if a.matches is not None:
        text = actual if isinstance(actual, str) else shown(actual, 10**6)
        try:
            matched = compiled_pattern(a.matches).search(text, timeout=REGEX_TIMEOUT_SECONDS)
        except TimeoutError:
            raise _Unevaluable(f"/{a.matches}/ did not finish on {where}") from None
        return pass_or_fail(
            actual is not _MISSING and matched is not None,
            f"{where} matches /{a.matches}/",
            f"expected {where} to match /{a.matches}/; the state held {held}",
        )
    if "contains" in a.model_fields_set:
        return pass_or_fail(
            _contains(actual, a.contains),
            f"{where} contains {shown(a.contains)}",
            f"expected {where} to contain {shown(a.contains)}; the state held {held}",
        )
    return pass_or_fail(
        actual is not _MISSING and same(a.equals, actual),
        f"{where} equals {shown(a.equals)}",
        f"expected {where} to equal {shown(a.equals)}; the state held {held}",
    )


def _unread_files(keys: tuple[str, ...], value: Any) -> dict[str, Any]:
    """The files of the files folder at or under the state's place `keys` (which holds
    `value`) whose text the state does not hold, each with the record kept in its place:
    its size (and hash), a link's target, a special or unreadable file."""
    if len(keys) == 2 and keys[0] == _FILES:
        return {keys[1]: value} if isinstance(value, dict) else {}
    files = value if keys == (_FILES,) else value.get(_FILES) if keys == () else None
    if not isinstance(files, dict):
        return {}
    return {name: kept for name, kept in files.items() if isinstance(kept, dict)}


def _not_a_file(
    where: str, held: str, expected: str = "to be a file the state read"
) -> CheckOutcome:
    """A link (never followed), a FIFO or an unreadable file where the criterion reads a
    file's text (or asks that one exists): not the file it asks for, whatever it leads to."""
    return Status.failed, f"expected {where} {expected}; it holds {held}"


def _no_text(unread: dict[str, Any]) -> str:
    name, kept = next(iter(unread.items()))
    more = and_others(len(unread), "such files")
    return (
        f"{_FILES}.{name} is not text the state holds: it holds {shown(kept)}{more}, for a "
        f"file over {FILE_TEXT_LIMIT // 1024} KiB or not UTF-8 is kept by its size and hash "
        "(and a link, never followed, a FIFO or an unreadable file by what it is); a "
        "criterion on its text cannot be decided. Keep the file to UTF-8 text under "
        f"{FILE_TEXT_LIMIT // 1024} KiB, or check only that it is there (`fileState` with "
        "`exists`)"
    )


def _nearest(document: Any, path: str) -> str:
    """For a path that is not there: the nearest key where it leaves the state, when one is
    close to what it names there (a row the run did not make has none)."""
    parts = path.split(".") if path else []
    for end in range(len(parts) - 1, -1, -1):
        reached = lookup(document, ".".join(parts[:end]))
        if reached is _MISSING:
            continue
        keys = [str(key) for key in reached] if isinstance(reached, dict) else []
        close = difflib.get_close_matches(parts[end], keys, n=1)
        if close and close[0] != parts[end]:
            return f" (did you mean {'.'.join([*parts[:end], close[0]])}?)"
        return ""
    return ""


def _contains(actual: Any, expected: Any) -> bool:
    """A substring of a text, an item of a list (a partial object of an object item), a
    partial object of an object: a list's text item holds no item of it, so `roles`
    ["viewer", "admin-request-denied"] does not contain "admin"."""
    if isinstance(actual, str):
        return isinstance(expected, str) and expected in actual
    if isinstance(actual, list):
        return any(_contains_or_same(item, expected) for item in actual)
    if isinstance(actual, dict) and isinstance(expected, dict):
        return all(k in actual and _contains_or_same(actual[k], v) for k, v in expected.items())
    return False


def _contains_or_same(actual: Any, expected: Any) -> bool:
    return same(expected, actual) or (isinstance(expected, dict) and _contains(actual, expected))


def _file_content(path: str, playground: PlaygroundRun) -> Any:
    """What the state holds of the file at `path` in the playground's folder, or _MISSING."""
    files = playground.final.document.get(_FILES)
    if files is None:
        raise _Unevaluable(f"{path}: the playground has no `files` folder")
    return files.get(path.strip("/"), _MISSING)


def _a_file(content: Any) -> bool:
    """Whether the folder's entry is a file the state read: its text, or its size (and
    hash); not a link, a special file or one it could not read."""
    return isinstance(content, str) or (isinstance(content, dict) and "bytes" in content)


def _parsed_file(path: str, playground: PlaygroundRun) -> Any:
    content = _file_content(path, playground)
    if content is _MISSING:
        raise _Unevaluable(f"{path} is not in the playground's folder")
    if not isinstance(content, str):
        raise _Unevaluable(f"{path} is not a text file the state holds ({shown(content)})")
    # lazy: PyYAML costs about 10 ms of start-up, and only a criterion on a file needs it
    import yaml

    # lazy: it imports PyYAML
    from evalward.resources.reading import yaml12

    try:
        # jsontext: the file is the agent's, and `json.loads` would keep a lone surrogate
        # its text escapes and fail with a RecursionError on `[[[[…`; NaN reads as it did
        if path.endswith(".json"):
            return jsontext.loads(content, finite=False)
        return yaml12.load(content)
    except (ValueError, yaml.YAMLError) as exc:
        raise _Unevaluable(f"{path} does not parse as JSON or YAML: {exc}") from None


def _sql(a: SqlAssertion, answer: QueryAnswer | None) -> CheckOutcome:
    if answer is None:
        raise _Unevaluable("the playground has no SQLite database to query")
    if answer.error:
        raise _Unevaluable(answer.error)
    rows = [list(row) for row in answer.rows]
    if a.count is not None:
        return pass_or_fail(
            len(rows) == a.count,
            f"the query returned {len(rows)} rows",
            f"expected {a.count} rows; the query returned {len(rows)}: {shown(rows)}",
        )
    expected = a.rows or []
    got: list[Any] = [
        dict(zip(answer.columns, row, strict=True)) if isinstance(want, dict) else row
        for want, row in zip(expected, rows, strict=False)
    ]
    ok = len(rows) == len(expected) and all(
        _row_matches(want, have) for want, have in zip(expected, got, strict=True)
    )
    returned = shown(got) if len(rows) == len(expected) else f"{len(rows)} rows: {shown(rows)}"
    return pass_or_fail(
        ok,
        f"the query returned the {len(rows)} expected rows",
        f"expected rows {shown(expected)}; the query returned {returned}",
    )


def _row_matches(expected: list[Any] | dict[str, Any], actual: Any) -> bool:
    if isinstance(expected, dict):
        return all(k in actual and same(v, actual[k]) for k, v in expected.items())
    return same(expected, actual)


def _file(a: FileStateAssertion, playground: PlaygroundRun) -> CheckOutcome:
    content = _file_content(a.path, playground)
    if a.exists is not None:
        there = content is not _MISSING
        if a.exists and there and not _a_file(content):  # a link (never followed), a FIFO …
            return _not_a_file(a.path, shown(content), "to exist as a file")
        return _existence(a.exists, a.path, there, "it is there" if there else "it is not")
    if content is _MISSING:
        return Status.failed, f"{a.path} is not in the playground's folder"
    if a.contains is not None:
        if not _a_file(content):
            return _not_a_file(a.path, shown(content))
        if not isinstance(content, str):
            raise _Unevaluable(_no_text({a.path.strip("/"): content}))
        return pass_or_fail(
            a.contains in content,
            f"{a.path} contains {shown(a.contains)}",
            f"expected {a.path} to contain {shown(a.contains)}; it holds {shown(content)}",
        )
    parsed = _parsed_file(a.path, playground)
    return pass_or_fail(
        same(a.equals_json, parsed),
        f"{a.path} equals {shown(a.equals_json)}",
        f"expected {a.path} to equal {shown(a.equals_json)}; it holds {shown(parsed)}",
    )


def _snapshot(a: StateSnapshotAssertion, playground: PlaygroundRun) -> CheckOutcome:
    expected = a.value
    if playground.compared is not None:  # the fixture's own, the same in each of its runs
        playground.compared.keep(expected)
    if a.snapshot is not None:
        expected = playground.final.snapshots.get(a.snapshot, SnapshotMissing("not read"))
        if isinstance(expected, SnapshotMissing):
            raise _Unevaluable(f"the snapshot {a.snapshot!r} cannot be read: {expected.why}")
    found = located(playground.final.document, a.at)
    if found is None:
        raise _Unevaluable(f"{a.at} is not in the playground's state")
    prefix, actual = found
    # an `except` path names a place of the state, or of the snapshot where it stands
    snapshot = expected
    for key in reversed(prefix):
        snapshot = {key: snapshot}
    documents = (playground.final.document, snapshot)
    changed = _left(
        differences(expected, actual, prefix, playground.compared), a.excepted, documents
    )
    if not changed:
        return Status.passed, f"{a.at or 'the state'} matches the snapshot"
    first = changed[0]
    relative = ".".join(first[len(prefix) :])
    return Status.failed, (
        f"{a.at or 'the state'} differs from the snapshot at {_listing(changed)}; at "
        f"{'.'.join(first) or 'the root'} expected {shown(lookup(expected, relative))}, the "
        f"state held {shown(lookup(actual, relative))}"
    )


def _unchanged(a: StateUnchangedAssertion, playground: PlaygroundRun) -> CheckOutcome:
    documents = (playground.initial.document, playground.final.document)
    was, now = (located(document, a.at) for document in documents)
    if was is None and now is None:
        raise _Unevaluable(f"{a.at} is not in the playground's state")
    if was is not None and now is not None and was[0] != now[0]:
        raise _Unevaluable(_two_ways(a.at, was[0], now[0]))
    prefix = (now or was or ((), None))[0]
    before, after = (_MISSING if at is None else at[1] for at in (was, now))
    changed = _left(differences(before, after, prefix, playground.compared), a.excepted, documents)
    unsized = _left(iter(_unread_alike(was, now)), a.excepted, documents)
    if unsized and not changed:
        raise _Unevaluable(
            f"{'.'.join(unsized[0])} is a file over {FILE_HASH_LIMIT // 2**20} MiB, which "
            "the state records by its size alone, and its size did not change: whether its "
            "content did cannot be decided. Name it in `except`, or keep the playground's "
            f"files under {FILE_HASH_LIMIT // 2**20} MiB"
        )
    if not changed:
        return Status.passed, f"nothing changed in {a.at or 'the state'} outside the named paths"
    first = changed[0]
    return Status.failed, (
        f"expected nothing outside {', '.join(a.excepted) or 'no path'} to change; changed: "
        f"{_listing(changed)} (at {'.'.join(first)}: {shown(_at(playground, 'initial', first))} "
        f"→ {shown(_at(playground, 'final', first))})"
    )


def _unread_alike(
    was: tuple[tuple[str, ...], Any] | None, now: tuple[tuple[str, ...], Any] | None
) -> list[tuple[str, ...]]:
    """The files at or under a place of the state before and after a run that the state
    recorded by their size alone, the same size both times: unread, not unchanged."""
    if was is None or now is None:
        return []
    before, after = _unread_files(*was), _unread_files(*now)
    return [
        (_FILES, name)
        for name, kept in after.items()
        if set(kept) == {"bytes"} and before.get(name) == kept
    ]


def _at(playground: PlaygroundRun, which: str, path: tuple[str, ...]) -> Any:
    value = getattr(playground, which).document
    for key in path:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return _MISSING
    return value


def _left(
    changed: Iterator[tuple[str, ...]], excepted: list[str], documents: tuple[Any, ...]
) -> list[tuple[str, ...]]:
    """The changed paths no `except` path covers: one covers what is at or under a place it
    names in the state before or after (`*` any one key), and only that; one that names a
    place two ways (`located`) cannot be evaluated."""
    places: set[tuple[str, ...]] = set()
    for pattern in excepted:
        for document in documents:
            readings = [keys for keys, _ in _readings(document, pattern.split("."), wild=True)]
            by_path: dict[str, tuple[str, ...]] = {}
            for keys in readings:
                other = by_path.setdefault(".".join(keys), keys)
                if other != keys:
                    raise _Unevaluable(_two_ways(pattern, other, keys))
            places.update(readings)
    return [
        path for path in changed if not any(path[:n] in places for n in range(1, len(path) + 1))
    ]


def _existence(expected: bool, where: str, there: bool, found: str) -> CheckOutcome:
    """Whether `where` exists as `expected`; `found` says what is there when it does not."""
    return pass_or_fail(
        there is expected,
        f"{where} {'exists' if there else 'is absent'}",
        f"expected {where} to {'exist' if expected else 'be absent'}; {found}",
    )
