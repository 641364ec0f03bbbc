"""A refund clerk's suite against a playground service: an agent (`clerk.py`) that asks the
service for a refund in one fixture and changes nothing in the others, and the three
fixtures' state criteria (a refund made, nothing changed, a status the service never
sets). `suite(start)` gives the Agent and its Eval, the service started by `start`."""

from __future__ import annotations

import json
import sys

FIXTURES = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: go } }
  assertions:
    - { type: stateValue, at: service.refunds.0, contains: { order_id: A-1 } }
    - { type: stateValue, at: service.orders.A-1.status, equals: refund_requested }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: leave }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: go } }
  assertions:
    - { type: stateUnchanged }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: wrong }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: go } }
  assertions:
    - { type: stateValue, at: service.orders.A-1.status, equals: refunded }
"""
CLERK = """\
import json, os, sys, urllib.request

if json.load(sys.stdin)["fixture"] == "refund":
    body = json.dumps({"order_id": "A-1", "amount": 25}).encode()
    url = os.environ["EVALWARD_SERVICE_URL"] + "/refunds"
    urllib.request.urlopen(urllib.request.Request(url, body), timeout=10).read()
print(json.dumps({"type": "final", "content": "done"}))
"""
VERDICTS = {
    "refund": ("pass", ["pass", "pass"]),
    "leave": ("pass", ["pass"]),
    "wrong": ("fail", ["fail"]),
}
"""Each fixture's status and its criteria's, whatever the service's state answers."""


def suite(start: list[str]) -> str:
    """The clerk, its Eval with the service `start` runs (`{port}` replaced), and the
    fixtures, as one YAML file."""
    return (
        f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  runtime:
    command: {{ run: {json.dumps([sys.executable, "clerk.py"])} }}
  watch: [clerk.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: clerk-eval }}
spec:
  targetAgent: clerk
  fixtures: [refund, leave, wrong]
  execution: {{ parallel: 1 }}
  playground:
    name: crm
    service:
      start: {json.dumps(start)}
      ready: /health
      state: /state
"""
        + FIXTURES
    )
