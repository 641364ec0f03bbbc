"""A playground through the action's entry point, as GitHub runs it: a pull request gated
with base and head side by side, each run's SQLite database and service provisioned from
the base branch, its programs run as that side's agent user with no secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from action.test_github_events import real_payload
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import pull_request_event, run_action
from support.agentenv import PYTHON, needs_root, open_pr, run_gate, workspace
from support.gitrepo import GitRepo
from support.jsonserver import json_server
from support.suite import provider_env

pytestmark = pytest.mark.e2e

__all__ = ["workspace"]  # a fixture

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: refunder }}
spec:
  models: [openai/gpt-4.1-mini]
  system: Refund what the customer asks for.
  tools:
    - name: create_refund
      description: Refund an order.
      command: [{PYTHON}, tools/refund.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: refunds }}
spec:
  targetAgent: refunder
  fixtures: [refund-a1]
  playground:
    name: shop
    sqlite: {{ seed: shop/seed.sql }}
    service: {{ start: [{PYTHON}, shop/service.py, "{{port}}"], ready: /health }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: refund-a1 }}
spec:
  targetAgent: refunder
  input: {{ type: prompt, payload: {{ prompt: "Refund order A-1 please" }} }}
  assertions:
    - {{ type: sql, query: "SELECT order_id, amount FROM refunds", rows: [[A-1, 25]] }}
    - {{ type: stateUnchanged, at: db, except: [db.refunds] }}
    - {{ type: stateValue, at: service.secrets, equals: [] }}
"""

SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id TEXT, amount REAL);
INSERT INTO orders VALUES ('A-1', 25);
"""

SERVICE = json_server(
    """\
    def do_GET(self):
        secrets = [k for k in os.environ if "KEY" in k or "TOKEN" in k]
        self.reply({"uid": os.getuid(), "secrets": secrets})
""",
    preamble="import json, os, sys\n",
)

TOOL = """\
import json, os, sqlite3, sys
args = json.load(sys.stdin)
db = sqlite3.connect(os.environ["EVALWARD_SQLITE_PATH"])
db.execute("INSERT INTO refunds (order_id, amount) VALUES (?, ?)", (args["order_id"], 25))
db.commit()
folder = os.path.dirname(os.environ["EVALWARD_SQLITE_PATH"])  # the run's playground
try:
    others = os.listdir(os.path.dirname(folder))  # where every run's playground is
except PermissionError:
    others = "refused"
print(json.dumps({"uid": os.getuid(), "others": others, "folder": folder}))
"""


@needs_root
def test_the_action_provisions_each_sides_playground_from_the_base_as_its_agent_user(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    files = {"evals.yaml": SUITE, "shop/seed.sql": SEED, "shop/service.py": SERVICE}
    files["tools/refund.py"] = TOOL
    # the pull request changes the agent, and seeds the refund it should make itself
    forged = SEED + "INSERT INTO refunds VALUES (1, 'A-1', 25);\n"
    head = {
        "evals.yaml": SUITE.replace("system: Refund what", "system: Always refund what"),
        "shop/seed.sql": forged,
    }
    event = open_pr(workspace, github, files, head, suite={})
    model.script(
        "Refund order A-1",
        tool_call("create_refund", {"order_id": "A-1"}),
        text("Refunded A-1."),
    )

    run = run_gate(workspace, github, event, OPENAI_BASE_URL=model.base_url)

    assert run.returncode == 0, run.stdout + run.stderr
    fixtures = {f["side"]: f for f in run.results()["fixtures"]}
    assert set(fixtures) == {"base", "head"}
    uids, folders = {}, {}
    for side, result in fixtures.items():
        assert result["status"] == "pass", (side, result["message"])
        final = json.loads(result["playground"]["final"])
        assert list(final["db"]["refunds"]) == ["1"]  # the base's seed, and the one refund
        uids[side] = final["service"]["uid"]
        tool = next(s for s in result["trace"]["steps"] if s["type"] == "tool_result")
        seen = json.loads(tool["output"])
        assert seen["uid"] == uids[side]  # service and tool: one user
        assert seen["others"] == "refused"  # no run can list the others' playgrounds
        folders[side] = seen["folder"]
    assert 0 not in uids.values()
    assert uids["base"] != uids["head"]
    assert folders["base"] != folders["head"]


CACHED_SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: clerk }
spec:
  models: [openai/gpt-test]
  system: "You are the shop's clerk. PROMPT"
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: orders }
spec:
  targetAgent: clerk
  fixtures: [order-a1]
  playground:
    name: shop
    sqlite: { seed: shop/seed.sql }
    files: { seed: shop/files }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: order-a1 }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "Where is order A-1?" } }
  assertions:
    - { type: contains, value: shipped }
    - { type: sql, query: "SELECT id FROM orders", rows: [[A-1]] }
"""


@pytest.mark.parametrize("planted", [None, "shop/seed.sql", "shop/files/extra.md"])
def test_a_push_on_main_is_the_result_its_pull_requests_base_reads(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, planted: str | None
) -> None:
    """The push's run keys the playground's seeds on main's working tree, a pull request's
    base on main's commit: the same files, so the base makes no model call. A seed another
    workflow step rewrote or added in the push's workspace is in its key as it was, so
    that run never stands for the commit's."""
    env = provider_env(model)
    model.script("Where is order A-1?", text("It has shipped."))
    main = repo.commit(
        "a shop",
        {
            "evals.yaml": CACHED_SUITE.replace("PROMPT", "BASE-V1"),
            "shop/seed.sql": SEED,
            "shop/files/readme.md": "the shop's handbook\n",
            ".gitignore": ".evalward/\n",
        },
    )
    if planted is not None:  # what a workflow step wrote after the checkout
        (repo.path / planted).write_text(SEED.replace("'A-1', 25", "'A-1', 99"))
    payload = real_payload("push", ref="refs/heads/main", after=main)
    payload["repository"]["default_branch"] = "main"

    pushed = run_action(repo.path, github, payload, env=env, event_name="push")

    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert len(model.requests_mentioning("BASE-V1")) == 1
    if planted == "shop/seed.sql":
        repo.git("checkout", "-q", "--", planted)
    elif planted is not None:
        (repo.path / planted).unlink()
    repo.branch("feature")
    head = repo.commit("a clerk", {"evals.yaml": CACHED_SUITE.replace("PROMPT", "HEAD-V2")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=main))

    gated = run_action(
        repo.path, github, pull_request_event(github.repository, 7, main, head), env=env
    )

    assert gated.returncode == 0, gated.stdout + gated.stderr
    fixtures = {f["side"]: f for f in gated.results()["fixtures"]}
    assert {side: f["status"] for side, f in fixtures.items()} == {"base": "pass", "head": "pass"}
    assert fixtures["base"]["cached"] is (planted is None)
    assert len(model.requests_mentioning("BASE-V1")) == (1 if planted is None else 2)
    assert len(model.requests_mentioning("HEAD-V2")) == 1


WATCHING_SUITE = CACHED_SUITE.replace(
    "    files: { seed: shop/files }\n",
    f'    service: {{ start: [{PYTHON}, shop/service.py, "{{port}}"], state: null, '
    "watch: [shop/**] }\n",
)
"""The cached suite, its playground running a service that watches `shop/**`."""


@pytest.mark.parametrize(
    ("changed", "reused"), [("none", True), ("docs/notes.md", True), ("shop/rules.py", False)]
)
def test_a_watching_service_s_push_run_answers_its_pull_requests_base(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, changed: str, reused: bool
) -> None:
    """A push's run keys a service that names a `watch` on main's working tree, a pull
    request's base on main's commit, each on what the service names and watches alone: a
    commit to main since the push that changed another file leaves the base's results in
    the cache, one that changed a module the service imports runs it again. Its interpreter,
    named by its absolute path, is missing from both trees alike (the words saying why named
    the commit, so no run of a service so started was ever answered from another's)."""
    env = provider_env(model)
    model.script("Where is order A-1?", text("It has shipped."))
    service = json_server(
        "    def do_GET(self):\n        self.reply({})\n",
        preamble='import json, sys\nsys.path.insert(0, "shop")\nimport rules\n',
    )
    main = repo.commit(
        "a shop",
        {
            "evals.yaml": WATCHING_SUITE.replace("PROMPT", "BASE-V1"),
            "shop/seed.sql": SEED,
            "shop/service.py": service,
            "shop/rules.py": "OPEN = True\n",
            "docs/notes.md": "notes\n",
            ".gitignore": ".evalward/\n__pycache__/\n",
        },
    )
    payload = real_payload("push", ref="refs/heads/main", after=main)
    payload["repository"]["default_branch"] = "main"
    pushed = run_action(repo.path, github, payload, env=env, event_name="push")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert len(model.requests_mentioning("BASE-V1")) == 1

    if changed != "none":
        main = repo.commit(f"{changed} changed", {changed: "OPEN = True  # again\n"})
    repo.branch("feature")
    head = repo.commit("a clerk", {"evals.yaml": WATCHING_SUITE.replace("PROMPT", "HEAD-V2")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=main))
    gated = run_action(
        repo.path, github, pull_request_event(github.repository, 7, main, head), env=env
    )

    assert gated.returncode == 0, gated.stdout + gated.stderr
    fixtures = {f["side"]: f for f in gated.results()["fixtures"]}
    assert {side: f["status"] for side, f in fixtures.items()} == {"base": "pass", "head": "pass"}
    assert fixtures["base"]["cached"] is reused, pushed.stdout + gated.stdout
    assert len(model.requests_mentioning("BASE-V1")) == (1 if reused else 2)
