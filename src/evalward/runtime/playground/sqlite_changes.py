"""A run's SQLite database read as what changed from its template: its pages compared with
the template's, and only the rows of the pages that differ read again; every other row is
the template's own object, read once a job. A run whose agent changed one order of a
thousand then costs that order's page, not the whole database, and comparing its state
with a kept one costs the rows that differ (rundata/playground_state.py, `KeptPairs`).

Which table a page holds comes from SQLite itself (the `dbstat` table, run's and
template's alike); a rowid table's leaf page is read for the rowids its cells hold (the
file format's b-tree page, https://www.sqlite.org/fileformat2.html#b_tree_pages). A page
is unchanged only when its bytes and its table are the template's. What is not read this
way is read whole, as before: a table whose overflow or other pages changed, a table
without rowids, a schema that changed, a database of another page size, or one this
SQLite cannot list the pages of. The database is checked (`integrity_check`) as a whole
read checks it, and its rows count against the same bounds: the template's rows as
counted when it was read, the changed rows as they come.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalward.rundata.playground_state import written_alike

HEADER = 100
"""Bytes of the database header, before page 1's b-tree header."""
TABLE_LEAF = 13
"""The page type of a rowid table's leaf page."""
ROWIDS_AT_ONCE = 500
"""Rowids asked for in one statement (below SQLite's limit on a statement's variables)."""


@dataclass
class TemplatePages:
    """What a template's database is made of, beyond its rows: its schema, the table each
    page holds, and each rowid table's labels by rowid."""

    page_size: int
    schema: list[tuple[Any, ...]]
    owners: dict[int, Owner]
    """Each page of a table or index, by number: the table it belongs to, the table or
    index whose b-tree it is in, and its kind (`leaf`, `internal`, `overflow`)."""
    labels: dict[str, dict[int, str]] = field(default_factory=dict)
    """Each rowid table's row labels (as `sqlite_read._tables` names its rows) by rowid:
    only tables whose every row has a label of its own."""


def page_size(image: bytes) -> int:
    """The page size a database's header gives (0: not a database header)."""
    if len(image) < HEADER or not image.startswith(b"SQLite format 3\x00"):
        return 0
    size = int.from_bytes(image[16:18], "big")
    return 65536 if size == 1 else size


def schema_rows(connection: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return connection.execute(
        "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master ORDER BY name"
    ).fetchall()


Owner = tuple[str, str, str]
"""A page's table, the table or index whose b-tree holds it, and its kind."""


def page_owners(connection: sqlite3.Connection) -> dict[int, Owner] | None:
    """Each page of a table or index, by number, and what holds it (None: this SQLite has
    no `dbstat`)."""
    tables = dict(connection.execute("SELECT name, tbl_name FROM sqlite_master").fetchall())
    tables["sqlite_schema"] = tables["sqlite_master"] = "sqlite_schema"
    try:
        rows = connection.execute("SELECT pageno, name, pagetype FROM dbstat").fetchall()
    except sqlite3.Error:
        return None
    return {
        int(page): (str(tables.get(name, name)), str(name), str(kind)) for page, name, kind in rows
    }


def index_template(
    connection: sqlite3.Connection,
    image: bytes,
    keys: dict[str, str],
    tables: dict[str, Any],
) -> TemplatePages | None:
    """What `read_changed` needs of a template (`image`, open on `connection`), whose
    tables were read as `tables` with each table's key expression in `keys`; None when
    its changes cannot be read so (no `dbstat`)."""
    size = page_size(image)
    owners = page_owners(connection)
    if not size or owners is None:
        return None
    pages = TemplatePages(size, schema_rows(connection), owners)
    for name, key in keys.items():
        try:
            found = connection.execute(f"SELECT rowid, {key} FROM {_quoted(name)}").fetchall()  # noqa: S608
        except sqlite3.Error:  # a table without rowids: read whole when it changes
            continue
        labels = {int(rowid): str(label) for rowid, label in found if label is not None}
        if len(labels) == len(found) == len(tables.get(name, ())):  # every row labelled alone
            pages.labels[name] = labels
    return pages


@dataclass
class Changes:
    """What differs in a run's database from its template: each rowid table's changed
    rows, by rowid, to read (`rowids`) and drop (`gone`); the tables to read whole."""

    rowids: dict[str, set[int]] = field(default_factory=dict)
    gone: dict[str, set[int]] = field(default_factory=dict)
    whole: set[str] = field(default_factory=set)


def changes(
    connection: sqlite3.Connection, image: bytes, template: bytes, pages: TemplatePages
) -> Changes | None:
    """What differs between the run's `image` (open on `connection`) and the template's;
    None when the difference cannot be read page by page (read the database whole)."""
    size = pages.page_size
    if page_size(image) != size or len(image) % size or len(template) % size:
        return None
    if schema_rows(connection) != pages.schema:
        return None
    owners = page_owners(connection)
    if owners is None:
        return None
    found = Changes()
    count = max(len(image), len(template)) // size
    for number in range(1, count + 1):
        start = (number - 1) * size
        run_page, template_page = image[start : start + size], template[start : start + size]
        owner, was = owners.get(number), pages.owners.get(number)
        if run_page == template_page and owner == was:
            continue
        for held, page, side in ((owner, run_page, found.rowids), (was, template_page, found.gone)):
            if held is None or held[0] == "sqlite_schema":
                continue  # a free page, or the schema (compared above)
            table, tree, kind = held
            if tree != table or kind == "internal":
                continue  # an index's page, or an interior one: no row of its own
            rowids = _leaf_rowids(page, number) if table in pages.labels else None
            if kind != "leaf" or rowids is None:
                found.whole.add(table)  # an overflow page, or a table without labels
                continue
            side.setdefault(table, set()).update(rowids)
    return found


class Counting(Protocol):
    """What reading a database has taken, against its bounds (`sqlite_read._Reading`)."""

    def take(
        self, where: str, label: str, columns: list[str], values: tuple[Any, ...]
    ) -> dict[str, Any]: ...

    def give_back(self, where: str, label: str, row: dict[str, Any]) -> None: ...


def apply(
    connection: sqlite3.Connection,
    found: Changes,
    template: dict[str, Any],
    pages: TemplatePages,
    keys: dict[str, str],
    reading: Counting,
) -> dict[str, Any] | None:
    """The run's tables: the template's, each changed row read again (counted by
    `reading`, which counted the template's rows: each one dropped or read again is given
    back), a row alike the template's kept as its object. None when a table's rows do not
    add up (read the database whole)."""
    tables = dict(template)
    for name in (set(found.rowids) | set(found.gone)) - found.whole:
        labels, rows = pages.labels[name], template[name]
        table = dict(rows)

        wanted = sorted(found.rowids.get(name, set()))
        for rowid in found.gone.get(name, set()) | set(wanted):  # gone, or read again below
            label = labels.get(rowid)
            if label is not None and label in table:
                reading.give_back(name, label, table.pop(label))
        present: set[int] = set()
        for at in range(0, len(wanted), ROWIDS_AT_ONCE):
            chunk = wanted[at : at + ROWIDS_AT_ONCE]
            marks = ", ".join("?" for _ in chunk)
            cursor = connection.execute(
                f"SELECT rowid, {keys[name]} AS k, * FROM {_quoted(name)} "  # noqa: S608
                f"WHERE rowid IN ({marks})",
                chunk,
            )
            columns = [d[0] for d in cursor.description][2:]
            for rowid, label, *values in cursor:
                present.add(rowid)
                if label is None or str(label) in table:
                    return None  # a row without a label of its own: read it whole
                row = reading.take(name, str(label), columns, tuple(values))
                kept = rows.get(str(label))
                table[str(label)] = kept if kept is not None and written_alike(kept, row) else row
        if present != set(wanted):
            return None  # a page's cells that are not the table's rows
        count = connection.execute(f"SELECT count(*) FROM {_quoted(name)}").fetchone()[0]  # noqa: S608
        if count != len(table):
            return None
        tables[name] = table
    return tables


def _page_type(page: bytes, number: int) -> int:
    return page[HEADER if number == 1 else 0] if len(page) > HEADER else 0


def _leaf_rowids(page: bytes, number: int) -> list[int] | None:
    """The rowids of a table leaf page's cells; None for a page of another type, or one
    whose cells do not read as the format gives them."""
    at = HEADER if number == 1 else 0
    if not page or _page_type(page, number) != TABLE_LEAF:
        return None
    cells = int.from_bytes(page[at + 3 : at + 5], "big")
    rowids = []
    for index in range(cells):
        pointer = at + 8 + 2 * index
        offset = int.from_bytes(page[pointer : pointer + 2], "big")
        if offset >= len(page) or pointer + 2 > len(page):
            return None
        _, offset = _varint(page, offset)  # the payload's size
        rowid, offset = _varint(page, offset)
        if offset > len(page):
            return None
        rowids.append(rowid - (1 << 64) if rowid >= 1 << 63 else rowid)
    return rowids


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """A SQLite varint at `offset` (1 to 9 bytes, big-endian, 7 bits a byte but the ninth)
    and the offset after it."""
    value = 0
    for index in range(9):
        if offset + index >= len(data):
            return value, len(data) + 1
        byte = data[offset + index]
        if index == 8:
            return (value << 8) | byte, offset + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, offset + index + 1
    return value, offset + 9


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
