"""A playground's parts: one module per kind, one registry line each, and each part seeded,
provisioned, read and torn down through the protocol, on real SQLite files, real folders
and a real service process."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shutil
import sqlite3
import sys
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

import pytest

from evalward.errors import PlaygroundError
from evalward.resources.playground import PART_KINDS, PartKind, PartSettings, Playground
from evalward.rundata.playground_state import PlaygroundRun, PlaygroundState
from evalward.rundata.trace import Trace
from evalward.runtime.playground.base import FRESH_STATES_KEPT, PlaygroundSource, Templates
from evalward.runtime.playground.provision import PlaygroundSetting, provision
from evalward.runtime.playground.registry import PARTS, parts_of
from evalward.runtime.playground.run import StateNeeds, run_in_playground
from evalward.runtime.playground.state import capture

pytestmark = pytest.mark.unit

AGENTS = Path(__file__).resolve().parents[2] / "agents"
ENV = {"PATH": os.environ["PATH"]}
SHOW_ENV = (
    "import json, os; print(json.dumps({k: os.environ.get(k) for k in "
    "('DATABASE_URL', 'EVALWARD_SQLITE_PATH', 'EVALWARD_PLAYGROUND_DIR')}))"
)


def test_every_kind_of_part_has_its_module_in_the_registry() -> None:
    assert set(PARTS) == set(get_args(PartKind)) == set(PART_KINDS)
    for kind, part in PARTS.items():
        assert part.kind == kind
        settings = Playground.model_fields[kind].annotation
        assert any(isinstance(a, type) and issubclass(a, PartSettings) for a in get_args(settings))


def test_a_playground_answers_for_its_parts_in_the_order_they_are_provisioned() -> None:
    spec = Playground.model_validate(
        {
            "service": {"start": ["python3", "crm/server.py", "{port}"], "seed": "crm/s.json"},
            "sqlite": {"seed": "shop/seed.sql"},
            "files": {"seed": "work"},
        }
    )
    assert [part.kind for part in parts_of(spec)] == ["files", "sqlite", "service"]
    assert spec.seeds() == ["work", "shop/seed.sql", "crm/s.json"]
    assert spec.paths() == ["work", "shop/seed.sql", "crm/s.json", "crm/server.py"]
    assert spec.runs_program
    assert [p.state_part() for p in spec.parts().values()] == ["files", "db", "service"]
    assert not Playground.model_validate({"files": {"seed": "work"}}).runs_program
    with pytest.raises(ValueError, match="`files`, `sqlite`, `service` or several"):
        Playground.model_validate({"name": "empty"})


def world(tmp_path: Path) -> Path:
    root = tmp_path / "world"
    (root / "work").mkdir(parents=True)
    (root / "work" / "notes.txt").write_text("hello")
    (root / "seed.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);\n")
    shutil.copy(AGENTS / "playground_service.py", root / "service.py")
    return root


def test_a_sqlite_seed_is_loaded_once_and_each_run_reads_its_own_copy(tmp_path: Path) -> None:
    root = world(tmp_path)
    spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})
    source = PlaygroundSource("shop", spec, root)
    templates = Templates()

    async def run(env: Mapping[str, str]) -> Trace:
        db = sqlite3.connect(env["EVALWARD_SQLITE_PATH"])
        db.execute("INSERT INTO t (v) VALUES (?)", (env["DATABASE_URL"],))
        db.commit()
        db.close()
        return Trace()

    async def two_runs() -> list[PlaygroundRun]:
        setting = PlaygroundSetting(ENV, templates=templates)
        runs = [await run_in_playground(source, StateNeeds(), run, setting) for _ in range(2)]
        return [found for _, found in runs if found is not None]

    try:
        first, second = asyncio.run(two_runs())
        assert templates.folder is not None
        assert [p.name for p in templates.folder.iterdir()] == ["0.sqlite"]  # loaded once
        assert first.initial is second.initial  # read once, from the template
        assert first.initial.document == {"db": {"t": {}}}
        urls = [run.final.document["db"]["t"]["1"]["v"] for run in (first, second)]
        assert urls[0] != urls[1]  # each its own database, gone with its run
        assert not any(Path(url.removeprefix("sqlite:///")).exists() for url in urls)
    finally:
        templates.close()


def test_a_seed_that_does_not_load_fails_each_run_naming_it(tmp_path: Path) -> None:
    root = world(tmp_path)
    (root / "seed.sql").write_text("CREATE TABLE;")
    spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})
    templates = Templates()

    async def twice() -> list[str]:
        said = []
        for _ in range(2):
            with pytest.raises(PlaygroundError) as caught:
                await provision(
                    PlaygroundSource("shop", spec, root),
                    PlaygroundSetting(ENV, templates=templates),
                )
            said.append(str(caught.value))
        return said

    try:
        first, second = asyncio.run(twice())
        assert first == second
        assert first.startswith("playground 'shop': the seed 'seed.sql' does not load")
        assert len(templates.prepared) == 1
    finally:
        templates.close()


@pytest.mark.parametrize(
    ("seed", "text", "why", "where"),
    [
        ("seed.yaml", "t:\n  - id: 1\n  - id: 2\n  - id: 1\n", "UNIQUE", "the row at seed.yaml:4"),
        (
            "seed.sql",
            "CREATE TABLE orders (id INTEGER);\n\n-- the orders the fixtures refund\n"
            "INSERT INTO orders VALUES (1);\nINSERT INTO\n  refunds VALUES (1);\n",
            "no such table: refunds",
            "the statement at seed.sql:5",
        ),
        (
            "seed.sql",
            "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);\n"
            "INSERT INTO t VALUES (1, 'a\u2028b\x0cc');\n"  # no line break to SQLite
            "INSERT INTO t VALUES (2, 'x'); /* a note\nthat ends here */\n"
            "INSERT INTO t VALUES (1, 'again');\n",
            "UNIQUE constraint failed",
            "the statement at seed.sql:5",
        ),
    ],
    ids=["a fixtures seed's row", "an SQL seed's statement", "lines by line feed alone"],
)
def test_a_seed_that_does_not_load_in_a_run_names_its_part(
    tmp_path: Path, seed: str, text: str, why: str, where: str
) -> None:
    """As `validate` does: the seed's name alone leaves a file of rows to search, SQLite's
    own message names no line, and a seed's first line is every seed's."""
    root = world(tmp_path)
    (root / seed).write_text(text)
    spec = Playground.model_validate({"sqlite": {"seed": seed}})
    templates = Templates()

    async def provisioned() -> None:
        await provision(
            PlaygroundSource("shop", spec, root), PlaygroundSetting(ENV, templates=templates)
        )

    try:
        with pytest.raises(PlaygroundError) as caught:
            asyncio.run(provisioned())
    finally:
        templates.close()
    said = str(caught.value)
    assert said.startswith(f"playground 'shop': the seed '{seed}' does not load"), said
    assert why in said, said
    assert said.endswith(f" ({where})"), said


def test_files_a_database_and_a_service_together(tmp_path: Path) -> None:
    """The service gets the database's variables (and not the folder's), its state is read
    by its dump command, and teardown ends it and removes every part."""
    root = world(tmp_path)
    spec = Playground.model_validate(
        {
            "files": {"seed": "work"},
            "sqlite": {"seed": "seed.sql"},
            "service": {
                "start": ["python3", "service.py", "ok", "{port}"],
                "ready": "/health",
                "dump": ["python3", "-c", SHOW_ENV],
            },
        }
    )

    async def scenario() -> tuple[dict[str, str], dict[str, Any], int]:
        live = await provision(PlaygroundSource("all", spec, root), PlaygroundSetting(ENV))
        try:
            state = await capture(live, ["SELECT count(*) FROM t"])
            pid = json.loads(
                await asyncio.to_thread(_get, live.env["EVALWARD_SERVICE_URL"] + "/state")
            )["pid"]
        finally:
            await live.close()
        assert state.queries["SELECT count(*) FROM t"].rows == ((0,),)
        return dict(live.env), state.document, pid

    env, document, pid = asyncio.run(scenario())
    assert list(env) == [
        "EVALWARD_PLAYGROUND",
        "EVALWARD_PLAYGROUND_DIR",
        "EVALWARD_SQLITE_PATH",
        "DATABASE_URL",
        "EVALWARD_SERVICE_URL",
    ]
    assert document["files"] == {"notes.txt": "hello"}
    assert document["db"] == {"t": {}}
    assert document["service"] == {
        "DATABASE_URL": env["DATABASE_URL"],
        "EVALWARD_SQLITE_PATH": env["EVALWARD_SQLITE_PATH"],
        "EVALWARD_PLAYGROUND_DIR": None,
    }
    assert not Path(env["EVALWARD_PLAYGROUND_DIR"]).parent.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as reply:
        body: bytes = reply.read()
        return body


def test_a_run_that_leaves_the_database_as_copied_reads_as_its_template(tmp_path: Path) -> None:
    """Its tables are the template's, read once; its queries are still asked of its own
    database; a run that wrote reads its own tables."""
    root = world(tmp_path)
    spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})
    source = PlaygroundSource("shop", spec, root)
    templates = Templates()
    needs = StateNeeds(("SELECT count(*) FROM t",))

    async def writes(env: Mapping[str, str]) -> Trace:
        db = sqlite3.connect(env["EVALWARD_SQLITE_PATH"])
        db.execute("INSERT INTO t (v) VALUES ('x')")
        db.commit()
        db.close()
        return Trace()

    async def reads(env: Mapping[str, str]) -> Trace:
        return Trace()

    async def runs() -> list[PlaygroundRun]:
        setting = PlaygroundSetting(ENV, templates=templates)
        found = []
        for agent in (reads, writes, reads):
            _, run = await run_in_playground(source, needs, agent, setting)
            assert run is not None
            found.append(run)
        return found

    try:
        first, wrote, again = asyncio.run(runs())
    finally:
        templates.close()
    assert first.final.document["db"] is first.initial.document["db"]
    assert again.final.document["db"] is first.initial.document["db"]
    assert first.record().changes == []
    assert [run.final.queries["SELECT count(*) FROM t"].rows for run in (first, wrote, again)] == [
        ((0,),),
        ((1,),),
        ((0,),),
    ]
    assert wrote.final.document["db"] == {"t": {"1": {"id": 1, "v": "x"}}}
    assert ["+", '    "v": "x"'] in wrote.record().changes


def test_a_fresh_services_state_is_parsed_once_while_it_answers_the_same_bytes(
    tmp_path: Path,
) -> None:
    """Every run starts its own service; the document of the state it starts in is shared
    while the bytes are the same (the CRM example, one seed), never where they differ (a
    service that says its own pid), and the state after the agent is always each run's."""
    root = world(tmp_path)
    shutil.copy(EXAMPLES / "refund-desk" / "crm" / "server.py", root / "crm.py")
    (root / "seed.json").write_text('{"orders": {"A-1": {"status": "new"}}, "refunds": []}')
    crm = Playground.model_validate(
        {
            "service": {
                "start": ["python3", "crm.py", "--port", "{port}", "--seed", "{seed}"],
                "seed": "seed.json",
                "ready": "/health",
                "state": "/state",
            }
        }
    )
    pids = Playground.model_validate(
        {"service": {"start": ["python3", "service.py", "ok", "{port}"], "state": "/state"}}
    )
    templates = Templates()
    amounts = iter(range(1, 10))

    async def refunds(env: Mapping[str, str]) -> Trace:
        body = json.dumps({"order_id": "A-1", "amount": next(amounts)}).encode()
        request = urllib.request.Request(env["EVALWARD_SERVICE_URL"] + "/refunds", body)
        await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=10).read())
        return Trace()

    async def nothing(env: Mapping[str, str]) -> Trace:
        return Trace()

    async def runs(spec: Playground, agent: Any = refunds) -> list[PlaygroundRun]:
        source = PlaygroundSource("crm", spec, root)
        setting = PlaygroundSetting(ENV, templates=templates)
        found = []
        for _ in range(3):
            trace, run = await run_in_playground(source, StateNeeds(), agent, setting)
            assert run is not None, trace.error
            found.append(run)
        return found

    try:
        shared, own = asyncio.run(runs(crm)), asyncio.run(runs(pids))
        untouched = asyncio.run(runs(crm, nothing))
    finally:
        templates.close()
    first = shared[0].initial.document["service"]
    # an agent that changed nothing leaves the bytes the service started with: not parsed
    assert all(
        run.final.document["service"] is run.initial.document["service"] for run in untouched
    )
    assert all(run.record().changes == [] for run in untouched)
    assert first == {"orders": {"A-1": {"status": "new"}}, "refunds": []}
    assert all(run.initial.document["service"] is first for run in shared)
    assert [run.final.document["service"]["refunds"][0]["amount"] for run in shared] == [1, 2, 3]
    assert all(
        run.final.document["service"]["orders"]["A-1"]["status"] == "refund_requested"
        for run in shared
    )
    started = [run.initial.document["service"] for run in own]
    assert len({state["pid"] for state in started}) == 3
    assert [state["hits"] for state in started] == [0, 0, 0]
    assert [run.final.document["service"]["hits"] for run in own] == [1, 1, 1]


def test_a_job_keeps_the_fresh_states_of_its_last_playgrounds_only(tmp_path: Path) -> None:
    root = world(tmp_path)
    spec = Playground.model_validate(
        {"service": {"start": ["python3", "service.py", "ok", "{port}"], "state": "/state"}}
    )
    templates = Templates()
    names = [f"p{i}" for i in range(FRESH_STATES_KEPT + 1)]

    async def nothing(env: Mapping[str, str]) -> Trace:
        return Trace()

    async def runs() -> None:
        for name in names:
            source = PlaygroundSource(name, spec, root)
            setting = PlaygroundSetting(ENV, templates=templates)
            trace, run = await run_in_playground(source, StateNeeds(), nothing, setting)
            assert run is not None, trace.error

    try:
        asyncio.run(runs())
        assert [key[1] for key in templates.fresh_states] == names[1:]
    finally:
        templates.close()
    assert templates.fresh_states == {}


def test_teardown_never_follows_a_link_the_agent_put_in_place_of_a_part(tmp_path: Path) -> None:
    """The database replaced by a link to a file of its name outside, and a link to that
    folder beside it: the playground is removed, the files outside are not."""
    root = world(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "playground.sqlite").write_text("keep")
    (outside / "other").write_text("keep")
    spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})
    templates = Templates()

    async def scenario() -> Path:
        live = await provision(
            PlaygroundSource("shop", spec, root), PlaygroundSetting(ENV, templates=templates)
        )
        database = Path(live.env["EVALWARD_SQLITE_PATH"])
        database.unlink()
        database.symlink_to(outside / "playground.sqlite")
        (live.folder / "db").symlink_to(outside)
        await live.close()
        return live.folder

    try:
        folder = asyncio.run(scenario())
    finally:
        templates.close()
    assert not folder.exists()
    assert sorted(p.name for p in outside.iterdir()) == ["other", "playground.sqlite"]


def test_teardown_removes_what_the_agent_added_beside_the_parts(tmp_path: Path) -> None:
    root = world(tmp_path)
    spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})

    async def scenario() -> Path:
        live = await provision(PlaygroundSource("shop", spec, root), PlaygroundSetting(ENV))
        database = Path(live.env["EVALWARD_SQLITE_PATH"])
        (database.parent / "playground.sqlite-journal").write_text("left")
        (live.folder / "deep" / "er").mkdir(parents=True)
        await live.close()
        return live.folder

    assert not asyncio.run(scenario()).exists()


def test_changes_are_found_record_by_record_and_named_by_their_path() -> None:
    """Of a thousand records, the one changed is the hunk, named by its path; a value that
    `==` calls equal but JSON does not (`true` against `1`) is a change, `1` against `1.0`
    is not."""
    rows = {str(i): {"id": i, "status": "open", "paid": True, "total": 1} for i in range(1000)}
    before = {"service": {"orders": rows}}
    after = copy.deepcopy(before)
    after["service"]["orders"]["17"]["status"] = "refunded"
    after["service"]["orders"]["18"]["paid"] = 1
    after["service"]["orders"]["19"]["total"] = 1.0
    after["service"]["orders"]["1000"] = {"id": 1000}
    changes = PlaygroundRun(PlaygroundState("p", before), PlaygroundState("p", after)).record()
    assert changes.changes == [
        ["@", "@@ service.orders"],
        ["+", '   "1000": {'],
        ["+", '    "id": 1000'],
        ["+", "   }"],
        ["@", "@@ service.orders.17"],
        ["-", '    "status": "open"'],
        ["+", '    "status": "refunded"'],
        ["@", "@@ service.orders.18"],
        ["-", '    "paid": true'],
        ["+", '    "paid": 1'],
    ]
    unchanged = PlaygroundRun(PlaygroundState("p", before), PlaygroundState("p", before))
    assert unchanged.record().changes == []


def test_changes_past_the_diff_bound_are_named_not_compared() -> None:
    big = {"t": {str(i): "x" * 1000 for i in range(5000)}}
    changes = PlaygroundRun(PlaygroundState("p", {}), PlaygroundState("p", {"db": big})).record()
    assert changes.changes == [
        ["@", "@@ (the whole state) and after: not compared (past 4,194,304 characters)"]
    ]


def test_a_query_that_calls_only_deterministic_functions_is_asked_once_of_a_template(
    tmp_path: Path,
) -> None:
    """Of the same bytes, `count(*)` answers the same and is kept; `random()` is asked of
    every run's own database."""
    root = world(tmp_path)
    spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})
    source = PlaygroundSource("shop", spec, root)
    templates = Templates()
    counted, drawn = "SELECT count(*) FROM t", "SELECT random()"

    async def agent(env: Mapping[str, str]) -> Trace:
        return Trace()

    async def runs() -> list[PlaygroundRun]:
        setting = PlaygroundSetting(ENV, templates=templates)
        found = []
        for _ in range(3):
            _, run = await run_in_playground(source, StateNeeds((counted, drawn)), agent, setting)
            assert run is not None
            found.append(run)
        return found

    try:
        first, second, third = asyncio.run(runs())
    finally:
        templates.close()
    answers = [run.final.queries for run in (first, second, third)]
    assert [a[counted].rows for a in answers] == [((0,),)] * 3
    assert answers[1][counted] is answers[2][counted]  # kept
    draws = {a[drawn].rows[0][0] for a in answers}
    assert len(draws) == 3  # asked each time


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.parametrize(("ready", "answers"), [({"mcp": "/mcp"}, True), ("/mcp", False)])
def test_an_sdk_streamable_http_mcp_server_is_ready_once_it_answers_initialize(
    ready: Any, answers: bool
) -> None:
    """The example's server, on the MCP SDK, answers an MCP `initialize` at /mcp
    (`ready: {mcp: /mcp}`) and no plain GET there below 400: a readiness by GET never
    passes, whatever the wait."""
    root = EXAMPLES.parent
    server = "examples/order-desk-mcp/service/orders_http.py"
    spec = Playground.model_validate(
        {
            "sqlite": {"seed": "examples/order-desk-mcp/shop/seed.sql"},
            "service": {
                "start": ["python3", server, "{port}"],
                "ready": ready,
                "state": None,
                "readyTimeoutSeconds": 30 if answers else 2,
            },
        }
    )
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    async def scenario() -> str:
        templates = Templates()
        try:
            live = await provision(
                PlaygroundSource("shop", spec, root), PlaygroundSetting(env, templates=templates)
            )
        except PlaygroundError as exc:
            return str(exc)
        finally:
            templates.close()
        try:
            reply = await asyncio.to_thread(_initialize, live.env["EVALWARD_SERVICE_URL"] + "/mcp")
        finally:
            await live.close()
        return reply

    said = asyncio.run(scenario())
    if answers:
        assert '"serverInfo"' in said and '"orders"' in said, said
    else:
        assert said.startswith("playground 'shop': the service did not answer /mcp within 2 s")


def _initialize(url: str) -> str:
    """An MCP `initialize`, as a client other than evalward's readiness check sends it."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        }
    ).encode()
    request = urllib.request.Request(
        url,
        body,
        {"content-type": "application/json", "accept": "application/json, text/event-stream"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return str(reply.read().decode())
