"""A run's SQLite database read as what changed from its template: its pages compared with
the template's, and only the rows of the pages that differ read again; every other row is
the template's own object, read once a job. A run whose agent changed one order of a
thousand then costs that order's page, not the whole database, and comparing its state
with a kept one costs the rows that differ (rundata/playground_state.py, `KeptPairs`).

Which table a template's page holds comes from SQLite itself (its `dbstat` table, read
once a job), and each rowid table's b-tree is walked from its root in the file format's
pages (https://www.sqlite.org/fileformat2.html#b_tree_pages). A run's table can differ only
where one of its template pages changed: a b-tree walked from the same root through the
same bytes reaches the same pages. So a run's table is walked from its root only down the
pages that changed or lead to one; a page whose bytes and whose subtree are the template's
is the template's rows, and the leaf pages found otherwise are read for the rowids their
cells hold, those rows alone read again. What is not read this way is read whole, as
before: a table whose overflow pages changed, a table without rowids, a schema or header
that changed, a database of another page size, or one this SQLite cannot list the pages of.
The database is checked (`integrity_check`) as a whole read checks it, and its rows count
against the same bounds: the template's rows as counted when it was read, the changed rows
as they come.
"""

from __future__ import annotations

import sqlite3
import struct
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalward.rundata.playground_state import Derived, derived, written_alike
from evalward.runtime.playground.sqlite_seed import identifier

HEADER = 100
"""Bytes of the database header, before page 1's b-tree header."""
TABLE_LEAF = 13
"""The page type of a rowid table's leaf page."""
TABLE_INTERIOR = 5
"""The page type of a rowid table's interior page."""
READ_AS = ((16, 24), (44, 68))
"""The header's bytes that say how the pages read (page size, reserved space, the schema's
format, the text encoding...): a run's must be the template's. The rest (the change
counter, the page count, the free list) changes with any write."""
CHILD = struct.Struct(">I")
"""A page number as an interior page's cell and header hold it."""
ROWIDS_AT_ONCE = 500
"""Rowids asked for in one statement (below SQLite's limit on a statement's variables)."""


@dataclass
class TableTree:
    """A rowid table's b-tree in a template: its root, and each of its pages' place."""

    root: int
    parent: dict[int, int] = field(default_factory=dict)
    """Each page but the root, by number: the interior page that points to it."""
    children: dict[int, list[int]] = field(default_factory=dict)
    """Each interior page: the pages it points to."""
    leaves: set[int] = field(default_factory=set)
    held: frozenset[int] = frozenset()
    """Its every page (once walked)."""


@dataclass
class TemplatePages:
    """What a template's database is made of, beyond its rows: its schema, the table each
    page holds, and each rowid table's b-tree and labels by rowid."""

    page_size: int
    schema: list[tuple[Any, ...]]
    owners: dict[int, Owner]
    """Each page of a table or index, by number: the table it belongs to, the table or
    index whose b-tree it is in, and its kind (`leaf`, `internal`, `overflow`)."""
    labels: dict[str, dict[int, str]] = field(default_factory=dict)
    """Each rowid table's row labels (as `sqlite_read._table` names its rows) by rowid:
    only tables whose every row has a label of its own."""
    trees: dict[str, TableTree] = field(default_factory=dict)
    """The b-tree of each table in `labels`."""
    keys: dict[str, str] = field(default_factory=dict)
    """Each table the state holds (not SQLite's own, such as `sqlite_sequence`): the
    expression its rows were labelled by."""
    header: bytes = b""
    """The header's bytes that say how the pages read (`READ_AS`)."""


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
    schema = schema_rows(connection)
    pages = TemplatePages(size, schema, owners, header=_read_as(image), keys=keys)
    roots = {name: root for kind, name, _, root, _ in schema if kind == "table"}
    for name, key in keys.items():
        try:
            found = connection.execute(f"SELECT rowid, {key} FROM {identifier(name)}").fetchall()  # noqa: S608
        except sqlite3.Error:  # a table without rowids: read whole when it changes
            continue
        labels = {int(rowid): str(label) for rowid, label in found if label is not None}
        if len(labels) != len(found) or len(found) != len(tables.get(name, ())):
            continue  # a row without a label of its own: read whole when it changes
        tree = _template_tree(image, size, roots.get(name))
        listed = {  # its b-tree's pages as SQLite lists them: the walk must agree
            page
            for page, (_, in_tree, kind) in owners.items()
            if in_tree == name and kind != "overflow"
        }
        if tree is not None and tree.held == listed:
            pages.labels[name], pages.trees[name] = labels, tree
    return pages


def _read_as(image: bytes) -> bytes:
    return b"".join(image[start:end] for start, end in READ_AS)


def _template_tree(image: bytes, size: int, root: Any) -> TableTree | None:
    """A template table's b-tree, walked from its root (None: not a rowid table's b-tree
    as the format gives it)."""
    if not isinstance(root, int) or root < 1:
        return None
    tree = TableTree(root)
    pending = [root]
    while pending:
        number = pending.pop()
        page = _page(image, size, number)
        kind = _page_type(page, number)
        if kind == TABLE_LEAF:
            tree.leaves.add(number)
            continue
        children = _children(page, number) if kind == TABLE_INTERIOR else None
        if children is None:
            return None
        tree.children[number] = children
        for child in children:
            if child in tree.parent or child == root:
                return None  # a page reached twice
            tree.parent[child] = number
        pending += children
    tree.held = frozenset({root, *tree.parent})
    return tree


@dataclass
class Changes:
    """What differs in a run's database from its template: each rowid table's changed
    rows, by rowid, to read (`rowids`) and drop (`gone`), both by the same tables; the other
    tables to read whole."""

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
    if _read_as(image) != pages.header or schema_rows(connection) != pages.schema:
        return None
    changed = changed_pages(image, template, size)
    found = Changes()
    touched: dict[str, set[int]] = {}
    for number in changed:
        held = pages.owners.get(number)
        if held is None or held[0] == "sqlite_schema" or held[1] != held[0]:
            continue  # a free page, the schema (compared above), or an index's page
        touched.setdefault(held[0], set()).add(number)
    images = _Images(image, template, size, changed)
    for table, numbers in touched.items():
        if table not in pages.keys:
            continue  # SQLite's own (`sqlite_sequence`...): not part of the state
        tree = pages.trees.get(table)
        if tree is None or not numbers <= tree.held:
            found.whole.add(table)  # a table without labels, or its overflow pages changed
            continue
        walked = _walk(images, tree, numbers)
        if walked is None:
            return None
        found.rowids[table], found.gone[table] = walked
    return found


def changed_pages(image: bytes, template: bytes, size: int) -> set[int]:
    """The numbers of the pages whose bytes differ (a page one file lacks differs): spans
    of pages compared at once, and only a span that differs page by page, each compared
    where it lies (no page copied)."""
    span, stencil = size * 64, memoryview(template)
    shorter, longer = min(len(image), len(template)), max(len(image), len(template))
    found: set[int] = set()
    for start in range(0, longer, span):
        if start + span <= shorter and image.startswith(stencil[start : start + span], start):
            continue
        for at in range(start, min(start + span, longer), size):
            if at + size > shorter or not image.startswith(stencil[at : at + size], at):
                found.add(at // size + 1)
    return found


@dataclass(frozen=True)
class _Images:
    """A run's database and its template's, page by page, and which pages differ."""

    run: bytes
    template: bytes
    size: int
    changed: set[int]


def _walk(images: _Images, tree: TableTree, touched: set[int]) -> tuple[set[int], set[int]] | None:
    """A run's table walked from its root down the pages that changed or lead to one
    (`touched`: its template pages that changed): the rowids of the leaf pages that are not
    the template's (read them again), and of the template's leaf pages no longer reached
    as they were (drop them). None: not a rowid table's b-tree as the format gives it."""
    dirty: set[int] = set()  # the template pages that changed, and those that lead to one
    for number in touched:
        while number not in dirty:
            dirty.add(number)
            if number == tree.root:
                break
            number = tree.parent[number]
    reached = _reached(images, tree, dirty)
    if reached is None:
        return None
    kept, reread = reached
    gone: set[int] = set()
    for number in dirty:
        if number in tree.leaves:  # a leaf that changed
            gone.update(_template_rowids(images, tree, number))
        for child in tree.children.get(number, ()):
            if child not in dirty and child not in kept:  # unchanged, but no longer reached
                gone.update(_template_rowids(images, tree, child))
    return reread, gone


def _reached(images: _Images, tree: TableTree, dirty: set[int]) -> tuple[set[int], set[int]] | None:
    """The run's table walked from its root: the template pages reached whose bytes and
    subtree are the template's (not walked further), and the rowids of every other leaf
    page reached. An interior page whose bytes are the template's points where it did (its
    children known from the template); one that changed is read."""
    kept: set[int] = set()
    reread: set[int] = set()
    count = len(images.run) // images.size
    pending, seen = [tree.root], {tree.root}
    while pending:
        number = pending.pop()
        if not 1 <= number <= count:
            return None  # past the file's end
        known = tree.children.get(number) if number not in images.changed else None
        page = _page(images.run, images.size, number)
        kind = TABLE_INTERIOR if known is not None else _page_type(page, number)
        if kind == TABLE_LEAF:
            rowids = _leaf_rowids(page, number)
            if rowids is None:
                return None
            reread.update(rowids)
            continue
        children = known if known is not None else _children(page, number)
        if kind != TABLE_INTERIOR or children is None:
            return None
        found = set(children)
        if len(found) != len(children) or not found.isdisjoint(seen):
            return None  # a page reached twice
        seen |= found
        unchanged = (found & tree.held) - dirty
        kept |= unchanged
        pending += found - unchanged
    return kept, reread


def _template_rowids(images: _Images, tree: TableTree, top: int) -> list[int]:
    """The rowids of the template's leaf pages at and under `top`."""
    found: list[int] = []
    pending = [top]
    while pending:
        number = pending.pop()
        if number in tree.leaves:
            page = _page(images.template, images.size, number)
            found += _leaf_rowids(page, number) or []
        else:
            pending += tree.children.get(number, ())
    return found


class Counting(Protocol):
    """What reading a database has taken, against its bounds (`sqlite_read._Reading`)."""

    def take(
        self, where: str, label: str, columns: list[str], values: tuple[Any, ...]
    ) -> dict[str, Any]: ...

    def give_back(self, label: str, row: dict[str, Any]) -> None: ...


def apply(
    connection: sqlite3.Connection,
    found: Changes,
    template: dict[str, Any],
    pages: TemplatePages,
    reading: Counting,
) -> Derived | None:
    """The run's tables: the template's, each changed row read again (counted by
    `reading`, which counted the template's rows: each one dropped or read again is given
    back), a row alike the template's kept as its object, each table a `Derived` of the
    template's. None when a table's rows do not add up, or hold a value longer than
    SQLite's limit (read the database whole, which says which)."""
    tables = Derived(template)
    for name in found.rowids:
        try:
            table = _table_again(connection, name, found, template[name], pages, reading)
        except sqlite3.DataError:
            return None
        if table is None:
            return None
        tables[name] = table
    return tables


def _table_again(
    connection: sqlite3.Connection,
    name: str,
    found: Changes,
    rows: dict[str, Any],
    pages: TemplatePages,
    reading: Counting,
) -> dict[str, Any] | None:
    """One table of `apply`'s: the template's `rows`, its changed rows read again."""
    labels, table = pages.labels[name], Derived(rows)
    wanted = sorted(found.rowids[name])
    changed: set[str] = set()
    for rowid in found.gone[name] | set(wanted):  # gone, or read again below
        label = labels.get(rowid)
        if label is not None and label in table:
            reading.give_back(label, table.pop(label))
            changed.add(label)
    present: set[int] = set()
    for at in range(0, len(wanted), ROWIDS_AT_ONCE):
        chunk = wanted[at : at + ROWIDS_AT_ONCE]
        marks = ", ".join("?" for _ in chunk)
        cursor = connection.execute(
            f"SELECT rowid, {pages.keys[name]} AS k, * FROM {identifier(name)} "  # noqa: S608
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
            changed.add(str(label))
    if present != set(wanted):
        return None  # a page's cells that are not the table's rows
    count = connection.execute(f"SELECT count(*) FROM {identifier(name)}").fetchone()[0]  # noqa: S608
    if count != len(table):
        return None
    return derived(table, changed)


def _page(image: bytes, size: int, number: int) -> bytes:
    return image[(number - 1) * size : number * size]


def _page_type(page: bytes, number: int) -> int:
    return page[HEADER if number == 1 else 0] if len(page) > HEADER else 0


def _children(page: bytes, number: int) -> list[int] | None:
    """The pages a table interior page points to: each cell's left child, then the
    right-most; None for a page whose cells do not read as the format gives them."""
    at = HEADER if number == 1 else 0
    if len(page) < at + 12:
        return None
    cells = int.from_bytes(page[at + 3 : at + 5], "big")
    if at + 12 + 2 * cells > len(page):
        return None
    pointers = struct.unpack_from(f">{cells}H", page, at + 12)
    if cells and max(pointers) + 4 > len(page):
        return None
    children = [CHILD.unpack_from(page, offset)[0] for offset in pointers]
    children.append(CHILD.unpack_from(page, at + 8)[0])
    return children


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
