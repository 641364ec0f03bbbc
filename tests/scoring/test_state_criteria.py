"""State criteria against a playground's state before and after a run: what passes, what
fails with what the state held, and what cannot be evaluated (an error, never a pass)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from evalward.resources.checks.assertions import Assertion
from evalward.resources.conversation import Conversation
from evalward.rundata.playground_state import (
    PlaygroundRun,
    PlaygroundState,
    QueryAnswer,
    SnapshotMissing,
)
from evalward.rundata.results import Status
from evalward.scoring.state import check_state

pytestmark = pytest.mark.unit

ASSERTION: TypeAdapter[Any] = TypeAdapter(Assertion)

BEFORE = {
    "db": {
        "orders": {
            "A-1": {"id": "A-1", "status": "delivered", "updated_at": "1"},
            "B-2": {"id": "B-2", "status": "delivered", "updated_at": "1"},
        },
        "refunds": {},
    },
    "files": {"out/ticket.json": '{"priority": "high", "tags": ["refund", "vip"]}'},
    "service": {"refunds": []},
}


def after(**changes: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "db": {
            "orders": {
                "A-1": {"id": "A-1", "status": "refunded", "updated_at": "2"},
                "B-2": {"id": "B-2", "status": "delivered", "updated_at": "2"},
            },
            "refunds": {"1": {"order_id": "A-1", "amount": 25.0}},
        },
        "files": dict(BEFORE["files"]),
        "service": {"refunds": [{"order_id": "A-1", "amount": 25, "note": "ok"}]},
    }
    state.update(changes)
    return state


def playground(
    final: dict[str, Any] | None = None,
    queries: dict[str, QueryAnswer] | None = None,
    snapshots: dict[str, Any] | None = None,
) -> PlaygroundRun:
    return PlaygroundRun(
        PlaygroundState("shop", BEFORE),
        PlaygroundState("shop", final or after(), queries or {}, snapshots or {}),
    )


def check(assertion: dict[str, Any], run: PlaygroundRun | None = None) -> tuple[Status, str]:
    return check_state(ASSERTION.validate_python(assertion), run or playground())


@pytest.mark.parametrize(
    "assertion",
    [
        {"type": "stateValue", "at": "db.orders.A-1.status", "equals": "refunded"},
        {"type": "stateValue", "at": "db.refunds.1.amount", "equals": 25},
        {"type": "stateValue", "at": "service.refunds", "contains": {"order_id": "A-1"}},
        {"type": "stateValue", "at": "service.refunds.0.note", "matches": "^ok$"},
        {"type": "stateValue", "at": "db.refunds.2", "exists": False},
        {"type": "stateValue", "file": "out/ticket.json", "at": "tags", "contains": "vip"},
        {"type": "stateValue", "at": "files.out/ticket.json", "contains": "high"},
        {
            "type": "fileState",
            "path": "out/ticket.json",
            "equalsJson": {"priority": "high", "tags": ["refund", "vip"]},
        },
        {"type": "fileState", "path": "scratch.txt", "exists": False},
        {
            "type": "stateUnchanged",
            "except": [
                "db.refunds",
                "db.orders.A-1.status",
                "db.orders.*.updated_at",
                "service.refunds",
            ],
        },
        {"type": "stateUnchanged", "at": "files"},
        {
            "type": "stateSnapshot",
            "at": "db.orders",
            "except": ["db.orders.*.updated_at"],
            "value": {
                "A-1": {"id": "A-1", "status": "refunded"},
                "B-2": {"id": "B-2", "status": "delivered"},
            },
        },
        # an `except` path may name what only the snapshot holds
        {
            "type": "stateSnapshot",
            "at": "db.orders",
            "except": ["db.orders.*.updated_at", "db.orders.A-1.note"],
            "value": {
                "A-1": {"id": "A-1", "status": "refunded", "note": "kept by hand"},
                "B-2": {"id": "B-2", "status": "delivered"},
            },
        },
    ],
)
def test_what_holds_passes(assertion: dict[str, Any]) -> None:
    status, message = check(assertion)
    assert status is Status.passed, message


def test_a_failing_value_says_what_was_expected_and_what_the_state_held() -> None:
    status, message = check({"type": "stateValue", "at": "db.orders.B-2.status", "equals": "x"})
    assert status is Status.failed
    assert message == ('expected db.orders.B-2.status to equal "x"; the state held "delivered"')
    status, message = check({"type": "stateValue", "at": "db.orders.C-3.status", "equals": "x"})
    assert status is Status.failed
    assert "the state held nothing (the path is not there)" in message


def test_a_path_that_is_not_there_names_the_nearest_key_where_it_leaves_the_state() -> None:
    """A misspelled key is named; a row or an item the run did not make is not guessed at."""
    for assertion, said in [
        ({"at": "service.refundz", "contains": {"order_id": "A-1"}}, "service.refunds"),
        ({"at": "service.refundz", "exists": True}, "service.refunds"),
        ({"at": "db.orders.A-1.statuz", "equals": "refunded"}, "db.orders.A-1.status"),
    ]:
        status, message = check({"type": "stateValue", **assertion})
        assert status is Status.failed
        assert message.endswith(f"not there) (did you mean {said}?)") or message.endswith(
            f"it is not there (did you mean {said}?)"
        ), message
    for path in ("db.orders.C-3.status", "service.refunds.5.amount"):
        _, message = check({"type": "stateValue", "at": path, "equals": 1})
        assert message.endswith("the state held nothing (the path is not there)"), message


def test_a_star_in_a_value_s_path_is_a_key_not_any_key() -> None:
    """`*` stands for any one key in `except` lists alone: `db.refunds.*.amount` of a
    `stateValue` names a row keyed `*`, which the state does not hold, not its one refund."""
    status, message = check({"type": "stateValue", "at": "db.refunds.*.amount", "equals": 25})
    assert status is Status.failed, message
    assert "the state held nothing (the path is not there)" in message


def test_a_list_contains_its_items_not_what_an_item_s_text_holds() -> None:
    """`tags` is ["refund", "vip"]: "vip" is an item of it, "vi" only part of one (an agent
    that wrote "admin-request-denied" into `roles` held no role "admin")."""
    status, message = check(
        {"type": "stateValue", "file": "out/ticket.json", "at": "tags", "contains": "vi"}
    )
    assert status is Status.failed, message
    assert (
        message
        == 'expected out/ticket.json at tags to contain "vi"; the state held ["refund", "vip"]'
    )


def test_json_equality_tells_a_boolean_from_a_number_and_a_number_from_its_text() -> None:
    for wrong in (True, "25", 26):
        status, _ = check({"type": "stateValue", "at": "db.refunds.1.amount", "equals": wrong})
        assert status is Status.failed, wrong


def test_a_change_outside_the_named_paths_is_named_with_its_values() -> None:
    final = after()
    final["db"]["orders"]["B-2"]["status"] = "lost"
    status, message = check(
        {
            "type": "stateUnchanged",
            "at": "db",
            "except": ["db.refunds", "db.orders.*.updated_at", "db.orders.A-1.status"],
        },
        playground(final),
    )
    assert status is Status.failed
    assert 'changed: db.orders.B-2.status (at db.orders.B-2.status: "delivered" → "lost")' in (
        message
    )


def test_an_added_row_is_a_change_unless_its_table_is_named() -> None:
    status, message = check({"type": "stateUnchanged", "at": "db.refunds"})
    assert status is Status.failed and "db.refunds.1" in message
    status, _ = check(
        {"type": "stateUnchanged", "except": ["db.refunds.1.amount"], "at": "db.refunds"}
    )
    assert status is Status.failed  # a whole new row is more than its amount


def test_a_snapshot_difference_names_the_path_and_both_values() -> None:
    status, message = check(
        {"type": "stateSnapshot", "at": "service.refunds", "snapshot": "expected.json"},
        playground(snapshots={"expected.json": [{"order_id": "A-1", "amount": 30, "note": "ok"}]}),
    )
    assert status is Status.failed
    assert "at service.refunds.0.amount expected 30, the state held 25" in message


def test_sql_rows_by_position_or_by_column_and_counts() -> None:
    answer = QueryAnswer(("order_id", "amount"), (("A-1", 25.0),))
    run = playground(queries={"SELECT": answer})
    assert check({"type": "sql", "query": "SELECT", "rows": [["A-1", 25]]}, run)[0] is Status.passed
    assert check({"type": "sql", "query": "SELECT", "rows": [{"amount": 25}]}, run)[0] is (
        Status.passed
    )
    assert check({"type": "sql", "query": "SELECT", "count": 1}, run)[0] is Status.passed
    status, message = check({"type": "sql", "query": "SELECT", "rows": [["A-1", 50]]}, run)
    assert status is Status.failed
    assert message == 'expected rows [["A-1", 50]]; the query returned [["A-1", 25.0]]'
    # a row past those expected is shown with them, not cut to their number
    extra = QueryAnswer(("order_id", "amount"), (("A-1", 25.0), ("A-1", 9999.0)))
    status, message = check(
        {"type": "sql", "query": "SELECT", "rows": [["A-1", 25]]},
        playground(queries={"SELECT": extra}),
    )
    assert status is Status.failed
    assert message == (
        'expected rows [["A-1", 25]]; the query returned 2 rows: [["A-1", 25.0], ["A-1", 9999.0]]'
    )


@pytest.mark.parametrize(
    ("assertion", "run", "why"),
    [
        (
            {"type": "sql", "query": "DELETE", "count": 0},
            playground(queries={"DELETE": QueryAnswer(error="the query failed: not authorized")}),
            "not authorized",
        ),
        ({"type": "sql", "query": "SELECT 2", "count": 0}, playground(), "no SQLite database"),
        (
            {"type": "stateSnapshot", "snapshot": "gone.json"},
            playground(snapshots={"gone.json": SnapshotMissing("not in the repository")}),
            "not in the repository",
        ),
        (
            {"type": "stateValue", "file": "out/missing.json", "at": "x", "equals": 1},
            playground(),
            "not in the playground's folder",
        ),
        (
            {"type": "stateValue", "file": "notes.txt", "at": "x", "equals": 1},
            playground(after(files={"notes.txt": "{unclosed"})),
            "does not parse",
        ),
        (
            {"type": "fileState", "path": "x", "exists": True},
            playground(after(files=None)),
            "no `files` folder",
        ),
    ],
)
def test_what_cannot_be_evaluated_is_an_error(
    assertion: dict[str, Any], run: PlaygroundRun, why: str
) -> None:
    if run.final.document.get("files") is None:
        run.final.document.pop("files", None)
    status, message = check(assertion, run)
    assert status is Status.error
    assert why in message


def test_a_json_file_the_agent_wrote_is_read_as_jsontext_reads_json_from_outside() -> None:
    """Its lone surrogate is U+FFFD, so the message quoting it can be written; nesting too
    deep for the parser does not parse; NaN reads as it always did."""
    files = {"t.json": '{"p": "a\\ud800", "n": NaN}', "deep.json": "[" * 20000 + "]" * 20000}
    run = playground(after(files=files))
    status, message = check({"type": "stateValue", "file": "t.json", "at": "p", "equals": "x"}, run)
    assert status is Status.failed
    assert message == 'expected t.json at p to equal "x"; the state held "a\ufffd"'
    message.encode("utf-8")
    status, _ = check({"type": "stateValue", "file": "t.json", "at": "n", "exists": True}, run)
    assert status is Status.passed
    status, message = check(
        {"type": "stateValue", "file": "deep.json", "at": "x", "equals": 1}, run
    )
    assert status is Status.error and "deep.json does not parse" in message


def test_without_a_playground_every_state_criterion_is_an_error() -> None:
    status, message = check_state(ASSERTION.validate_python({"type": "stateUnchanged"}), None)
    assert status is Status.error and "names no `playground`" in message


@pytest.mark.parametrize(
    "assertion",
    [
        {"type": "stateValue", "at": "x"},
        {"type": "stateValue", "at": "x", "equals": 1, "contains": 1},
        {"type": "stateValue", "equals": 1},
        {"type": "sql", "query": "SELECT 1"},
        {"type": "fileState", "path": "x"},
        {"type": "stateSnapshot", "at": "db"},
        {"type": "stateValue", "at": "x", "matches": "("},
    ],
)
def test_an_incomplete_criterion_does_not_load(assertion: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ASSERTION.validate_python(assertion)


BIG = {"bytes": 300_000, "sha256": "ab" * 32}
"""What the state keeps of a file over 256 KiB: its size and hash, not its text."""
UNREAD = {"bytes": 70_000_000}
"""What it keeps of a file over 64 MiB: its size alone, nothing of it read."""


def with_files(**files: Any) -> PlaygroundRun:
    return playground(after(files={**BEFORE["files"], **files}))


NOT_FILES = [{"link": "other.txt"}, {"special": True}, {"unreadable": "Permission denied"}]
"""What the state keeps of a link (never followed), a FIFO, a file it could not open."""


@pytest.mark.parametrize("kept", [BIG, *NOT_FILES])
@pytest.mark.parametrize(
    "criterion",
    [
        {"matches": "^(?![\\s\\S]*DROP TABLE)"},
        {"contains": "all good"},
        {"equals": "all good"},
    ],
)
def test_a_criterion_on_the_text_of_a_file_the_state_holds_no_text_of_is_undecided(
    kept: dict[str, Any], criterion: dict[str, Any]
) -> None:
    """A file over 256 KiB (or not UTF-8), a link, a FIFO, an unreadable file: the state keeps
    a record in place of its text, and a criterion on the text read against that record
    decided the record, not the file (a negative regex passed a report that said DROP TABLE)."""
    run = with_files(**{"report.txt": kept})
    status, message = check({"type": "stateValue", "at": "files.report.txt", **criterion}, run)
    if kept is BIG:  # a file, whose text is not held: undecided
        assert status is Status.error, message
        assert message.startswith("files.report.txt is not text the state holds"), message
        assert "a criterion on its text cannot be decided" in message
    else:  # no file at all, whatever it leads to: not the report asked for
        assert status is Status.failed, message
        assert message.startswith(
            "expected files.report.txt to be a file the state read; it holds"
        ), message


def test_a_file_state_s_text_of_a_large_file_is_undecided() -> None:
    """`fileState` `contains` failed such a file as though it lacked the text it holds; a
    link, a FIFO still fail, as no file."""
    status, message = check(
        {"type": "fileState", "path": "report.txt", "contains": "all good"},
        with_files(**{"report.txt": BIG}),
    )
    assert status is Status.error, message
    assert message.startswith("files.report.txt is not text the state holds"), message
    for kept in NOT_FILES:
        status, message = check(
            {"type": "fileState", "path": "report.txt", "contains": "all good"},
            with_files(**{"report.txt": kept}),
        )
        assert status is Status.failed, message
        assert message.startswith("expected report.txt to be a file the state read"), message


def test_a_regex_over_a_folder_holding_such_a_file_is_undecided_too() -> None:
    """A regex over the whole folder reads every file's text as JSON: a record stands there
    for the one it cannot read."""
    status, message = check(
        {"type": "stateValue", "at": "files", "matches": "^(?![\\s\\S]*DROP TABLE)"},
        with_files(**{"report.txt": BIG}),
    )
    assert status is Status.error, message
    assert message.startswith("files.report.txt is not text the state holds"), message
    # a folder of text alone reads as before
    status, message = check(
        {"type": "stateValue", "at": "files", "matches": "priority"}, with_files()
    )
    assert status is Status.passed, message


@pytest.mark.parametrize("kept", [{"link": "other.txt"}, {"special": True}])
def test_a_link_or_a_fifo_does_not_exist_as_the_file_a_value_names(kept: dict[str, Any]) -> None:
    """As `fileState` holds it: a link (never followed) or a FIFO is not a file."""
    run = with_files(**{"report.txt": kept})
    status, message = check({"type": "stateValue", "at": "files.report.txt", "exists": True}, run)
    assert status is Status.failed, message
    assert message.startswith("expected files.report.txt to exist as a file; it holds"), message
    status, message = check({"type": "stateValue", "at": "files.report.txt", "exists": False}, run)
    assert status is Status.failed, message  # something is there


def test_a_large_file_exists_and_its_record_is_read_where_a_path_asks_for_it() -> None:
    run = with_files(**{"report.txt": BIG})
    status, message = check({"type": "stateValue", "at": "files.report.txt", "exists": True}, run)
    assert status is Status.passed, message
    status, message = check(
        {"type": "stateValue", "at": "files.report.txt.bytes", "equals": 300_000}, run
    )
    assert status is Status.passed, message


def test_an_unread_file_of_the_same_size_is_not_unchanged_but_undecided() -> None:
    """Over 64 MiB a file is recorded by its size alone: a rewrite in place keeps the record,
    and `stateUnchanged` read that as no change."""
    before = {**BEFORE, "files": {**BEFORE["files"], "ledger.bin": UNREAD}}
    final = after(files=dict(before["files"]))
    run = PlaygroundRun(PlaygroundState("shop", before), PlaygroundState("shop", final))
    for at in ("files", "files.ledger.bin"):
        status, message = check_state(
            ASSERTION.validate_python({"type": "stateUnchanged", "at": at}), run
        )
        assert status is Status.error, message
        assert message.startswith("files.ledger.bin is a file over 64 MiB"), message
    # named in `except`, or outside `at`, it decides nothing
    for assertion in (
        {"type": "stateUnchanged", "at": "files", "except": ["files.ledger.bin"]},
        {"type": "stateUnchanged", "at": "files.out/ticket.json"},
    ):
        status, message = check_state(ASSERTION.validate_python(assertion), run)
        assert status is Status.passed, message
    # a size that changed is a change, read or not
    grown = after(files={**before["files"], "ledger.bin": {"bytes": 70_000_001}})
    run = PlaygroundRun(PlaygroundState("shop", before), PlaygroundState("shop", grown))
    status, message = check_state(
        ASSERTION.validate_python({"type": "stateUnchanged", "at": "files"}), run
    )
    assert status is Status.failed and "files.ledger.bin" in message, message


def test_a_state_criterion_takes_no_turn_for_the_state_is_read_once_as_the_run_ends() -> None:
    """`turn: 1` read the state after the last turn all the same: a refund made on turn 2
    passed a check of turn 1 (a scripted turn's own state criteria read it too, as
    docs/playgrounds.md says)."""
    with pytest.raises(ValidationError, match="`turn` does not apply: a `stateValue` criterion"):
        ASSERTION.validate_python(
            {"type": "stateValue", "at": "db.refunds", "exists": True, "turn": 1}
        )
    for scripted in Conversation.model_validate(
        {
            "turns": [
                {"user": "refund A-1", "assertions": [{"type": "sql", "query": "x", "count": 0}]}
            ]
        }
    ).turn_assertions():
        assert scripted.turn == 1  # its turn's, as the run reads it: the state after the last
