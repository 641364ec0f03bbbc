"""A service's state read again by its ETag: a real service on loopback answers its state
with a strong tag, is sent it back (`If-None-Match`) and answers an unchanged state with a
bodiless `304 Not Modified`; a changed state is read whole; a 304 that does not stand for
the document evalward kept fails the run, saying why; the base's and the head's services
never vouch for each other's reads; and `evalward run` decides the same with tags as
without."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from evalward.resources.playground import Playground
from evalward.rundata.playground_state import PlaygroundRun
from evalward.rundata.trace import Trace
from evalward.runtime.playground.base import PlaygroundSource, Templates
from evalward.runtime.playground.provision import PlaygroundSetting
from evalward.runtime.playground.run import StateNeeds, run_in_playground
from support import refund_clerk
from support.clirun import run_for_results
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

ENV = {"PATH": os.environ["PATH"]}

SERVICE = r'''
"""A CRM whose state answers carry ETags as MODE says: `tags` honestly (a version counter
bumped on each change, its first tag from its seed), `none` without, the rest as a hostile
service would. Each state read is logged: the If-None-Match it carried, what was answered."""
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE, PORT, LOG = sys.argv[1], int(sys.argv[2]), sys.argv[3]
LOCK = threading.Lock()
STATE = {"orders": {"A-1": {"status": "new"}}, "refunds": []}
VERSION = [0]


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            return self._send(200, b"{}", None)
        with LOCK:
            body = json.dumps(STATE).encode()
            tag = f'"seed-a1-{VERSION[0]}"'
        asked = self.headers.get("if-none-match")
        status, etag = 200, tag
        if MODE == "none":
            etag = None
        elif MODE == "unasked":
            status = 304
        elif MODE == "weak-whole":
            etag = "W/" + tag
        elif MODE == "long":
            etag = '"' + "x" * 300 + '"'
        elif MODE == "control":
            etag = '"a\x7fb"'
        elif MODE == "unquoted":
            etag = "seed-a1-0"
        elif asked is not None and MODE == "other":
            status, etag = 304, '"seed-b2-0"'
        elif asked is not None and MODE == "bare":
            status, etag = 304, None
        elif asked is not None and MODE == "weak":
            status, etag = 304, "W/" + asked
        elif asked == tag:
            status = 304
        sent = b"" if status == 304 else body
        with open(LOG, "a") as log:
            log.write(json.dumps({"asked": asked, "status": status, "bytes": len(sent)}) + "\n")
        self._send(status, sent, etag)

    def do_POST(self):
        refund = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with LOCK:
            STATE["refunds"].append(refund)
            STATE["orders"]["A-1"]["status"] = "refund_requested"
            VERSION[0] += 1
        self._send(201, b"{}", None)

    def _send(self, status, body, etag):
        self.send_response(status)
        if etag is not None:
            self.send_header("ETag", etag)
        if status != 304:
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
'''


def crm(mode: str, log: Path) -> Playground:
    return Playground.model_validate(
        {
            "service": {
                "start": ["python3", "crm.py", mode, "{port}", str(log)],
                "ready": "/health",
                "state": "/state",
            }
        }
    )


def reads(log: Path) -> list[dict[str, Any]]:
    """Each state read the service saw: what it was asked with, what it answered (a 304
    with no body, anything else with the whole state)."""
    if not log.exists():
        return []
    found = [json.loads(line) for line in log.read_text().splitlines()]
    assert all((read.pop("bytes") == 0) == (read["status"] == 304) for read in found)
    return found


async def refund(env: Mapping[str, str]) -> Trace:
    body = json.dumps({"order_id": "A-1", "amount": 25}).encode()
    request = urllib.request.Request(env["EVALWARD_SERVICE_URL"] + "/refunds", body)
    await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=10).read())
    return Trace()


async def nothing(env: Mapping[str, str]) -> Trace:
    return Trace()


def runs(
    root: Path, mode: str, agents: list[Any], templates: Templates, side: str = "head"
) -> list[tuple[Trace, PlaygroundRun | None]]:
    """One run a step, one after another, each with its own service of one playground."""
    source = PlaygroundSource("crm", crm(mode, root.parent / f"{mode}.log"), root, side=side)
    setting = PlaygroundSetting(ENV, templates=templates)

    async def each() -> list[tuple[Trace, PlaygroundRun | None]]:
        return [await run_in_playground(source, StateNeeds(), a, setting) for a in agents]

    return asyncio.run(each())


@pytest.fixture
def root(tmp_path: Path) -> Path:
    world = tmp_path / "world"
    world.mkdir()
    (world / "crm.py").write_text(SERVICE)
    return world


def test_an_unchanged_state_is_read_by_304_and_a_changed_one_whole(root: Path) -> None:
    log = root.parent / "tags.log"
    templates = Templates()
    try:
        tagged = runs(root, "tags", [nothing, refund, nothing], templates)
        plain = runs(root, "none", [nothing, refund, nothing], templates)
    finally:
        templates.close()
    found = [run for _, run in tagged]
    assert all(run is not None for run in found), [trace.error for trace, _ in tagged]
    # the first read is whole and gives the tag; every later read sends it back
    assert reads(log) == [
        {"asked": None, "status": 200},
        {"asked": '"seed-a1-0"', "status": 304},  # nothing changed
        {"asked": '"seed-a1-0"', "status": 304},  # the next run's service, as it started
        {"asked": '"seed-a1-0"', "status": 200},  # the refund changed it: read whole
        {"asked": '"seed-a1-0"', "status": 304},
        {"asked": '"seed-a1-0"', "status": 304},
    ]
    assert not any(read["asked"] for read in reads(root.parent / "none.log"))
    first = found[0].initial.document["service"]  # type: ignore[union-attr]
    # a 304 is the document read with its tag: neither sent nor parsed again
    for run in found:
        assert run is not None
        assert run.initial.document["service"] is first
    assert found[0].final.document["service"] is first  # type: ignore[union-attr]
    changed = found[1].final.document["service"]  # type: ignore[union-attr]
    assert changed["refunds"] == [{"order_id": "A-1", "amount": 25}]
    assert changed["orders"]["A-1"]["status"] == "refund_requested"
    # the same states, and the same records, as a service without tags gives
    for with_tags, (_, without) in zip(found, plain, strict=True):
        assert with_tags is not None and without is not None
        assert with_tags.initial.document == without.initial.document
        assert with_tags.final.document == without.final.document
        assert with_tags.record() == without.record()


@pytest.mark.parametrize(
    ("mode", "when", "why"),
    [
        ("unasked", "initial", "answered 304 Not Modified to a read that sent no ETag"),
        ("other", "final", "answered 304 Not Modified with another ETag than the one it was sent"),
        ("bare", "final", "answered 304 Not Modified without an ETag"),
        ("weak", "final", "answered 304 Not Modified with a weak ETag"),
        ("long", "initial", "answered an ETag that is longer than 256 bytes"),
        ("control", "initial", "answered an ETag that holds a control character"),
        (
            "unquoted",
            "initial",
            'answered an ETag that is not one quoted tag of printable ASCII ("...", or W/"..." '
            "for a weak one)",
        ),
    ],
)
def test_a_304_that_stands_for_no_kept_document_fails_the_run_saying_why(
    root: Path, mode: str, when: str, why: str
) -> None:
    templates = Templates()
    try:
        [(trace, run)] = runs(root, mode, [nothing], templates)
    finally:
        templates.close()
    assert run is None
    read = "initial state could not be read" if when == "initial" else "final state"
    assert trace.error == (
        f"the playground's {read}: playground 'crm': its state endpoint /state {why}"
    )


def test_a_weak_tag_on_a_whole_state_is_not_kept_and_the_state_is_read_whole(
    root: Path,
) -> None:
    templates = Templates()
    try:
        done = runs(root, "weak-whole", [nothing, nothing], templates)
    finally:
        templates.close()
    assert all(run is not None for _, run in done), [trace.error for trace, _ in done]
    assert reads(root.parent / "weak-whole.log") == [{"asked": None, "status": 200}] * 4


def test_the_base_and_the_head_never_share_a_kept_document(root: Path) -> None:
    """One tree, one playground, both sides (a base-defined playground under `gate-config:
    base`): the head's first read sends no tag the base's service gave."""
    log = root.parent / "tags.log"
    templates = Templates()
    try:
        base = runs(root, "tags", [nothing], templates, side="base")
        head = runs(root, "tags", [nothing], templates, side="head")
        kept = sorted(key[0] for key in templates.state_tags)
    finally:
        templates.close()
    assert base[0][1] is not None and head[0][1] is not None
    assert [read["asked"] for read in reads(log)] == [None, '"seed-a1-0"'] * 2
    assert kept == ["base", "head"]


def verdicts(repo: GitRepo, mode: str) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    """`evalward run` of the clerk with a service of `mode`: its exit code, each fixture's
    status and its assertions' statuses, and the state reads its services saw."""
    log = repo.path.parent / f"{mode}.log"
    suite = refund_clerk.suite(["python3", "crm.py", mode, "{port}", str(log)])
    repo.commit(mode, {"evals.yaml": suite, "clerk.py": refund_clerk.CLERK, "crm.py": SERVICE})
    code, results, _ = run_for_results(repo.path, "--parallel", "1")
    found = {
        f["fixture"]: (f["status"], [a["status"] for a in f["assertions"]], f["message"])
        for f in results["fixtures"]
    }
    return code, found, reads(log)


def test_evalward_run_decides_the_same_with_tags_as_without(repo: GitRepo) -> None:
    tagged, plain = verdicts(repo, "tags"), verdicts(repo, "none")
    assert tagged[:2] == plain[:2]
    assert {name: found[:2] for name, found in tagged[1].items()} == refund_clerk.VERDICTS
    # three runs, two reads each: only the first is whole for want of a tag
    assert [read["asked"] is None for read in tagged[2]] == [True] + [False] * 5
    assert [read["status"] for read in tagged[2]].count(304) == 4
    assert not any(read["asked"] for read in plain[2])


def test_evalward_run_records_a_hostile_304_as_the_runs_error(repo: GitRepo) -> None:
    code, found, _ = verdicts(repo, "other")
    assert code != 0
    for status, assertions, message in found.values():
        assert status == "error"
        assert set(assertions) <= {"error"}
        assert "with another ETag than the one it was sent" in message
