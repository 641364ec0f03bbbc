"""P9: what sides taking turns costs a gate, through the action (as root: the user switch
happens, as in the image).

A pull request changes the system prompt of a refund desk (examples/refund-desk, grown to
--fixtures fixtures): a declarative agent whose command tool records a refund in the run's
playground, a SQLite database and the fake CRM service, both provisioned for every run. The
benchmark model server answers each of a run's two model calls at --latency-ms. Two gates:

- **cold**: nothing cached (`cache: off`); every run of both sides runs. Before, the sides
  ran side by side; after, the base's runs (and its turn's sweep) come first, then the head's.
- **cached base**: the base's results are in the result cache (a first gate of the same base
  put them there), the head's are not (each timed gate is of a new head commit): only the
  head's runs run, and the base's turn only reads the cache.

With --before SRC (the `src` folder of another checkout), gates alternate between that
evalward and this one, and both are printed: the wall time of the action, median of --runs.

    python bench/p9_sides.py --before /tmp/evalward-main/src [--fixtures 40] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import ROOT, compile_evalward, model_server

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import prepare, pull_request_event
from support.agentenv import RUNNER_UID
from support.gitrepo import GitRepo

EXAMPLE = ROOT / "examples" / "refund-desk"

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: refund-desk }
spec:
  models: [openai/gpt-4.1-mini]
  system: PROMPT
  tools:
    - name: create_refund
      description: Refund a delivered order in full, with the customer's reason.
      command: [python3, tools/refund.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: refund-desk-eval }
spec:
  targetAgent: refund-desk
  fixtureSelector: { matchLabels: { agent: refund-desk } }
  playground:
    name: shop-and-crm
    sqlite: { seed: shop/seed.sql }
    service:
      start: [python3, crm/server.py, --port, "{port}", --seed, "{seed}"]
      seed: crm/seed.json
      ready: /health
      state: /state
"""

FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: refund-{index}, labels: {{ agent: refund-desk }} }}
spec:
  targetAgent: refund-desk
  input: {{ type: prompt, payload: {{ prompt: "Order A-1042 arrived broken ({index})" }} }}
  assertions:
    - {{ type: contains, value: "A-1042" }}
    - {{ type: sql, query: "SELECT order_id FROM refunds", rows: [[A-1042]] }}
"""

TOOL = """\
import json, os, sqlite3, sys, urllib.request
sys.stdin.read()
db = sqlite3.connect(os.environ["DATABASE_URL"].removeprefix("sqlite:///"))
db.execute("INSERT INTO refunds (order_id, amount, reason) VALUES ('A-1042', 25, 'broken')")
db.commit()
body = json.dumps({"order_id": "A-1042", "amount": 25}).encode()
urllib.request.urlopen(os.environ["EVALWARD_SERVICE_URL"] + "/refunds", body).read()
print(json.dumps({"refunded": "A-1042"}))
"""


def suite(prompt: str, fixtures: int) -> dict[str, str]:
    return {
        "evals.yaml": AGENT.replace("PROMPT", prompt)
        + "".join(FIXTURE.format(index=i) for i in range(fixtures)),
        "tools/refund.py": TOOL,
        "shop/seed.sql": (EXAMPLE / "shop" / "seed.sql").read_text(),
        "crm/server.py": (EXAMPLE / "crm" / "server.py").read_text(),
        "crm/seed.json": (EXAMPLE / "crm" / "seed.json").read_text(),
        ".gitignore": ".evalward/\n",
    }


class Gates:
    """One workspace and its pull requests, gated by one evalward (`source`)."""

    start = (
        "import runpy, sys; sys.path.insert(0, sys.argv.pop()); "
        "runpy.run_module('evalward', run_name='__main__', alter_sys=True)"
    )
    """The action's entry point, `python -I -c start SRC`: the evalward of SRC."""

    def __init__(self, root: Path, source: Path, fixtures: int, base_url: str) -> None:
        self.workspace = root / "workspace"
        self.github = FakeGitHub()
        self.source = source
        self.fixtures = fixtures
        self.base_url = base_url
        self.repo = GitRepo(self.workspace)
        self.base = self.repo.commit("the base", self.files(0))
        self.repo.branch("feature")
        self.heads = 0
        self.head = ""
        """The last gate's head commit."""
        self.said = ""
        """The last gate's log."""

    def gate(self, cache: str) -> tuple[float, float]:
        """A gate of a new head commit; its wall time and the CPU time of the action and of
        the programs it ran (user + sys)."""
        self.heads += 1
        self._own(0)  # git works in a repository of its own user
        head = self.repo.commit("a new head", self.files(self.heads))
        self.github.add_pull(FakePull(number=self.heads, head_sha=head, base_sha=self.base))
        self._own(RUNNER_UID)  # the runner's user owns the checkout
        self.head = head
        return self.rerun(cache)

    def rerun(self, cache: str) -> tuple[float, float]:
        """The last gate's pull request gated again, its head unchanged (a label added, a
        workflow rerun); its wall time and CPU time as `gate`'s."""
        event = pull_request_event(self.github.repository, self.heads, self.base, self.head)
        launch = prepare(
            self.workspace,
            self.github,
            event,
            inputs={"agent-user": "auto", "cache": cache, "output-dir": ".evalward/out"},
            env={"OPENAI_API_KEY": "sk-bench-0123456789", "OPENAI_BASE_URL": self.base_url},
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-I", "-c", self.start, str(self.source)],
            cwd=self.workspace,
            env=launch.env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - began
        self.said = done.stdout
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            said = (done.stdout + done.stderr)[-3000:]
            raise RuntimeError(f"the gate failed ({done.returncode}): {said}")
        return wall, cpu

    def files(self, version: int) -> dict[str, str]:
        """The files of the base (`version` 0), or those the head commit `version` changes:
        the refund desk's prompt."""
        if version == 0:
            return suite("Refund delivered orders.", self.fixtures)
        prompt = f"Refund delivered orders (version {version})."
        return {"evals.yaml": suite(prompt, self.fixtures)["evals.yaml"]}

    def _own(self, uid: int) -> None:
        for path in [self.workspace, *self.workspace.rglob("*")]:
            os.lchown(path, uid, uid)

    def close(self) -> None:
        self.github.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="alternate with the evalward in this src")
    parser.add_argument("--after", type=Path, default=ROOT / "src", help="(default: this one)")
    parser.add_argument("--fixtures", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("p9 runs the action as the image does, as root (the agent user switch)")
    versions = {"after": args.after.resolve()}
    if args.before:
        versions = {"before": args.before.resolve(), **versions}
    for source in versions.values():
        compile_evalward({"PYTHONPATH": str(source)})
    folder = Path(tempfile.mkdtemp(prefix="evalward-p9-"))
    folder.chmod(0o755)
    walls: dict[tuple[str, str], list[tuple[float, float]]] = {}
    loads = [os.getloadavg()[0]]
    with model_server(args.latency_ms) as server:
        gates = {}
        for name, source in versions.items():
            (folder / name).mkdir(mode=0o755)
            gates[name] = Gates(folder / name, source, args.fixtures, server.base_url)
            gates[name].gate("read-write")  # puts the base's results in its cache
        try:
            for _ in range(args.runs):
                for case, cache in (("cold", "off"), ("cached base", "read-write")):
                    for name, gates_of in gates.items():  # alternated
                        walls.setdefault((case, name), []).append(gates_of.gate(cache))
                loads.append(os.getloadavg()[0])
        finally:
            for each in gates.values():
                each.close()
            shutil.rmtree(folder, ignore_errors=True)
    print(
        f"{args.fixtures} fixtures, each run: a SQLite database and a CRM service, one command "
        f"tool, 2 model calls at {args.latency_ms:g} ms; the action's default parallel (8); "
        f"load average {min(loads):.1f}-{max(loads):.1f}"
    )
    for case in ("cold", "cached base"):
        for name in versions:
            runs = walls[(case, name)]
            print(
                f"{case}, {name}: wall {statistics.median(w for w, _ in runs):.2f} s "
                f"({' / '.join(f'{w:.2f}' for w, _ in runs)}), "
                f"CPU {statistics.median(c for _, c in runs):.2f} s"
            )


if __name__ == "__main__":
    main()
