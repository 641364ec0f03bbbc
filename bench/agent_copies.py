"""What each agent's own working copy costs a gate, through the action (as root: the agent user
switch, as in the image, so the copies are made).

A repository of --agents declarative agents, each with a command tool (a program of its
folder, so its runs need a working copy), each watching its own folder of --own files and one
shared folder of --shared files that all of them watch: the worst case for copies by agent,
whose reaches overlap almost whole. A pull request changes a file of the shared folder, so
every agent's Eval runs on both sides (--fixtures each, `cache: off`; each gate is of a new
head commit). The benchmark model server answers each run's two model calls (the tool's call,
then the answer) at --latency-ms.

Each agent's programs run in a copy of what that agent's runs read (commit 3cde027c), where
every agent of a side shared one copy of what all of them read: with N agents, a side writes N
copies of one agent's reach (own folder, shared folder, the definitions) where it wrote one of
all of them.

With --before SRC (the `src` folder of another checkout), gates alternate between that
evalward and this one, and both are printed: the wall time of the action and its CPU (with
the programs it ran), medians of --runs, and how long its turns waited for other jobs on
this machine (part of the wall time). With --profile, one more gate of each runs under
cProfile (the action's main thread, where the copies are written: `spawn` makes them on the
event loop) and where its time went is printed: the copies, git writing them, the reaches,
their removal.

    python bench/agent_copies.py --before /tmp/ew-before/src [--agents 10] [--runs 3] [--profile]
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from common import ROOT, compile_evalward, model_server
from p9_sides import Gates
from p10_turns import waited

AGENT = """\
---
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: desk-{index} }}
spec:
  models: [openai/gpt-4.1-mini]
  system: Answer from the desk's notes and the shared handbook.
  watch: [agents/desk-{index}/**, shared/**]
  tools:
    - name: look_up
      description: Look a question up in the desk's notes and the shared handbook.
      command: [python3, agents/desk-{index}/tool.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: desk-{index}-eval }}
spec:
  targetAgent: desk-{index}
  fixtureSelector: {{ matchLabels: {{ agent: desk-{index} }} }}
"""

FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: desk-{index}-{fixture}, labels: {{ agent: desk-{index} }} }}
spec:
  targetAgent: desk-{index}
  input: {{ type: prompt, payload: {{ prompt: "Question {fixture} for desk {index}" }} }}
  assertions:
    - {{ type: contains, value: "desk {index}" }}
"""

TOOL = """\
import json, pathlib, sys
sys.stdin.read()
own = pathlib.Path(__file__).parent / "notes-00.md"
shared = pathlib.Path("shared/handbook-000.md")
print(json.dumps({"notes": len(own.read_text()), "handbook": len(shared.read_text())}))
"""

PAGE = "A line of the {what}, version {version}: what the desk answers and why.\n" * 30
"""About 2 KB: one file of a folder."""


def repository(agents: int, fixtures: int, own: int, shared: int) -> dict[str, str]:
    """The base's files: the agents' definitions, each one's folder (its tool and notes), the
    shared folder."""
    definitions = "".join(
        AGENT.format(index=i) + "".join(FIXTURE.format(index=i, fixture=f) for f in range(fixtures))
        for i in range(agents)
    )
    files = {"evals.yaml": definitions, ".gitignore": ".evalward/\n"}
    for i in range(agents):
        files[f"agents/desk-{i}/tool.py"] = TOOL
        for n in range(own - 1):
            files[f"agents/desk-{i}/notes-{n:02}.md"] = PAGE.format(what=f"desk {i}", version=0)
    for n in range(shared):
        files[f"shared/handbook-{n:03}.md"] = PAGE.format(what="handbook", version=0)
    return files


class SharedChange(Gates):
    """p9's gates (one workspace, one evalward, the action as root) of this repository, each
    head commit changing one file of the shared folder."""

    def __init__(
        self, root: Path, source: Path, base_url: str, layout: tuple[int, int, int, int]
    ) -> None:
        self.layout = layout
        """`repository`'s agents, fixtures, own files and shared files."""
        super().__init__(root, source, layout[1], base_url)

    def files(self, version: int) -> dict[str, str]:
        if version == 0:
            return repository(*self.layout)
        return {"shared/handbook-000.md": PAGE.format(what="handbook", version=version)}


PROFILED = (
    ("working copies (Sandbox.working_copy)", "isolation/sandbox.py", "working_copy"),
    ("git writing them (Git.write_files)", "evalward/git.py", "write_files"),
    ("what each copy needs (Git.needed_for)", "evalward/git.py", "needed_for"),
    ("the reaches (agents_reach)", "plan/reach.py", "agents_reach"),
    ("the sandbox removed at the end (remove_tree)", "files/trees.py", "remove_tree"),
)
"""What --profile prints: a name, and the file and function whose cumulative time it is."""


def profiled(gates: Gates, stats: Path) -> list[str]:
    """One more gate of `gates` under cProfile; where its time went, as lines to print."""
    plain = gates.start
    gates.start = (
        "import atexit, cProfile, runpy, sys; sys.path.insert(0, sys.argv.pop()); "
        f"profile = cProfile.Profile(); atexit.register(profile.dump_stats, {str(stats)!r}); "
        "profile.enable(); runpy.run_module('evalward', run_name='__main__', alter_sys=True)"
    )
    try:
        wall, _ = gates.gate("off")
    finally:
        gates.start = plain
    found = pstats.Stats(str(stats)).stats  # type: ignore[attr-defined]
    lines = [f"wall {wall:.2f} s under the profiler"]
    for name, where, function in PROFILED:
        calls, seconds = 0, 0.0
        for (path, _, called), (_, count, _, cumulative, _) in found.items():
            if called == function and path.endswith(where):
                calls, seconds = calls + count, seconds + cumulative
        lines.append(f"{name}: {seconds:.2f} s in {calls} calls")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="alternate with the evalward in this src")
    parser.add_argument("--after", type=Path, default=ROOT / "src", help="(default: this one)")
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--fixtures", type=int, default=2, help="each agent's")
    parser.add_argument("--own", type=int, default=20, help="files of each agent's folder")
    parser.add_argument("--shared", type=int, default=200, help="files of the shared folder")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--profile", action="store_true", help="and one gate each profiled")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("agent_copies runs the action as the image does, as root (the user switch)")
    versions = {"after": args.after.resolve()}
    if args.before:
        versions = {"before": args.before.resolve(), **versions}
    for source in versions.values():
        compile_evalward({"PYTHONPATH": str(source)})
    folder = Path(tempfile.mkdtemp(prefix="evalward-copies-"))
    folder.chmod(0o755)
    layout = (args.agents, args.fixtures, args.own, args.shared)
    timings: dict[str, list[tuple[float, float]]] = {}
    waits: dict[str, list[float]] = {}
    profiles: dict[str, list[str]] = {}
    loads = [os.getloadavg()[0]]
    with model_server(args.latency_ms) as server:
        gates = {}
        for name, source in versions.items():
            (folder / name).mkdir(mode=0o755)
            gates[name] = SharedChange(folder / name, source, server.base_url, layout)
            gates[name].gate("off")  # untimed: files cached, the interpreter's pages warm
        try:
            for _ in range(args.runs):
                for name, gates_of in gates.items():  # alternated
                    timings.setdefault(name, []).append(gates_of.gate("off"))
                    waits.setdefault(name, []).append(waited(gates_of.said))
                loads.append(os.getloadavg()[0])
            if args.profile:
                for name, gates_of in gates.items():
                    profiles[name] = profiled(gates_of, folder / f"{name}.pstats")
        finally:
            for each in gates.values():
                each.close()
            shutil.rmtree(folder, ignore_errors=True)
    runs = 2 * args.agents * args.fixtures
    print(
        f"{args.agents} agents, each a command tool, watching its own {args.own} files and "
        f"{args.shared} shared ones; a pull request changing a shared file: {runs} runs "
        f"(cache off), 2 model calls each at {args.latency_ms:g} ms; the action's default "
        f"parallel (8); load average {min(loads):.1f}-{max(loads):.1f}"
    )
    for name in versions:
        walls = [wall for wall, _ in timings[name]]
        cpus = [cpu for _, cpu in timings[name]]
        print(
            f"{name}: wall {statistics.median(walls):.2f} s "
            f"({' / '.join(f'{w:.2f}' for w in walls)}), CPU {statistics.median(cpus):.2f} s "
            f"({' / '.join(f'{c:.2f}' for c in cpus)}), waiting for other jobs' turns "
            f"{statistics.median(waits[name]):.2f} s"
        )
    for name, lines in profiles.items():
        print(f"{name}, profiled: " + "; ".join(lines))


if __name__ == "__main__":
    main()
