"""Generate a synthetic repository: N agents, M fixtures spread over them, one Eval per agent.

python bench/synth.py OUT --agents 1000 --fixtures 20000 [--tools] [--parallel 32] [--git]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: {name} }}
spec:
  models: [openai/bench-model]
  system: You are agent {name}, prompt v{version}.
{tools}"""

TOOLS = """\
  tools:
    - name: lookup
      description: Look something up.
      parameters: { type: object, properties: {} }
      mock: { output: found }
"""

EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: {name}-eval }}
spec:
  targetAgent: {name}
  fixtureSelector: {{ matchLabels: {{ agent: {name} }} }}
  scoring: {{ passThreshold: 0.9 }}
  execution: {{ {parallel}timeoutSeconds: 600 }}
"""

FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata:
  name: {name}-case-{index}
  labels: {{ agent: {name} }}
spec:
  targetAgent: {name}
  severity: {severity}
  input: {{ type: prompt, payload: {{ prompt: "case {index} of {name}" }} }}
  assertions:
    - {{ type: contains, value: "case {expect} of" }}
    - {{ type: regex, pattern: "answer: case \\\\d+" }}
"""

SEVERITIES = ("low", "medium", "high", "critical")


def agent_name(index: int) -> str:
    return f"agent-{index:04d}"


def write_agent(out: Path, index: int, *, tools: bool, version: int = 1) -> None:
    name = agent_name(index)
    text = AGENT.format(name=name, version=version, tools=TOOLS if tools else "")
    (out / "agents" / f"{name}.yaml").write_text(text)


def expected_text(index: int, fail_every: int) -> int:
    """The case number a fixture's `contains` expects: a wrong one for every k-th fixture."""
    return index + 1 if fail_every and index % fail_every == 0 else index


def generate(
    out: Path,
    agents: int,
    fixtures: int,
    *,
    tools: bool,
    parallel: int | None,
    fail_every: int = 0,
) -> None:
    """`parallel`: each Eval's `execution.parallel`; None leaves it unset."""
    own_limit = "" if parallel is None else f"parallel: {parallel}, "
    for folder in ("agents", "evals", "fixtures"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    for index in range(agents):
        name = agent_name(index)
        write_agent(out, index, tools=tools)
        (out / "evals" / f"{name}.yaml").write_text(EVAL.format(name=name, parallel=own_limit))
    per_agent: dict[int, list[str]] = {}
    for index in range(fixtures):
        owner = index % agents
        name = agent_name(owner)
        document = FIXTURE.format(
            name=name,
            index=index,
            expect=expected_text(index, fail_every),
            severity=SEVERITIES[index % 4],
        )
        per_agent.setdefault(owner, []).append(document)
    for owner, documents in per_agent.items():
        (out / "fixtures" / f"{agent_name(owner)}.yaml").write_text("---\n".join(documents))


USER_AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: support }
spec:
  models: [openai/bench-model]
  system: >-
    You are the support agent of an online shop. Answer the customer's question about their
    order in one sentence, quote the order number as the customer wrote it, and never promise
    a refund: say that a colleague will review the request.
"""

USER_EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: support-eval }
spec:
  targetAgent: support
  fixtureSelector: { matchLabels: { agent: support } }
  scoring: { passThreshold: 0.9 }
"""

USER_FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata:
  name: order-{index}
  labels: {{ agent: support }}
spec:
  targetAgent: support
  input:
    type: prompt
    payload: {{ prompt: "Where is order #{index}? It was due on day {day}." }}
  assertions:
    - {{ type: contains, value: "order #{index}?" }}
    - {{ type: regex, pattern: '{pattern}' }}
"""

USER_PATTERNS = (
    r"order #{index}\b.*day \d+",
    r"(?i)^answer: where is order #{index}\?",
    r"#{index}\? It was due on day {day}\.$",
    r"(?:order|parcel) #0*{index}(?!\d)",
)
"""Shapes of a `regex` assertion on a fixture's own expected answer: each fixture's pattern
names its own order number, so no two fixtures share one."""


def generate_user_suite(out: Path, fixtures: int, *, files: int = 20) -> None:
    """One agent with a system prompt, one Eval (no `execution.parallel`) and `fixtures`
    one-call fixtures over `files` files, each with a `contains` and a distinct `regex` on its
    own expected answer (the benchmark server answers `answer: <the prompt>`)."""
    for folder in ("agents", "evals", "fixtures"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    (out / "agents" / "support.yaml").write_text(USER_AGENT)
    (out / "evals" / "support.yaml").write_text(USER_EVAL)
    per_file: dict[int, list[str]] = {}
    for index in range(fixtures):
        day = index % 28 + 1
        pattern = USER_PATTERNS[index % len(USER_PATTERNS)].format(index=index, day=day)
        document = USER_FIXTURE.format(index=index, day=day, pattern=pattern)
        per_file.setdefault(index * files // fixtures, []).append(document)
    for number, documents in per_file.items():
        (out / "fixtures" / f"orders-{number:02d}.yaml").write_text("---\n".join(documents))


def git(out: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(out), *args], check=True, capture_output=True)


def init_git(out: Path) -> None:
    git(out, "init", "-q", "-b", "main")
    git(out, "-c", "user.name=bench", "-c", "user.email=b@example.com", "add", "-A")
    git(out, "-c", "user.name=bench", "-c", "user.email=b@example.com", "commit", "-qm", "base")


CHANGED_AGENT = 7


def changed_repository(prefix: str, agents: int, fixtures: int) -> Path:
    """A git repository of `agents` and `fixtures` on `main`, and a branch `change` (checked
    out) that edits one agent's prompt: the shape of a typical pull request."""
    repo = Path(tempfile.mkdtemp(prefix=prefix)) / "repo"
    repo.mkdir()
    generate(repo, agents, fixtures, tools=False, parallel=32)
    init_git(repo)
    git(repo, "checkout", "-q", "-b", "change")
    write_agent(repo, CHANGED_AGENT, tools=False, version=2)
    git(repo, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qam", "change")
    return repo


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--agents", type=int, default=1)
    parser.add_argument("--fixtures", type=int, default=1000)
    parser.add_argument("--tools", action="store_true")
    parser.add_argument("--parallel", type=int, default=32, help="each Eval's; 0: unset")
    parser.add_argument("--git", action="store_true")
    args = parser.parse_args()
    parallel = args.parallel or None
    generate(args.out, args.agents, args.fixtures, tools=args.tools, parallel=parallel)
    if args.git:
        init_git(args.out)


if __name__ == "__main__":
    main()
