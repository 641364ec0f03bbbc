"""A service's state read as what changed (RFC 3229 with a JSON Patch): a real service on
loopback, sent back the tag of its fresh state with `A-IM: json-patch`, answers a changed
state with `226 IM Used` and the operations since that tag; the state evalward makes of them
equals the whole state a service without deltas answers, the kept document every run shares
never changes, and every delta that does not stand for a state (another IM, another base, an
operation that does not apply, copies past the bound, nesting past the bound) fails the run,
saying why. Runs that start together send one whole read, the others wait for its tag; and
`evalward run` decides the same with deltas as without."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from evalward.resources.playground import Playground
from evalward.rundata.playground_state import Derived, PlaygroundRun, PlaygroundState
from evalward.rundata.trace import Trace
from evalward.runtime.playground.base import PlaygroundSource, Templates
from evalward.runtime.playground.provision import PlaygroundSetting
from evalward.runtime.playground.run import StateNeeds, run_in_playground
from support import refund_clerk
from support.clirun import run_for_results
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

ENV = {"PATH": os.environ["PATH"]}
SEED = {
    "orders": {"A-1": {"status": "new", "items": [1, 2, 3]}, "A-2": {"status": "new"}},
    "refunds": [],
    "notes": {"kept": {"a": [{"b": 1}]}},
}

SERVICE = r'''
"""A CRM whose state answers carry a strong ETag (a version counter, its first tag from its
seed) and, to a read that sends back the first tag and asks `A-IM: json-patch`, a delta: the
JSON Patch of the changes it made since (MODE `delta`), nothing of the kind (`whole`), or
what the script file says (MODE `script`: its body and headers, as a hostile service would
answer). `unasked` answers a delta to every read. Each state read is logged."""
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE, PORT, LOG, SEED, SCRIPT = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
LOCK = threading.Lock()
STATE = json.loads(open(SEED).read())
CHANGES = []
VERSION = [0]


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            return self._send(200, b"{}", {})
        asked, wants = self.headers.get("if-none-match"), self.headers.get("a-im", "")
        with LOCK:
            tag = f'"seed-{VERSION[0]}"'
            if asked == tag:
                status, body, headers = 304, b"", {"ETag": tag}
            elif MODE == "unasked" or (
                asked == '"seed-0"' and "json-patch" in wants and MODE != "whole"
            ):
                status, body = 226, json.dumps(CHANGES).encode()
                headers = {"ETag": tag, "IM": "json-patch", "Delta-Base": '"seed-0"'}
                if MODE == "script":
                    script = json.loads(open(SCRIPT).read())
                    body = script["body"].encode()
                    headers.update(script["headers"])
            else:
                status, body, headers = 200, json.dumps(STATE).encode(), {"ETag": tag}
        with open(LOG, "a") as log:
            log.write(json.dumps({"asked": asked, "delta": "a-im" in self.headers,
                                  "status": status}) + "\n")
        self._send(status, body, headers)

    def do_POST(self):
        refund = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with LOCK:
            STATE["refunds"].append(refund)
            STATE["orders"]["A-1"]["status"] = "refund_requested"
            CHANGES.extend([
                {"op": "add", "path": "/refunds/-", "value": refund},
                {"op": "replace", "path": "/orders/A-1/status", "value": "refund_requested"},
            ])
            VERSION[0] += 1
        self._send(201, b"{}", {})

    def _send(self, status, body, headers):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
'''


def crm(root: Path, mode: str) -> Playground:
    log, seed, script = (root.parent / f"{mode}.{end}" for end in ("log", "seed", "script"))
    return Playground.model_validate(
        {
            "service": {
                "start": ["python3", "crm.py", mode, "{port}", str(log), str(seed), str(script)],
                "ready": "/health",
                "state": "/state",
            }
        }
    )


def reads(root: Path, mode: str) -> list[dict[str, Any]]:
    log = root.parent / f"{mode}.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def refund(env: Mapping[str, str]) -> Trace:
    body = json.dumps({"order_id": "A-1", "amount": 25}).encode()
    request = urllib.request.Request(env["EVALWARD_SERVICE_URL"] + "/refunds", body)
    await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=10).read())
    return Trace()


async def nothing(env: Mapping[str, str]) -> Trace:
    return Trace()


def runs(
    root: Path,
    mode: str,
    agents: list[Any],
    templates: Templates,
    *,
    together: bool = False,
) -> list[tuple[Trace, PlaygroundRun | None]]:
    """One run an agent, each with its own service of one playground: one after another,
    or all started at once (`together`)."""
    (root.parent / f"{mode}.seed").write_text(json.dumps(SEED))
    source = PlaygroundSource("crm", crm(root, mode), root)
    setting = PlaygroundSetting(ENV, templates=templates)

    async def each() -> list[tuple[Trace, PlaygroundRun | None]]:
        if together:
            return list(
                await asyncio.gather(
                    *(run_in_playground(source, StateNeeds(), a, setting) for a in agents)
                )
            )
        return [await run_in_playground(source, StateNeeds(), a, setting) for a in agents]

    return asyncio.run(each())


@pytest.fixture
def root(tmp_path: Path) -> Path:
    world = tmp_path / "world"
    world.mkdir()
    (world / "crm.py").write_text(SERVICE)
    return world


def test_a_changed_state_is_read_as_its_delta_and_equals_the_whole_state(root: Path) -> None:
    templates = Templates()
    try:
        delta = runs(root, "delta", [nothing, refund, nothing, refund], templates)
        whole = runs(root, "whole", [nothing, refund, nothing, refund], templates)
    finally:
        templates.close()
    assert all(run is not None for _, run in delta), [trace.error for trace, _ in delta]
    assert [(read["asked"], read["status"]) for read in reads(root, "delta")] == [
        (None, 200),  # the first read is whole and gives the tag
        ('"seed-0"', 304),
        ('"seed-0"', 304),
        ('"seed-0"', 226),  # the refund: only what changed
        ('"seed-0"', 304),
        ('"seed-0"', 304),
        ('"seed-0"', 304),
        ('"seed-0"', 226),
    ]
    assert all(read["delta"] == (read["asked"] is not None) for read in reads(root, "delta"))
    assert [read["status"] for read in reads(root, "whole")] == [
        200,
        304,
        304,
        200,
        304,
        304,
        304,
        200,
    ]
    kept = delta[0][1].initial.document["service"]  # type: ignore[union-attr]
    assert kept == SEED  # never changed by the patches applied to it
    for (_, with_delta), (_, read_whole) in zip(delta, whole, strict=True):
        assert with_delta is not None and read_whole is not None
        assert with_delta.initial.document["service"] is kept
        assert with_delta.final.document == read_whole.final.document
        assert with_delta.record() == read_whole.record()
    changed = delta[1][1].final.document["service"]  # type: ignore[union-attr]
    assert changed["orders"]["A-1"]["status"] == "refund_requested"
    assert changed["refunds"] == [{"order_id": "A-1", "amount": 25}]
    # what the agent did not change is shared with the kept document, not copied; so is a
    # changed state's read whole
    assert changed["orders"]["A-2"] is kept["orders"]["A-2"]
    assert changed["notes"] is kept["notes"]
    read_again = whole[1][1].final.document["service"]  # type: ignore[union-attr]
    kept_whole = whole[0][1].initial.document["service"]  # type: ignore[union-attr]
    assert read_again is not kept_whole and read_again["notes"] is kept_whole["notes"]
    assert read_again["orders"]["A-2"] is kept_whole["orders"]["A-2"]


EVERY_OPERATION = [
    {"op": "test", "path": "/orders/A-1/items/1", "value": 2},
    {"op": "add", "path": "/orders/A-1/items/0", "value": 0},
    {"op": "remove", "path": "/orders/A-1/items/3"},
    {"op": "replace", "path": "/orders/A-2", "value": {"status": "gone", "tags": ["x"]}},
    {"op": "move", "from": "/orders/A-1/items/1", "path": "/notes/kept/a/0/moved"},
    {"op": "copy", "from": "/notes/kept", "path": "/orders/A-2/tags/-"},
    {"op": "add", "path": "/orders/A-2/tags/1/a/0/b", "value": {"deep": True}},
    {"op": "add", "path": "/notes/a~1b~0c", "value": None},
    {"op": "test", "path": "/notes/kept/a/0", "value": {"b": 1, "moved": 1}},
]


def test_every_operation_applies_as_the_standard_says_and_the_kept_state_stays(
    root: Path,
) -> None:
    script = root.parent / "script.script"
    script.write_text(json.dumps({"body": json.dumps(EVERY_OPERATION), "headers": {}}))
    templates = Templates()
    try:
        done = runs(root, "script", [refund, nothing, refund], templates)
    finally:
        templates.close()
    assert all(run is not None for _, run in done), [trace.error for trace, _ in done]
    expected = jsonpatch.apply_patch(copy.deepcopy(SEED), EVERY_OPERATION)
    for index in (0, 2):
        found = done[index][1]
        assert found is not None
        assert found.final.document["service"] == expected
        assert found.initial.document["service"] == SEED
        # each object the patch copied says which of its keys changed, and holds the kept
        # object's own value at every other: what comparing it with the kept one relies on
        copies = list(derived_copies(found.final.document["service"]))
        assert copies, "no object the patch copied"
        for made in copies:
            for key in made.keys() | made.base.keys():
                if key not in made.changed:
                    assert key in made and key in made.base, key
                    assert made[key] is made.base[key], key
        plain = json.loads(json.dumps(found.final.document))
        assert (
            found.record() == PlaygroundRun(found.initial, PlaygroundState("crm", plain)).record()
        )
    middle = done[1][1]
    assert middle is not None and middle.final.document["service"] == SEED
    # the copy is a copy: the add inside it changed neither the original nor the kept state
    assert expected["notes"]["kept"] == {"a": [{"b": 1, "moved": 1}]}
    assert SEED["notes"] == {"kept": {"a": [{"b": 1}]}}


def derived_copies(value: Any) -> Iterator[Derived]:
    """Every `Derived` in a document."""
    if isinstance(value, Derived):
        yield value
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    )
    for child in children:
        yield from derived_copies(child)


@pytest.mark.parametrize(
    ("body", "headers", "why"),
    [
        ("[]", {"IM": "vcdiff"}, "answered 226 IM Used with IM 'vcdiff', not 'json-patch'"),
        (
            "[]",
            {"Delta-Base": '"seed-9"'},
            "answered a delta from another state than the one it was sent",
        ),
        ('{"op": "add"}', {}, "answered a delta that is not a list of operations"),
        ("[{", {}, "answered a delta that is not JSON"),
        (
            '[{"op": "remove", "path": "/orders/A-9"}]',
            {},
            "answered a delta whose operation 0 (remove /orders/A-9) does not apply:",
        ),
        (
            '[{"op": "add", "path": "/refunds/-", "value": 1}, '
            '{"op": "test", "path": "/refunds/0", "value": true}]',
            {},
            "answered a delta whose operation 1 (test /refunds/0) does not apply: "
            "the value there is another",
        ),
        (
            '[{"op": "frobnicate", "path": ""}]',
            {},
            "answered a delta whose operation 0 (frobnicate ) does not apply: `op` is not one of",
        ),
        ('["add"]', {}, "answered a delta whose operation 0 does not apply: it is not an object"),
        (
            '[{"op": "move", "from": "/orders", "path": "/orders/A-1/x"}]',
            {},
            "a value cannot move into itself",
        ),
        (
            '[{"op": "add", "path": "/notes/x", "value": ' + "[" * 63 + "]" * 63 + "}]",
            {},
            "answered a delta whose operation 0 (add /notes/x) does not apply: "
            "JSON nested more than 62 deep",
        ),
        (  # a megabyte, then the notes holding it copied into themselves, doubling them
            '[{"op": "add", "path": "/notes/big", "value": "'
            + "x" * 1_000_000
            + '"}, '
            + ", ".join(
                f'{{"op": "copy", "from": "/notes", "path": "/notes/c{n}"}}' for n in range(40)
            )
            + "]",
            {},
            "does not apply: it moves or copies more than the 8,388,608 bytes of a state",
        ),
    ],
)
def test_a_delta_that_stands_for_no_state_fails_the_run_saying_why(
    root: Path, body: str, headers: dict[str, str], why: str
) -> None:
    (root.parent / "script.script").write_text(json.dumps({"body": body, "headers": headers}))
    templates = Templates()
    try:
        [(trace, run)] = runs(root, "script", [refund], templates)
    finally:
        templates.close()
    assert run is None
    assert trace.error is not None
    assert trace.error.startswith(
        "the playground's final state: playground 'crm': its state endpoint /state "
    )
    assert why in trace.error


def test_a_delta_to_a_read_that_sent_no_tag_fails_the_run(root: Path) -> None:
    templates = Templates()
    try:
        [(trace, run)] = runs(root, "unasked", [nothing], templates)
    finally:
        templates.close()
    assert run is None
    assert trace.error == (
        "the playground's initial state could not be read: playground 'crm': its state "
        "endpoint /state answered 226 IM Used (a delta) to a read that sent no ETag"
    )


def test_runs_that_start_together_read_the_fresh_state_whole_once(root: Path) -> None:
    templates = Templates()
    try:
        done = runs(root, "delta", [refund, nothing] * 4, templates, together=True)
    finally:
        templates.close()
    assert all(run is not None for _, run in done), [trace.error for trace, _ in done]
    statuses = [(read["asked"] is None, read["status"]) for read in reads(root, "delta")]
    assert statuses.count((True, 200)) == 1  # one whole read; the others sent its tag
    assert sorted(statuses) == sorted([(True, 200)] + [(False, 304)] * 11 + [(False, 226)] * 4)
    refunded = [run.final.document["service"] for _, run in done[::2] if run is not None]
    assert all(state["refunds"] == [{"order_id": "A-1", "amount": 25}] for state in refunded)


def test_evalward_run_decides_the_same_with_deltas_as_without(repo: GitRepo) -> None:
    found = {}
    for mode in ("delta", "whole"):
        log = repo.path.parent / f"{mode}.log"
        suite = refund_clerk.suite(
            ["python3", "crm.py", mode, "{port}", str(log), "seed.json", "-"]
        )
        files = {"evals.yaml": suite, "clerk.py": refund_clerk.CLERK, "crm.py": SERVICE}
        repo.commit(mode, files | {"seed.json": json.dumps(SEED)})
        code, results, _ = run_for_results(repo.path, "--parallel", "1")
        verdicts = {
            f["fixture"]: (f["status"], [a["status"] for a in f["assertions"]])
            for f in results["fixtures"]
        }
        statuses = [json.loads(line)["status"] for line in log.read_text().splitlines()]
        found[mode] = (code, verdicts, statuses)
    assert found["delta"][:2] == found["whole"][:2]
    assert found["delta"][1] == refund_clerk.VERDICTS
    assert found["delta"][2] == [200, 304, 304, 226, 304, 304]
    assert found["whole"][2] == [200, 304, 304, 200, 304, 304]


def test_evalward_run_records_a_delta_that_does_not_apply_as_the_runs_error(
    repo: GitRepo,
) -> None:
    """A service whose delta removes what is not there: the run that changed the state is
    an error saying so, never a pass, and `evalward run` exits non-zero."""
    log, script = repo.path.parent / "script.log", repo.path.parent / "bad.script"
    script.write_text(json.dumps({"body": '[{"op": "remove", "path": "/gone"}]', "headers": {}}))
    start = ["python3", "crm.py", "script", "{port}", str(log), "seed.json", str(script)]
    files = {"evals.yaml": refund_clerk.suite(start), "clerk.py": refund_clerk.CLERK}
    repo.commit("bad delta", files | {"crm.py": SERVICE, "seed.json": json.dumps(SEED)})
    code, results, _ = run_for_results(repo.path, "--parallel", "1")
    found = {f["fixture"]: (f["status"], f["message"]) for f in results["fixtures"]}
    assert code != 0
    status, message = found["refund"]
    assert status == "error"
    assert "answered a delta whose operation 0 (remove /gone) does not apply" in message
    assert found["leave"][0] == "pass"  # its state never changed: a 304, no delta
