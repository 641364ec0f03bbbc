"""Broken and hostile playgrounds through `evalward run`: each breaks its own run with an
error naming the playground, every other run is unaffected, no run reaches another's
playground, and what an agent leaves cannot make evalward read outside it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENTS = Path(__file__).resolve().parents[2] / "agents"

HEADER = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: worker }}
spec:
  runtime:
    command: {{ run: [{python}, agent.py] }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: worlds }}
spec:
  targetAgent: worker
  fixtureSelector: {{ matchLabels: {{ suite: worlds }} }}
  execution: {{ repsPerFixture: {reps}, parallel: 4 }}
"""

FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ suite: worlds }} }}
spec:
  targetAgent: worker
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  playground:
{playground}
  assertions:
{assertions}
"""

SERVICE = """\
    name: {name}
    service:
      start: [python3, service.py, {mode}, "{{port}}"]
      ready: /health
      readyTimeoutSeconds: {ready}"""

ALL_PARTS = """\
    name: everything
    files: { seed: world/files }
    sqlite: { seed: world/seed.json }
    service: { start: [python3, service.py, ok, "{port}"], ready: /health }"""


def fixture(name: str, playground: str, *assertions: str) -> str:
    listed = "\n".join(f"    - {a}" for a in assertions)
    return FIXTURE.format(name=name, playground=playground, assertions=listed)


def service(name: str, mode: str, ready: int = 20) -> str:
    return SERVICE.format(name=name, mode=mode, ready=ready)


def write_repo(repo: GitRepo, reps: int, fixtures: list[str]) -> None:
    repo.commit(
        "worlds",
        {
            "evals.yaml": HEADER.format(python=sys.executable, reps=reps) + "".join(fixtures),
            "agent.py": (AGENTS / "playground_agent.py").read_text(),
            "service.py": (AGENTS / "playground_service.py").read_text(),
            "world/files/notes.txt": "seeded notes\n",
            "world/seed.json": json.dumps(
                {"orders": [{"id": "A-1", "status": "delivered"}], "refunds": []}
            ),
        },
    )


def run(repo: GitRepo, tmp_path: Path) -> tuple[int, str, list[dict[str, Any]]]:
    out = tmp_path / "out"
    done = evalward("run", ".", "--no-cache", "--output-dir", str(out), cwd=repo.path)
    assert "Traceback" not in done.stderr, done.stderr
    fixtures = json.loads((out / "results.json").read_text())["fixtures"]
    return done.returncode, done.stdout + done.stderr, fixtures


def error_of(result: dict[str, Any]) -> str:
    return next(s["content"] for s in result["trace"]["steps"] if s["type"] == "error")


def test_broken_playgrounds_fail_their_own_runs_by_name_and_leave_the_others_alone(
    repo: GitRepo, tmp_path: Path
) -> None:
    write_repo(
        repo,
        1,
        [
            fixture(
                "never-ready", service("slowpoke", "never", ready=1), "{type: contains, value: x}"
            ),
            fixture("service-dies", service("mortal", "ok"), "{type: contains, value: x}"),
            fixture("dumps-forever", service("firehose", "huge"), "{type: contains, value: x}"),
            fixture(
                "corrupt-db",
                "    name: ledger\n    sqlite: { seed: world/seed.json }",
                "{type: sql, query: SELECT 1, count: 1}",
            ),
            fixture(
                "db-link",
                "    name: moved\n    sqlite: { seed: world/seed.json }",
                "{type: sql, query: SELECT 1, count: 1}",
            ),
            fixture(
                "stateless",
                service("quiet", "ok") + "\n      state: null",
                "{type: stateValue, at: service, exists: false}",
            ),
            fixture(
                "dumped",
                service("dumper", "ok")
                + "\n      dump: [python3, -c, 'import json, os, urllib.request as r; "
                + 'print(json.dumps({"dumped": json.load(r.urlopen('
                + 'os.environ["EVALWARD_SERVICE_URL"] + "/state"))}))\']',
                "{type: stateValue, at: service.dumped.hits, equals: 1}",
            ),
            fixture(
                "dump-floods",
                service("flood", "ok")
                + "\n      dump: [python3, -c, 'import sys; "
                + '[sys.stdout.write("x" * 65536) for _ in iter(int, 1)]\']',
                "{type: contains, value: x}",
            ),
            fixture(
                "healthy",
                service("steady", "ok"),
                "{type: stateValue, at: service.hits, equals: 1}",
            ),
        ],
    )
    code, said, fixtures = run(repo, tmp_path)
    assert code == 1, said
    by_name = {f["fixture"]: f for f in fixtures}
    assert by_name["healthy"]["status"] == "pass", by_name["healthy"]
    assert by_name["stateless"]["status"] == "pass", by_name["stateless"]  # no state endpoint
    assert by_name["dumped"]["status"] == "pass", by_name["dumped"]  # state from `dump`
    for name in ("never-ready", "service-dies", "dumps-forever", "corrupt-db", "db-link"):
        assert by_name[name]["status"] == "error", by_name[name]
    assert "playground 'slowpoke': the service did not answer /health within 1 s" in error_of(
        by_name["never-ready"]
    )
    assert "playground 'mortal': the service exited with code 3 during the run" in error_of(
        by_name["service-dies"]
    )
    assert "playground 'firehose'" in error_of(by_name["dumps-forever"])
    assert "larger than 8,388,608 bytes" in error_of(by_name["dumps-forever"])
    assert by_name["dump-floods"]["status"] == "error"
    assert "playground 'flood': its state dump is larger than 8,388,608 bytes" in error_of(
        by_name["dump-floods"]
    )
    assert "playground 'ledger': its database is corrupt" in error_of(by_name["corrupt-db"])
    assert "playground 'ledger'" in by_name["corrupt-db"]["message"]
    # the database turned into a link leads nowhere
    assert "playground 'moved': its database cannot be read" in error_of(by_name["db-link"])


def test_every_run_has_its_own_playground_and_none_sees_another(
    repo: GitRepo, tmp_path: Path
) -> None:
    write_repo(
        repo,
        3,
        [
            fixture(
                "isolated",
                ALL_PARTS,
                "{type: stateValue, at: service.hits, equals: 1}",
                '{type: fileState, path: seen.txt, contains: "isolated"}',
                "{type: stateUnchanged, except: [files.seen.txt, service.hits]}",
                "{type: sql, query: 'SELECT id, status FROM orders', rows: [[A-1, delivered]]}",
            ),
        ],
    )
    code, said, fixtures = run(repo, tmp_path)
    assert code == 0, said
    assert [f["status"] for f in fixtures] == ["pass"] * 3
    places = [json.loads(f["output"]) for f in fixtures]
    for part in ("service", "database", "folder"):
        assert len({p[part] for p in places}) == 3, places  # a port, a file, a folder each
    for place in places:
        assert not Path(place["folder"]).exists()  # torn down
    for result in fixtures:  # each saw only its own run's single write
        final = json.loads(result["playground"]["final"])
        assert final["files"]["seen.txt"] == "isolated\n"
        assert final["service"]["hits"] == 1


def test_a_link_the_agent_leaves_is_recorded_as_a_link_never_followed(
    repo: GitRepo, tmp_path: Path
) -> None:
    write_repo(
        repo,
        1,
        [
            fixture(
                "link-out",
                "    files: { seed: world/files }",
                '{type: fileState, path: notes.txt, contains: "PATH="}',
                "{type: fileState, path: notes.txt, exists: true}",
            ),
        ],
    )
    code, said, fixtures = run(repo, tmp_path)
    assert code == 1, said
    (result,) = fixtures
    assert result["status"] == "fail"
    final = json.loads(result["playground"]["final"])
    assert final["files"]["notes.txt"] == {"link": "/proc/self/environ"}
    assert "PATH=" not in json.dumps(result["playground"])
    assert 'it holds {"link": "/proc/self/environ"}' in result["message"]
    # a link that leads anywhere is no file the fixture asked for
    exists = result["assertions"][1]
    assert exists["status"] == "fail", exists
    assert exists["message"] == (
        'expected notes.txt to exist as a file; it holds {"link": "/proc/self/environ"}'
    )


def test_a_key_with_a_dot_the_agent_writes_cannot_answer_for_the_place_a_path_names(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The agent leaves order A-1 as it was, and adds a row keyed `A-1.status` saying
    `refunded`, and a file whose flat key `refund.amount` says 25 beside the real refund of
    9999: the path `db.orders.A-1.status` read the row, `except` covered it, and the file's
    `refund.amount` read the flat key. All three passed; each path now names two places,
    which cannot be evaluated: an error, never a pass."""
    parts = "    files: { seed: world/files }\n    sqlite: { seed: world/seed.json }"
    write_repo(
        repo,
        1,
        [
            fixture(
                "dotted-decoys",
                parts,
                "{type: stateValue, at: db.orders.A-1.status, equals: refunded}",
                "{type: stateUnchanged, at: db.orders, except: [db.orders.A-1.status]}",
                "{type: stateValue, file: refund.json, at: refund.amount, equals: 25}",
            ),
        ],
    )
    code, said, fixtures = run(repo, tmp_path)
    assert code == 1, said
    (result,) = fixtures
    checks = [(a["type"], a["status"]) for a in result["assertions"]]
    assert checks == [
        ("stateValue", "error"),
        ("stateUnchanged", "error"),
        ("stateValue", "error"),
    ], result["assertions"]
    said_of = [a["message"] for a in result["assertions"]]
    assert (
        'the keys ["db", "orders", "A-1.status"] and ["db", "orders", "A-1", "status"]'
        in said_of[0]
    )
    assert 'the keys ["refund.amount"] and ["refund", "amount"]' in said_of[2]


def test_a_blob_s_tail_and_a_row_of_another_key_type_are_seen(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The agent writes past a BLOB's first KB, which was all the state kept of it, and adds
    a row keyed by the text '1' read before the number 1's, whose one label kept only the
    last row read: both left `stateUnchanged` passing. The BLOB is its size and hash past
    its first KB (a change), and two rows of one label make the state unreadable (the run's
    error); so does a FIFO left as its write-ahead log, named as that."""
    parts = "    sqlite: { seed: world/blobs.sql }"
    write_repo(
        repo,
        1,
        [
            fixture("blob-tail", parts, "{type: stateUnchanged, at: db.docs}"),
            fixture("labels-alike", parts, "{type: stateUnchanged, at: db.notes}"),
            fixture("wal-fifo", parts, "{type: stateUnchanged, at: db.notes}"),
        ],
    )
    repo.commit(
        "a database of BLOBs and notes",
        {
            "world/blobs.sql": (
                "CREATE TABLE docs (id INTEGER PRIMARY KEY, body BLOB);\n"
                "INSERT INTO docs VALUES (1, zeroblob(4000));\n"
                "CREATE TABLE notes (id PRIMARY KEY, v);\n"
                "INSERT INTO notes VALUES (1, 'number');\n"
            )
        },
    )
    code, said, fixtures = run(repo, tmp_path)
    assert code == 1, said
    by_name = {f["fixture"]: f for f in fixtures}
    tail = by_name["blob-tail"]
    assert tail["status"] == "fail", tail["message"]
    assert "changed: db.docs.1.body" in tail["message"], tail["message"]
    alike = by_name["labels-alike"]
    assert alike["status"] == "error", alike["message"]
    assert "its table 'notes' holds two rows labelled '1'" in error_of(alike)
    # a FIFO as its write-ahead log is named as that, not as the database
    fifo = by_name["wal-fifo"]
    assert fifo["status"] == "error", fifo["message"]
    assert "write-ahead log (playground.sqlite-wal) is no longer a regular file" in error_of(fifo)


def test_a_folder_left_for_the_database_or_its_log_fails_only_its_own_run(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The agent leaves a folder where the database was, a write-ahead log beside it, or a
    folder where SQLite would look for the log: such a folder opens as a file does, and
    reading it as one ended the whole job with an internal error. Each is its own run's
    error, naming what is not a file, and the run beside them passes."""
    parts = "    sqlite: { seed: world/seed.json }"
    write_repo(
        repo,
        1,
        [
            fixture("db-folder", parts, "{type: stateUnchanged, at: db.orders}"),
            fixture("wal-folder", parts, "{type: stateUnchanged, at: db.orders}"),
            fixture("untouched", parts, "{type: stateUnchanged, at: db.orders}"),
        ],
    )
    code, said, fixtures = run(repo, tmp_path)
    assert code == 1, said
    by_name = {f["fixture"]: f for f in fixtures}
    assert by_name["untouched"]["status"] == "pass", by_name["untouched"]
    assert by_name["db-folder"]["status"] == "error", by_name["db-folder"]
    assert "playground 'db-folder': its database is no longer a regular file" in error_of(
        by_name["db-folder"]
    )
    assert by_name["wal-folder"]["status"] == "error", by_name["wal-folder"]
    assert (
        "its database's write-ahead log (playground.sqlite-wal) is no longer a regular file"
        in error_of(by_name["wal-folder"])
    )


def test_a_folder_of_files_past_what_its_state_reads_fails_its_run_saying_why(
    repo: GitRepo, tmp_path: Path
) -> None:
    """Sparse files cost the agent nothing to write and evalward their size to hash: 1,000
    of 64 MiB took 84 s to read, past the folder's 60 s that only its listing counted. The
    folder's state reads 1 GiB of its files at most: past it, the run's error."""
    write_repo(
        repo,
        1,
        [fixture("sparse-files", "    files: { seed: world/files }", "{type: stateUnchanged}")],
    )
    code, said, fixtures = run(repo, tmp_path)
    assert code == 1, said
    (result,) = fixtures
    assert result["status"] == "error", result["message"]
    assert "its files hold more than 1 GiB to read" in error_of(result)


def test_what_the_state_holds_is_shown_as_text_and_cannot_pass_for_evalwards_own_words(
    repo: GitRepo, tmp_path: Path
) -> None:
    write_repo(
        repo,
        1,
        [
            fixture(
                "forged-evidence",
                "    files: { seed: world/files }",
                "{type: stateValue, file: evidence.json, at: status, equals: refunded}",
            ),
        ],
    )
    code, said, fixtures = run(repo, tmp_path)
    assert code == 1, said
    assert fixtures[0]["status"] == "fail"
    assert "expected evidence.json at status to equal" in fixtures[0]["message"]
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "<img" not in comment
    lines = comment.splitlines()
    assert not any(line.startswith("## ✅") for line in lines), comment
    assert lines[1].startswith("## ❌"), comment


HTTP_AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: server }}
spec:
  runtime:
    http:
      start: [{python}, server.py, "{{port}}"]
      ready: http://127.0.0.1:{{port}}/ready
      url: http://127.0.0.1:{{port}}/run
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: served }}
spec:
  targetAgent: server
  fixtures: [served-world]
  execution: {{ repsPerFixture: 2 }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: served-world }}
spec:
  targetAgent: server
  input: {{ type: prompt, payload: {{ prompt: playground }} }}
  playground: {{ files: {{ seed: world/files }} }}
  assertions:
    - {{ type: fileState, path: done.txt, contains: served-world }}
"""


def test_an_http_agent_finds_each_runs_playground_in_its_request(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.commit(
        "served",
        {
            "evals.yaml": HTTP_AGENT.format(python=sys.executable),
            "server.py": (AGENTS / "http_agent.py").read_text(),
            "world/files/notes.txt": "seeded\n",
        },
    )
    code, said, fixtures = run(repo, tmp_path)
    assert code == 0, said
    assert [f["status"] for f in fixtures] == ["pass", "pass"]
    assert fixtures[0]["output"] != fixtures[1]["output"]  # one folder per run
    finals = [json.loads(f["playground"]["final"])["files"]["done.txt"] for f in fixtures]
    assert finals == [f"served-world in {f['output']}" for f in fixtures]


NAMED_ALIKE = """\
import os
folder = os.fsencode(os.environ["EVALWARD_PLAYGROUND_DIR"])
for name in (b"r\\x85.txt", "r\\u0085.txt".encode()):
    with open(os.path.join(folder, name), "wb") as out:
        out.write(name)
print("done")
"""


def test_two_files_whose_names_the_state_writes_alike_make_the_run_an_error(
    repo: GitRepo, tmp_path: Path
) -> None:
    """A byte that is not UTF-8 and the control character of that number are written out
    alike (`\\x85`): keyed by that, the file read second stood for both, and a criterion
    read whichever the agent chose. Never a pass: the run's error, naming the name."""
    write_repo(
        repo,
        1,
        [
            fixture(
                "alike",
                "    files: { seed: world/files }",
                "{type: fileState, path: notes.txt, exists: true}",
            )
        ],
    )
    repo.commit("names alike", {"agent.py": NAMED_ALIKE})
    code, output, fixtures = run(repo, tmp_path)
    assert code == 1, output
    (result,) = fixtures
    assert result["status"] == "error", result
    assert "two of its files are both named" in result["message"], result["message"]


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
"""A snapshot whose aliases expand to 10⁹ values: small as text, endless to walk."""


@pytest.mark.parametrize(
    ("snapshot", "text", "said"),
    [
        ("snap.yaml", BOMB, "aliases expand to more than"),
        ("snap.yaml", "[" * 20_000 + "]" * 20_000, "nested more than 100 levels deep"),
        ("snap.json", "[" * 200_000 + "]" * 200_000, "JSON nested too deeply"),
        ("snap.json", "[" * 150 + "]" * 150, "JSON nested more than 100 deep"),
        ("snap.json", '{"notes.txt": "x", "notes.txt": "seeded notes\\n"}', "given twice"),
    ],
    ids=["alias-bomb", "deep-yaml", "deep-json", "json-past-the-bound", "a-key-twice"],
)
def test_a_snapshot_the_pull_request_writes_to_be_endless_is_refused_saying_why(
    repo: GitRepo, tmp_path: Path, snapshot: str, text: str, said: str
) -> None:
    """The files a `stateSnapshot` compares with are the commit's: one made to be walked
    forever (aliases of aliases) or to nest past what a parser recurses through is refused
    as a snapshot that does not load, naming it, not walked and not a crash: at its line,
    before any run (the parse a run's reading of the snapshot makes)."""
    write_repo(
        repo,
        1,
        [
            fixture(
                "endless",
                "    files: { seed: world/files }",
                f"{{type: stateSnapshot, at: files, snapshot: {snapshot}}}",
            ),
        ],
    )
    repo.commit("snapshot", {snapshot: text})
    for command in (["run", ".", "--no-cache", "--output-dir", str(tmp_path)], ["validate"]):
        done = evalward(*command, cwd=repo.path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        problem = next(line for line in done.stderr.splitlines() if ".snapshot: " in line)
        assert f"the snapshot {snapshot!r} does not load" in problem, done.stderr
        assert said in problem, done.stderr
