"""A machine that refuses a write the run cannot go on without (a full disk, a file size
limit) is an outside failure said in one line, exit 3 (run again), never a traceback or
"a bug in evalward"; one that refuses a cache (results, model replies) costs the cache alone,
said once after the runs. The run is made under `prlimit --fsize`: past it a write fails
with EFBIG, as one on a full disk fails with ENOSPC; SQLite calls it a disk I/O error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

from fakes.model_server import ScriptedModelServer, text
from support import resultdb
from support.clirun import SOURCE, initialised
from support.gitrepo import GitRepo
from support.limits import subprocess_limit
from support.suite import provider_env

pytestmark = pytest.mark.e2e

PRLIMIT = "/usr/bin/prlimit"
MOCK = "evals/mock-replies.yaml"
PROMPTFOO_CHAT = Path(__file__).resolve().parents[1] / "data" / "promptfoo" / "chat"
RUN_FILES = ["comment.md", "junit.xml", "report.html", "results.json"]


def _limited(repo: GitRepo, limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """`evalward run` of `evalward init`'s suite under a file size limit of `limit` bytes."""
    # -B: Python would write its bytecode caches under the limit too, and keep them cut short
    command = [sys.executable, "-B", "-m", "evalward", "run", ".", "--mock-script", MOCK, *args]
    return subprocess.run(
        [PRLIMIT, f"--fsize={limit}", "--", *command],
        cwd=repo.path,
        env={"PATH": os.environ["PATH"], "HOME": str(repo.path), "PYTHONPATH": SOURCE},
        capture_output=True,
        text=True,
        timeout=subprocess_limit(),
        check=False,
    )


def _cache_lost(code: int, stdout: str, stderr: str) -> str:
    """The run went on to its decision (the suite passes: exit 0, the decision's) and said
    the result cache's loss once, after the runs, in one line: no traceback, no bug."""
    said = stdout + stderr
    assert code == 0, said
    assert "Traceback" not in said and "bug" not in said and "refused a write" not in said, said
    (line,) = [line for line in stderr.splitlines() if "result cache" in line]
    assert "(.evalward/cache/results/results.sqlite)" in line and "(EIO)" in line, line
    assert "The runs were made; nothing was stored for a rerun" in line, line
    assert "Free space" in line, line
    return line


def test_a_result_cache_the_disk_refuses_costs_the_cache_not_the_run(repo: GitRepo) -> None:
    """The database cannot be made at all: the run is made without it, decides and records
    its history, and no half-made database is left for the next run to set aside."""
    started = initialised(repo)
    done = _limited(started, 4_000)
    _cache_lost(done.returncode, done.stdout, done.stderr)
    assert "every affected Eval passes" in done.stdout.splitlines()[1], done.stdout
    assert [p.name for p in (started.path / ".evalward" / "history").iterdir()]
    assert list((started.path / ".evalward" / "cache" / "results").iterdir()) == []


def test_a_result_cache_refused_once_runs_began_is_said_after_the_decision(repo: GitRepo) -> None:
    """The database is made, and its first result's write is refused: the runs go on, the
    decision is theirs (pass, not incomplete) and says nothing of the cache, which the one
    line after the runs does; the database is left as it was, usable."""
    started = initialised(repo)
    done = _limited(started, 16_000, "--json")
    _cache_lost(done.returncode, done.stdout, done.stderr)
    document = json.loads(done.stdout)
    assert document["result"] == "pass", document
    assert "cache" not in document["reason"], document["reason"]
    assert resultdb.stored(started.path / ".evalward" / "cache") == {}
    again = _limited(started, LIMIT, "--json")  # a rerun with room stores its results
    assert again.returncode == 0, again.stderr
    assert resultdb.stored(started.path / ".evalward" / "cache"), "its results are stored"
    assert not list(started.path.rglob("*.unreadable"))


LIMIT = 2_000_000
"""A file size limit every file of a run stays well under (its result cache, its report): only
a file already at it, opened to append (a log on a disk that is full), is refused."""


def _evalward(
    cwd: Path,
    *args: str,
    limit: int,
    stdout: IO[bytes] | int = subprocess.PIPE,
    stderr: IO[bytes] | int = subprocess.PIPE,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`evalward ARGS` in `cwd` under `prlimit --fsize=LIMIT`, with PATH and HOME only (and
    `env`)."""
    return subprocess.run(
        [PRLIMIT, f"--fsize={limit}", "--", sys.executable, "-B", "-m", "evalward", *args],
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd), "PYTHONPATH": SOURCE, **(env or {})},
        stdout=stdout,
        stderr=stderr,
        timeout=subprocess_limit(),
        check=False,
    )


def _full(path: Path) -> IO[bytes]:
    """`path` filled to `LIMIT` and opened to append: every write to it is refused (EFBIG)."""
    path.write_bytes(b"." * LIMIT)
    return path.open("ab")


def test_a_result_cache_refused_mid_run_costs_the_cache_and_the_run_writes_its_files(
    repo: GitRepo,
) -> None:
    """A result cache whose log the disk can take no more of (here a file size limit it is
    past; every other file of the run is well under it): the runs go on, the comment and
    results.json are the decision's, written whole, with the exit code it decides (0), and
    the cache's loss is said once after the runs, never "an internal error, a bug"."""
    started = initialised(repo)
    cache = started.path / ".evalward" / "cache"
    resultdb.log_past(cache, LIMIT)  # read by nothing before the run: a close would end it
    done = _evalward(
        started.path, "run", ".", "--mock-script", MOCK, "--output-dir", "out", limit=LIMIT
    )
    _cache_lost(done.returncode, done.stdout.decode(), done.stderr.decode())
    heading = done.stdout.decode().splitlines()[1]
    assert "every affected Eval passes" in heading, heading
    assert sorted(p.name for p in (started.path / "out").iterdir()) == RUN_FILES
    results = json.loads((started.path / "out" / "results.json").read_text())
    assert results["result"] == "pass" and "refused a write" not in json.dumps(results)
    kept = resultdb.stored(cache)
    assert kept and all(key.startswith("unread-") for key in kept), "nothing half-written"


def test_standard_error_on_a_full_disk_costs_its_lines_not_the_run(
    repo: GitRepo, tmp_path: Path
) -> None:
    """`evalward run 2> run.log` where run.log can take no more: the progress lines are lost,
    the run is not. It runs, decides and writes its files, and exits 3, not 0: what it would
    have said on stderr, warnings among it, is lost, so it is no clean run to take."""
    started = initialised(repo)
    with _full(tmp_path / "run.log") as log:
        done = _evalward(
            started.path,
            "run",
            ".",
            "--mock-script",
            MOCK,
            "--output-dir",
            "out",
            limit=LIMIT,
            stderr=log,
        )
    shown = done.stdout.decode()
    assert done.returncode == 3, shown
    assert "every affected Eval passes" in shown.splitlines()[1], shown
    out = started.path / "out"
    assert sorted(p.name for p in out.iterdir()) == RUN_FILES
    assert (tmp_path / "run.log").stat().st_size == LIMIT


def test_standard_output_on_a_full_disk_is_said_in_one_line_with_exit_3(
    repo: GitRepo, tmp_path: Path
) -> None:
    """`evalward status --json > status.json` where status.json can take no more: the last
    flush of what was printed is refused, said in one line naming standard output, exit 3."""
    started = initialised(repo)
    with _full(tmp_path / "status.json") as sink:
        done = _evalward(started.path, "status", "--json", limit=LIMIT, stdout=sink)
    said = done.stderr.decode()
    assert done.returncode == 3, said
    assert "Traceback" not in said and "Exception ignored" not in said, said
    (line,) = said.splitlines()
    assert "refused a write (standard output)" in line and "EFBIG" in line, line


def test_results_printed_to_a_full_disk_are_named_after_the_files_are_written(
    repo: GitRepo, tmp_path: Path
) -> None:
    """`evalward run --json --output-dir out > results.json` where results.json can take no
    more: the document is refused as it is printed, after the run's files are written; the
    one line names standard output, exit 3."""
    started = initialised(repo)
    args = ["run", ".", "--mock-script", MOCK, "--json", "--output-dir", "out"]
    with _full(tmp_path / "results.json") as sink:
        done = _evalward(started.path, *args, limit=LIMIT, stdout=sink)
    said = done.stderr.decode()
    assert done.returncode == 3, said
    assert "Traceback" not in said and "Exception ignored" not in said, said
    assert sorted(p.name for p in (started.path / "out").iterdir()) == RUN_FILES
    (line,) = [line for line in said.splitlines() if "refused" in line]
    assert "refused a write (standard output)" in line and "EFBIG" in line, line


def test_a_history_that_cannot_be_written_costs_the_history_not_the_report(
    repo: GitRepo,
) -> None:
    """A file where .evalward/history should be: the run says that its history was not
    written and why, and writes its report and decides as ever."""
    started = initialised(repo)
    (started.path / ".evalward").mkdir()
    (started.path / ".evalward" / "history").write_text("not a folder\n")
    done = _evalward(
        started.path, "run", ".", "--mock-script", MOCK, "--output-dir", "out", limit=LIMIT
    )
    said = (done.stdout + done.stderr).decode()
    assert done.returncode == 0, said
    assert "Traceback" not in said and "bug" not in said, said
    assert sorted(p.name for p in (started.path / "out").iterdir()) == RUN_FILES
    (line,) = [line for line in said.splitlines() if "not written" in line]
    assert "assistant-eval.json" in line and "ENOTDIR" in line and "history" in line, line


GREETER = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: greeter }
spec:
  models: [openai/gpt-4.1-mini]
  system: Greet the user.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: greeter-eval }
spec:
  targetAgent: greeter
  fixtures: [greets]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: greets }
spec:
  targetAgent: greeter
  input: { type: prompt, payload: { prompt: "hello" } }
  assertions: [{ type: contains, value: "hi" }]
"""


def test_a_reply_the_response_cache_cannot_keep_is_used_and_the_loss_said(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """evalward.yaml's response cache where it cannot write (here a file stands where its
    folder goes, as a full or read-only disk refuses): the model was asked and paid, so the
    reply is used; what was not kept is said once, and the run goes on to its decision."""
    model.script("hello", text("hi there"))
    repo.commit(
        "a greeter, the response cache on",
        {
            "evalward.yaml": "cache: { mode: read-write, dir: .evalward/responses }\n",
            ".gitignore": ".evalward/\n",
            "agents.yaml": GREETER,
        },
    )
    (repo.path / ".evalward").mkdir()
    (repo.path / ".evalward" / "responses").write_text("not a folder\n")
    done = _evalward(repo.path, "run", ".", limit=LIMIT, env=provider_env(model))
    said = (done.stdout + done.stderr).decode()
    assert done.returncode == 0, said
    assert "Traceback" not in said and "bug" not in said, said
    assert "every affected Eval passes" in done.stdout.decode().splitlines()[1], said
    (line,) = [line for line in said.splitlines() if "response cache" in line]
    assert ".evalward/responses" in line and "did not keep" in line, line


SHOP = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: clerk }
spec:
  models: [openai/gpt-test]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: orders }
spec:
  targetAgent: clerk
  fixtures: [order-a1]
  playground: { name: shop, sqlite: { seed: shop/seed.sql } }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: order-a1 }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "Where is order A-1?" } }
  assertions: [{ type: contains, value: shipped }]
"""
BIG_SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, notes TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
INSERT INTO orders SELECT 'A-' || i, hex(zeroblob(500)) FROM n;
"""
"""A database of about 3 MB: past `LIMIT`, and well within what a playground may hold."""


def test_a_playground_the_disk_cannot_take_stops_the_run_as_the_machine_s_refusal(
    repo: GitRepo,
) -> None:
    """A seed that loads, into a database the disk cannot hold: not the seed's fault (nor
    "larger than a playground may hold"), nor the agent's (a run that failed, a blocked
    gate): the run stops on the machine's refusal, said in its decision, exit 3."""
    repo.commit("a shop", {"agents.yaml": SHOP, "shop/seed.sql": BIG_SEED})
    mock = "replies:\n  - match: { agent: clerk }\n    always: { content: shipped }\n"
    (repo.path / "mock.yaml").write_text(mock)
    args = ["run", ".", "--mock-script", "mock.yaml", "--output-dir", "out"]
    done = _evalward(repo.path, *args, limit=LIMIT)
    said = (done.stdout + done.stderr).decode()
    assert done.returncode == 3, said
    assert "Traceback" not in said and "bug" not in said, said
    heading = done.stdout.decode().splitlines()[1]
    assert "stopped by an error" in heading and "refused a write" in heading, heading
    assert "EFBIG" in heading and "seed" not in heading, heading


def test_a_file_where_the_result_cache_goes_is_refused_before_the_run(repo: GitRepo) -> None:
    started = initialised(repo)
    (started.path / ".evalward").write_text("not a folder\n")
    done = _evalward(started.path, "run", ".", "--mock-script", MOCK, limit=LIMIT)
    said = (done.stdout + done.stderr).decode()
    assert done.returncode == 2, said
    (line,) = done.stderr.decode().splitlines()
    assert ".evalward is a file" in line and "result cache" in line, line


def test_init_on_a_full_disk_writes_all_or_nothing_and_can_be_run_again(repo: GitRepo) -> None:
    """`evalward init` cut short by the disk leaves no half YAML (which would also make the
    next init refuse, the files being there): it takes back what it wrote, exit 3."""
    done = _evalward(repo.path, "init", ".", limit=1_000)
    said = (done.stdout + done.stderr).decode()
    assert done.returncode == 3, said
    assert "refused the write" in said and "EFBIG" in said and "init` again" in said, said
    assert [p.name for p in repo.path.rglob("*") if p.is_file() and ".git" not in p.parts] == []
    again = _evalward(repo.path, "init", ".", limit=LIMIT)
    assert again.returncode == 0, again.stderr.decode()


def test_promote_on_a_full_disk_leaves_the_fixtures_file_as_it_was(
    repo: GitRepo, tmp_path: Path
) -> None:
    """`evalward promote -o FILE` rewrites a file the user keeps: a write the disk cuts
    short must not leave it cut short. It is written beside and renamed, or not at all."""
    started = initialised(repo)
    fixtures = started.path / "evals" / "assistant.yaml"
    before = fixtures.read_bytes()
    trace = tmp_path / "trace.json"
    trace.write_text(
        json.dumps(
            [
                {"role": "user", "content": "Where is my order 12345?"},
                {"role": "assistant", "content": "Your order has shipped."},
            ]
        )
    )
    promote = ["promote", str(trace), "--format", "openai", "--agent", "assistant"]
    args = [*promote, "--contains", "shipped", "-o", "evals/assistant.yaml"]
    done = _evalward(started.path, *args, limit=len(before) // 2)
    said = done.stderr.decode()
    assert done.returncode == 3, said
    assert fixtures.read_bytes() == before
    assert [p.name for p in fixtures.parent.iterdir() if p.name.startswith(".")] == []
    (line,) = said.splitlines()
    assert "evals/assistant.yaml" in line and "EFBIG" in line and "as it was" in line, line


def test_import_on_a_full_disk_writes_all_or_nothing_and_can_be_run_again(repo: GitRepo) -> None:
    """`evalward import promptfoo` as `evalward init`: a half fixtures file would be left,
    and the next import would refuse, its files being there."""
    shutil.copytree(PROMPTFOO_CHAT, repo.path / "chat")
    command = ["import", "promptfoo", "chat/promptfooconfig.yaml"]
    done = _evalward(repo.path, *command, limit=1_000)
    said = done.stderr.decode()
    assert done.returncode == 3, said
    assert [p for p in (repo.path / "evals").rglob("*") if p.is_file()] == [], "no half file"
    assert "refused the write" in said and "EFBIG" in said and "import` again" in said, said
    again = _evalward(repo.path, *command, limit=LIMIT)
    assert again.returncode == 0, again.stderr.decode()
