"""Playgrounds and state criteria through `evalward run`, on real repositories: a
declarative agent whose command tool writes to its SQLite playground, base beside head."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.model_server import ScriptedModelServer, text, tool_call
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.e2e

SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL, status TEXT);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id TEXT, amount REAL, reason TEXT);
INSERT INTO orders VALUES ('A-1', 25.0, 'delivered'), ('B-2', 90.0, 'delivered');
"""

REFUND_TOOL = """\
import json, os, sqlite3, sys
args = json.load(sys.stdin)
url = os.environ["DATABASE_URL"]
assert url == "sqlite:///" + os.environ["EVALWARD_SQLITE_PATH"], url
db = sqlite3.connect(os.environ["EVALWARD_SQLITE_PATH"])
db.execute("INSERT INTO refunds (order_id, amount, reason) VALUES (?, ?, ?)",
           (args["order_id"], args["amount"] * FACTOR, args["reason"]))
db.execute("UPDATE orders SET status = 'refunded' WHERE id = ?", (args["order_id"],))
TOUCH_OTHERS
db.commit()
print(json.dumps({"refunded": args["order_id"], "db": os.environ["EVALWARD_SQLITE_PATH"]}))
"""

RESOURCES = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: refunder }
spec:
  models: [openai/gpt-test]
  tools:
    - name: create_refund
      description: Refund an order.
      command: [python3, tools/refund.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: refunds }
spec:
  targetAgent: refunder
  fixtures: [refund-a1]
  playground:
    name: shop
    sqlite: { seed: shop/seed.sql }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund-a1 }
spec:
  targetAgent: refunder
  input: { type: prompt, payload: { prompt: "Refund order A-1, it arrived broken." } }
  assertions:
    - type: sql
      query: SELECT order_id, amount, reason FROM refunds
      rows: [["A-1", 25, "damaged"]]
    - { type: stateValue, at: db.orders.A-1.status, equals: refunded }
    - { type: stateUnchanged, except: [db.refunds, db.orders.A-1.status] }
"""

MOCK = """\
replies:
  - match: { agent: refunder, fixture: refund-a1 }
    turns:
      - toolCalls:
          - name: create_refund
            arguments: { order_id: A-1, amount: 25, reason: damaged }
      - content: "Refunded order A-1."
"""


def _tool(factor: str = "1", touch: str = "") -> str:
    return REFUND_TOOL.replace("FACTOR", factor).replace("TOUCH_OTHERS", touch)


def _repo(repo: GitRepo, tmp_path: Path) -> Path:
    repo.commit(
        "shop",
        {
            "agents.yaml": RESOURCES,
            "shop/seed.sql": SEED,
            "tools/refund.py": _tool(),
        },
    )
    mock = tmp_path / "mock.yaml"
    mock.write_text(MOCK)
    return mock


def _run(repo: GitRepo, mock: Path, out: Path, *more: str) -> tuple[int, str, dict[str, object]]:
    done = evalward(
        "run",
        str(repo.path),
        "--mock-script",
        str(mock),
        "--no-cache",
        "--output-dir",
        str(out),
        *more,
        cwd=repo.path,
    )
    assert "Traceback" not in done.stderr, done.stderr
    results = json.loads((out / "results.json").read_text())
    return done.returncode, done.stdout + done.stderr, results


def _fixture(results: dict[str, object], side: str) -> dict[str, object]:
    runs = [f for f in results["fixtures"] if f["side"] == side]  # type: ignore[index, union-attr]
    assert len(runs) == 1, runs
    return runs[0]  # type: ignore[no-any-return]


def test_a_command_tool_acts_on_its_sqlite_playground_and_criteria_read_the_end_state(
    repo: GitRepo, tmp_path: Path
) -> None:
    mock = _repo(repo, tmp_path)
    code, said, results = _run(repo, mock, tmp_path / "out")
    assert code == 0, said
    run = _fixture(results, "head")
    assert run["status"] == "pass", run
    assert [a["status"] for a in run["assertions"]] == ["pass", "pass", "pass"]  # type: ignore[union-attr]
    record = run["playground"]
    assert record["name"] == "shop"  # type: ignore[index]
    assert '"reason": "damaged"' in record["final"]  # type: ignore[index]
    changes = record["changes"]  # type: ignore[index]
    # each changed record under the line naming it, indented as in the whole state
    assert changes[:3] == [  # type: ignore[index]
        ["@", "@@ db.orders.A-1"],
        ["-", '    "status": "delivered"'],
        ["+", '    "status": "refunded"'],
    ]
    assert ["@", "@@ db.refunds"] in changes
    assert ["+", '   "1": {'] in changes
    # the playground was torn down: the database the tool wrote is gone
    step = next(s for s in run["trace"]["steps"] if s["type"] == "tool_result")  # type: ignore[index]
    assert not Path(json.loads(step["output"])["db"]).parent.exists()  # the run's folder


def test_each_rep_gets_a_fresh_copy_of_the_seed_and_the_job_leaves_no_template_behind(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The seed is loaded once per job into a template that each run's database copies: no
    rep sees another's refund, each starts from the seed's state, and the template goes with
    the job."""
    mock = _repo(repo, tmp_path)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    out = tmp_path / "out"
    done = evalward(
        "run",
        str(repo.path),
        "--mock-script",
        str(mock),
        "--no-cache",
        "--reps",
        "3",
        "--output-dir",
        str(out),
        cwd=repo.path,
        TMPDIR=str(temporary),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    runs = json.loads((out / "results.json").read_text())["fixtures"]
    assert [r["status"] for r in runs] == ["pass"] * 3, runs
    databases = set()
    for run in runs:
        assert ["@", "@@ db.refunds"] in run["playground"]["changes"]
        step = next(s for s in run["trace"]["steps"] if s["type"] == "tool_result")
        databases.add(json.loads(step["output"])["db"])
    assert len(databases) == 3
    assert list(temporary.iterdir()) == []


def test_a_head_that_refunds_wrongly_fails_with_what_was_expected_and_what_the_state_held(
    repo: GitRepo, tmp_path: Path
) -> None:
    mock = _repo(repo, tmp_path)
    repo.branch("feature")
    touch = "db.execute(\"UPDATE orders SET status = 'lost' WHERE id = 'B-2'\")"
    repo.commit("double", {"tools/refund.py": _tool("2", touch)})
    code, said, results = _run(repo, mock, tmp_path / "out", "--base", "main")
    assert code == 1, said
    assert _fixture(results, "base")["status"] == "pass"
    head = _fixture(results, "head")
    assert head["status"] == "fail"
    messages = [a["message"] for a in head["assertions"]]  # type: ignore[union-attr]
    assert (
        'expected rows [["A-1", 25, "damaged"]]; the query returned [["A-1", 50.0, "damaged"]]'
        in (messages[0])
    )
    assert "changed: db.orders.B-2.status" in messages[2]
    assert '"delivered" → "lost"' in messages[2]
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "db.orders.B-2.status" in comment


def test_a_pull_request_cannot_change_the_seed_its_agent_is_judged_against(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The head's seed already holds the refund (and its tool does nothing): under
    `gate-config: base` the playground is made from the base branch's seed, so it fails."""
    mock = _repo(repo, tmp_path)
    repo.branch("feature")
    forged = SEED.replace("'A-1', 25.0, 'delivered'", "'A-1', 25.0, 'refunded'")
    forged += "INSERT INTO refunds VALUES (1, 'A-1', 25.0, 'damaged');\n"
    idle = "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'db': '/nonexistent/x'}))\n"
    repo.commit("forge", {"shop/seed.sql": forged, "tools/refund.py": idle})
    code, said, results = _run(repo, mock, tmp_path / "out", "--base", "main")
    assert code == 1, said
    head = _fixture(results, "head")
    assert head["status"] == "fail", head
    assert "the query returned 0 rows: []" in head["assertions"][0]["message"]  # type: ignore[index]
    assert '"refunds": {}' in head["playground"]["final"]  # type: ignore[index]


def test_a_missing_seed_or_a_criterion_with_no_playground_is_refused_before_any_run(
    repo: GitRepo, tmp_path: Path
) -> None:
    mock = _repo(repo, tmp_path)
    broken = RESOURCES.replace("seed: shop/seed.sql", "seed: shop/missing.sql").replace(
        "fixtures: [refund-a1]", "fixtures: [refund-a1, no-world]"
    )
    broken += """\
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: worldless }
spec:
  targetAgent: refunder
  fixtures: [no-world]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: no-world }
spec:
  targetAgent: refunder
  input: { type: prompt, payload: { prompt: "Refund order A-1." } }
  assertions:
    - { type: sql, query: SELECT 1, count: 1 }
"""
    repo.commit("broken", {"agents.yaml": broken})
    for command in (["validate"], ["run", ".", "--mock-script", str(mock)]):
        done = evalward(*command, cwd=repo.path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        assert (
            "agents.yaml:19:15: spec.playground.sqlite.seed: playground 'shop': the seed "
            "'shop/missing.sql' does not exist" in done.stderr
        )
        assert (
            "a `sql` assertion reads the state of a playground, and neither fixture 'no-world' "
            "nor Eval 'worldless' names one" in done.stderr
        )


@pytest.mark.parametrize("uncommitted_seed", [False, True])
def test_a_run_on_main_is_the_base_of_the_next_comparison_with_no_model_call(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path, uncommitted_seed: bool
) -> None:
    """`evalward run` on main keys the playground's seed as its working tree holds it, and
    `--base main` keys main's commit: the same content, the same key, so the base side reads
    the result and calls no model. A seed the working tree changed without committing is
    in its key as it was: that run never stands for the commit's."""
    repo.commit(
        "shop", {"agents.yaml": RESOURCES, "shop/seed.sql": SEED, "tools/refund.py": _tool()}
    )
    repo.commit("ignore the cache", {".gitignore": ".evalward/\n"})
    model.script(
        "Refund order A-1",
        tool_call("create_refund", {"order_id": "A-1", "amount": 25, "reason": "damaged"}),
        text("Refunded order A-1."),
    )
    if uncommitted_seed:
        (repo.path / "shop" / "seed.sql").write_text(SEED.replace("25.0", "26.0"))
    on_main = evalward("run", ".", "--no-history", cwd=repo.path, **provider_env(model))
    assert on_main.returncode == 0, on_main.stdout + on_main.stderr
    assert len(model.requests) == 2
    repo.git("checkout", "-q", "--", "shop/seed.sql")
    repo.branch("feature")
    repo.commit("twice the refund", {"tools/refund.py": _tool("2")})

    out = tmp_path / "out"
    compared = evalward(
        "run", ".", "--base", "main", "--no-history", "--output-dir", str(out),
        cwd=repo.path, **provider_env(model),
    )  # fmt: skip

    assert compared.returncode == 1, compared.stdout + compared.stderr
    results = json.loads((out / "results.json").read_text())
    base, head = _fixture(results, "base"), _fixture(results, "head")
    assert (base["status"], head["status"]) == ("pass", "fail")
    assert base["cached"] is not uncommitted_seed and head["cached"] is False
    # the head's two calls, and the base's only when main's run saw another seed
    assert len(model.requests) == 2 + 2 + (2 if uncommitted_seed else 0)
