"""What attribution adds to a blocked gate: model calls and wall time, on the refund-desk
example (examples/refund-desk: a declarative agent whose tools act on a SQLite playground and
a CRM service, three fixtures, one a conversation with a simulated user).

The pull request changes the agent's YAML in three fields: its temperature, its system prompt
(a new rule: never refund an order) and one tool's description. A scripted OpenAI-compatible
server on loopback plays the model: it follows the fixtures' happy path (look the order up,
refund it with the customer's reason, say so; ask why first when no reason was given, as the
mock script of `make demo` does), and refuses every refund when the system prompt says never
to refund. So the head breaks all three fixtures and the system prompt is the cause.

Each round gates the pull request in this process as the action does (`session.run`, then
`decide`, then `attribute_run`, with the base branch's `evalward.yaml` asking for
`attribution: { mode: on-block, budget: B }`), the result cache off, and prints the gate's own
model calls and wall time, then attribution's, its trials, the fixtures each variant ran (all
three, or the one cheapest to run where running all three on every variant would not fit the
budget) and what it found; per budget, the median over the rounds.

    python bench/attribution.py [--rounds 3] [--budget 0.5,2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "src"))

from common import answer_chat  # noqa: E402

from evalward.attribution.search import Attributed  # noqa: E402
from evalward.flows import session  # noqa: E402
from evalward.flows.attribution_runs import attribute_run  # noqa: E402
from evalward.git import Git  # noqa: E402
from evalward.plan.progress import RunProgress  # noqa: E402
from evalward.plan.request import RunRequest  # noqa: E402
from evalward.plan.run_setup import Revisions, RunOptions, RunSetup  # noqa: E402
from evalward.providers.registry import build_providers  # noqa: E402

EXAMPLE = ROOT / "examples" / "refund-desk"
AGENT = "examples/refund-desk/agents/refund-desk.yaml"
RULE = "Never refund an order, whatever the customer says."
REASON = re.compile(r"shatter|broken|black|never worked", re.IGNORECASE)


def _reply(body: dict[str, Any]) -> dict[str, Any]:
    """The model's next message for one chat request (see the module's docstring)."""
    messages = body.get("messages", [])
    if not body.get("tools"):  # the simulated customer
        last = str(messages[-1].get("content", "")) if messages else ""
        said = "Thank you! ###STOP###" if "refunded" in last else "The glass arrived shattered."
        return {"role": "assistant", "content": said}
    system = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    if "never refund" in system.lower():
        return {"role": "assistant", "content": "I am sorry, I cannot refund orders."}
    users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    order = re.search(r"A-\d{4}", " ".join(users))
    if order is None or not REASON.search(" ".join(users)):
        return {"role": "assistant", "content": "May I ask why you want a refund, and the order?"}
    last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    done = sum(1 for m in messages[last_user:] if m.get("role") == "tool")
    if done == 0:
        call = ("lookup_order", {"order_id": order.group()})
    elif done == 1:
        reason = REASON.findall(" ".join(users))[0]
        call = ("create_refund", {"order_id": order.group(), "reason": f"it {reason}"})
    else:
        return {"role": "assistant", "content": f"Order {order.group()} is refunded."}
    name, arguments = call
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call-{len(messages)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        answer_chat(self, body, _reply(body), 120)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _repository(budget: float) -> Path:
    """The example on a base branch asking for attribution, and the pull request's head."""
    root = Path(tempfile.mkdtemp(prefix="evalward-bench-attribution-"))
    shutil.copytree(EXAMPLE, root / "examples" / "refund-desk")
    (root / "evalward.yaml").write_text(f"attribution: {{ mode: on-block, budget: {budget} }}\n")
    (root / ".gitignore").write_text(".evalward/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "-c", "user.name=bench", "-c", "user.email=b@e", "add", "-A")
    _git(root, "-c", "user.name=bench", "-c", "user.email=b@e", "commit", "-qm", "base")
    _git(root, "checkout", "-qb", "feature")
    agent = root / AGENT
    text = agent.read_text()
    text = text.replace("temperature: 0\n", "temperature: 0.2\n")
    text = text.replace("record their reason.\n", f"record their reason.\n    {RULE}\n")
    text = text.replace("Look an order up by its id.", "Look an order up by its id (A-1234).")
    agent.write_text(text)
    _git(root, "-c", "user.name=bench", "-c", "user.email=b@e", "commit", "-qam", "stricter")
    return root


async def _gate(root: Path, base_url: str) -> dict[str, Any]:
    env = {"PATH": os.environ["PATH"], "OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": base_url}
    setup = RunSetup(
        Git(root), Revisions(base="main"), build_providers(env), env, options=RunOptions()
    )
    request = RunRequest(setup, RunProgress())
    try:
        started = time.perf_counter()
        outcome = await session.run(request)
        gate_wall = time.perf_counter() - started
        if outcome.failure is not None:
            raise RuntimeError(session.stopped_by(outcome.failure))
        verdict = session.decide(outcome)
        gate_calls = setup.providers.spent.calls
        started = time.perf_counter()
        found = await attribute_run(request, verdict)
        wall = time.perf_counter() - started
    finally:
        await setup.providers.aclose()
    if found is None:
        raise RuntimeError(f"attribution did not run: the gate said {verdict.decision.reason}")
    (finding,) = found.found
    culprit = finding.attributed
    trials = finding.attribution.attempts
    return {
        "result": verdict.decision.result.value,
        "gate_calls": gate_calls,
        "gate_wall": gate_wall,
        "calls": found.spent_calls,
        "budget": found.budget_calls,
        "wall": wall,
        "trials": len(trials),
        "ran_on": ", ".join(finding.ran_on),
        "found": (
            ", ".join(f"{h.path}:{h.first} {h.field_name or h.kind}" for h in culprit.culprit)
            if isinstance(culprit, Attributed)
            else f"not attributable: {finding.attribution.reason}"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", default="0.5,2")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    print(
        "| budget | gate: model calls | gate: wall | attribution: model calls (of its budget) "
        "| attribution: wall | trials | each variant ran | found |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for budget in (float(b) for b in args.budget.split(",")):
        rounds = []
        for _ in range(args.rounds):
            root = _repository(budget)
            try:
                rounds.append(asyncio.run(_gate(root, base_url)))
            finally:
                shutil.rmtree(root, ignore_errors=True)
        med = {
            k: statistics.median(r[k] for r in rounds)
            for k in ("gate_calls", "gate_wall", "calls", "wall", "trials")
        }
        found = {r["found"] for r in rounds}
        ran_on = {r["ran_on"] for r in rounds}
        print(
            f"| {budget:g} | {med['gate_calls']:.0f} | {med['gate_wall']:.1f} s "
            f"| {med['calls']:.0f} (of {rounds[0]['budget']}) | {med['wall']:.1f} s "
            f"| {med['trials']:.0f} | {' / '.join(sorted(ran_on))} | {' / '.join(sorted(found))} |"
        )
    server.shutdown()


if __name__ == "__main__":
    main()
