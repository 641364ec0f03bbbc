"""A framework agent (the OpenAI Agents SDK) whose own tools call a service playground,
through `evalward run`: base beside head, the state read from the service's endpoint, and a
rerun from the result cache showing the recorded state until the seed changes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "refund-desk"

AGENT = """\
import json, os, sys, urllib.request

from agents import Agent, Runner, function_tool


@function_tool
def create_refund(order_id: str, amount: float, reason: str) -> str:
    \"\"\"Refund an order in the CRM.\"\"\"
    body = json.dumps({"order_id": order_id, "amount": amount, "reason": reason}).encode()
    request = urllib.request.Request(
        os.environ["EVALWARD_SERVICE_URL"] + "/refunds",
        data=body,
        headers={"content-type": "application/json"},
    )
    return urllib.request.urlopen(request).read().decode()


agent = Agent(
    name="Desk",
    instructions="INSTRUCTIONS",
    model="gpt-4.1-mini",
    tools=[create_refund],
)

if __name__ == "__main__":
    print(Runner.run_sync(agent, sys.argv[1]).final_output)
"""

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: desk }}
spec:
  runtime:
    command: {{ run: [{python}, agent.py, "{{input}}"] }}
  watch: [agent.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: desk-eval }}
spec:
  targetAgent: desk
  fixtures: [refund-damaged]
  playground:
    name: crm
    service:
      start: [python3, crm/server.py, --port, "{{port}}", --seed, "{{seed}}"]
      seed: crm/seed.json
      ready: /health
      state: /state
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: refund-damaged }}
spec:
  targetAgent: desk
  input: {{ type: prompt, payload: {{ prompt: "Order A-1042 arrived broken, refund it" }} }}
  assertions:
    - {{ type: stateValue, at: service.refunds.0, contains: {{ order_id: A-1042, amount: 25 }} }}
    - {{ type: stateValue, at: service.orders.A-1042.status, equals: refund_requested }}
    - {{ type: stateUnchanged, except: [service.refunds, service.orders.A-1042.status] }}
    - type: stateSnapshot
      at: service.orders
      snapshot: crm/expected-orders.json
      except: [service.orders.A-1042.status]
"""

MOCK = """\
replies:
  - match: { agent: desk }
    turns:
      - toolCalls:
          - name: create_refund
            arguments: { order_id: A-1042, amount: 25, reason: damaged }
      - content: Refund R-1 is on its way.
"""


def desk_repo(repo: GitRepo) -> None:
    seed = json.loads((EXAMPLE / "crm" / "seed.json").read_text())
    repo.commit(
        "desk",
        {
            "evals.yaml": SUITE.format(python=sys.executable),
            "agent.py": AGENT.replace("INSTRUCTIONS", "Refund damaged orders."),
            "crm/server.py": (EXAMPLE / "crm" / "server.py").read_text(),
            "crm/seed.json": json.dumps(seed),
            "crm/expected-orders.json": json.dumps(seed["orders"]),
            "mock.yaml": MOCK,
        },
    )


def run(repo: GitRepo, out: Path, *more: str) -> tuple[int, str, list[dict[str, Any]]]:
    done = evalward(
        "run", ".", "--mock-script", "mock.yaml", "--output-dir", str(out), *more, cwd=repo.path
    )
    assert "Traceback" not in done.stderr, done.stderr
    fixtures = json.loads((out / "results.json").read_text())["fixtures"]
    return done.returncode, done.stdout + done.stderr, fixtures


def test_a_framework_agents_own_tools_act_on_its_service_playground_base_beside_head(
    repo: GitRepo, tmp_path: Path
) -> None:
    desk_repo(repo)
    repo.branch("feature")
    repo.commit("tuned", {"agent.py": AGENT.replace("INSTRUCTIONS", "Refund what is broken.")})
    code, said, fixtures = run(repo, tmp_path / "out", "--base", "main", "--no-cache")
    assert code == 0, said
    assert {f["side"]: f["status"] for f in fixtures} == {"base": "pass", "head": "pass"}
    for result in fixtures:
        assert [a["status"] for a in result["assertions"]] == ["pass"] * 4
        final = json.loads(result["playground"]["final"])
        assert final["service"]["refunds"] == [
            {"amount": 25, "id": "R-1", "order_id": "A-1042", "reason": "damaged"}
        ]
    report = (tmp_path / "out" / "report.html").read_text()
    # each side's state diff, initial -> final, in the fixture's bundle
    removed = '["-","    \\"status\\": \\"delivered\\""]'
    added = '["+","    \\"status\\": \\"refund_requested\\""]'
    assert report.count(removed) == report.count(added) == 2


@pytest.mark.usefixtures("head_strays_read")
def test_a_rerun_replays_the_recorded_state_until_the_playgrounds_seed_changes(
    repo: GitRepo, tmp_path: Path
) -> None:
    desk_repo(repo)
    first = run(repo, tmp_path / "first")[2]
    assert [f["cached"] for f in first] == [False]

    again = run(repo, tmp_path / "again")[2]

    assert [f["cached"] for f in again] == [True]
    assert again[0]["playground"] == first[0]["playground"]
    assert "refund_requested" in again[0]["playground"]["final"]
    seed = json.loads((repo.path / "crm" / "seed.json").read_text())
    seed["orders"]["A-1043"]["amount"] = 91.0
    repo.commit("reseed", {"crm/seed.json": json.dumps(seed)})

    reseeded = run(repo, tmp_path / "reseeded")[2]

    assert [f["cached"] for f in reseeded] == [False]
    assert reseeded[0]["status"] == "fail"  # the snapshot file still says 90
    assert "expected 90" in reseeded[0]["assertions"][3]["message"]
