"""The pairwise judge's power, false blocks and calls, measured through the product itself:
`evalward run --base main` on a generated repository per trial, its models on a scripted
OpenAI-compatible server on loopback.

The repository: one agent, ten fixtures (each a prompt, a `contains` assertion and an absolute
judge rubric, as `evalward init` writes them) and one Eval at init's defaults (adaptive reps 1
to 8, falseBlockRate 0.02, missRate 0.1, margin 0.2) with a pairwise judge and its
calibration. The pull request changes the agent's prompt; on `--worse` of the fixtures its
answer turns wrong (every assertion still passes, and the absolute judge, blind to the drop,
scores both 0.9: only the pairwise judge can see it).

The scripted judge of accuracy a: on a pair whose answers differ in quality it prefers the
better with chance a, the worse otherwise, the same in both orders. On two equally good
answers it does what a model asked to prefer one reply does: it rarely calls them a tie
(`--ties`, 0.1), and otherwise prefers one of them at random, and says the same in the other
order with chance `--self-agreement` (0.9; otherwise the orders disagree, a tie). Every run's
answer carries a serial number, so no two answers are the same text. Its calibration (init's
shape: fourteen pairs of a right and a wrong answer, no tie) is answered as labelled. Each
cell runs `--trials` pull requests; a cell with no fixture worse measures false blocks and the
unchanged pull request's calls, beside the same repository judged by its rubric alone (no
pairwise judge).

    python bench/pairwise_power.py [--trials 8] [--seed 7] [--accuracy 1,0.9,0.8]
        [--worse 0,1,2,10] [--before NAME=SRC-or-COMMIT ...]

`--before` alternates another tree's evalward with this one's, trial by trial, on the same
scripts: a folder holding its package, or a commit of this repository (its `src`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "src"))

from common import answer_chat, before_and_this  # noqa: E402

from evalward.scoring.judges.judge import CLOSE, OPEN  # noqa: E402

FIXTURES = 10
RIGHT = "The right answer"
WRONG = "A wrong answer"
BASE_PROMPT = "Answer the question."
HEAD_PROMPT = "Answer the question, please."
RUBRIC = "Which reply answers the question correctly?"
CALIBRATION_INPUT = "A question"
CALIBRATION_PAIRS = 14
"""As `evalward init` writes them: the fewest a judge agreeing on all shows κ at the floor on."""
EVALWARD = [sys.executable, "-m", "evalward"]


@dataclass
class Script:
    """What the server answers: which fixtures the head gets wrong, the judge's accuracy."""

    worse: int = 0
    accuracy: float = 1.0
    seed: int = 0
    ties: float = 0.1
    self_agreement: float = 0.9
    serial: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, kind: str) -> None:
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1

    def answer(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        said = json.dumps(messages)
        last = messages[-1].get("content") if messages else ""
        if isinstance(last, str) and "Compare run A and run B" in last:
            data = json.loads(last.split(OPEN + "\n", 1)[1].rsplit("\n" + CLOSE, 1)[0])
            calibration = str(data.get("input")).startswith(CALIBRATION_INPUT)
            self.count("calibration" if calibration else "pairwise")
            return self.prefer(data["A_final"], data["B_final"], calibration)
        if BASE_PROMPT in said or HEAD_PROMPT in said:
            self.count("head" if HEAD_PROMPT in said else "base")
            with self.lock:
                self.serial += 1
                serial = self.serial
            fixture = next(i for i in range(FIXTURES) if f"Question {i}?" in said)
            wrong = HEAD_PROMPT in said and fixture < self.worse
            return f"{WRONG if wrong else RIGHT}, number {serial}."
        self.count("judge")
        return json.dumps(
            {"score": 0.9, "confidence": 0.8, "summary": "Answers it.", "violations": []}
        )

    def prefer(self, a_final: str, b_final: str, calibration: bool) -> str:
        a_good, b_good = RIGHT in a_final, RIGHT in b_final
        draw = hashlib.sha256(f"{self.seed}|{sorted((a_final, b_final))}".encode()).digest()
        chance = int.from_bytes(draw[:8], "big") / 2**64
        accuracy = 1.0 if calibration else self.accuracy
        if a_good != b_good:
            better = "A" if a_good else "B"
            choice = better if chance < accuracy else ("B" if better == "A" else "A")
        elif chance < self.ties:
            choice = "tie"
        else:  # one of two equal answers, the same one in either order but for a slip
            low, high = sorted((a_final, b_final))
            liked = low if draw[8] % 2 else high
            slip = int.from_bytes(draw[9:17], "big") / 2**64 >= self.self_agreement
            if slip and a_final == high:  # in one of the two orders only
                liked = high if liked == low else low
            choice = "A" if a_final == liked else "B"
        cited = [{"run": run, "step": 2, "quote": "answer"} for run in ("A", "B")]
        return json.dumps({"preference": choice, "reason": "correctness", "evidence": cited})


def server(script: Script) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            content = script.answer(body)
            answer_chat(self, body, {"role": "assistant", "content": content}, 60)

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def suite(prompt: str, pairwise: bool) -> str:
    docs = [
        "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: helper }\n"
        f"spec:\n  models: [openai/gpt-4.1-mini]\n  system: {prompt}\n"
    ]
    for index in range(FIXTURES):
        docs.append(
            "apiVersion: evalward.dev/v1\nkind: EvalFixture\n"
            f"metadata: {{ name: question-{index}, labels: {{ agent: helper }} }}\n"
            "spec:\n  targetAgent: helper\n"
            f'  input: {{ type: prompt, payload: {{ prompt: "Question {index}?" }} }}\n'
            "  assertions:\n    - { type: contains, value: answer }\n"
            "    - { type: judge, rubric: Is the question answered?, minScore: 0.8 }\n"
        )
    judge = "model: openai/gpt-4.1-mini"
    if pairwise:
        judge += f", pairwise: {{ rubric: {RUBRIC}, calibration: answer-pairs }}"
    docs.append(
        "apiVersion: evalward.dev/v1\nkind: Eval\nmetadata: { name: helper-eval }\n"
        "spec:\n  targetAgent: helper\n  fixtureSelector: { matchLabels: { agent: helper } }\n"
        f"  judge: {{ {judge} }}\n  execution: {{ reps: {{ min: 1, max: 8 }} }}\n"
    )
    pairs = [(RIGHT, WRONG, "A"), (WRONG, RIGHT, "B")] * (CALIBRATION_PAIRS // 2)
    listed = "".join(
        f'    - {{ input: "{CALIBRATION_INPUT} {index}", outputA: "{a}, number 0.", '
        f'outputB: "{b}, number 0.", humanPreference: {p} }}\n'
        for index, (a, b, p) in enumerate(pairs)
    )
    docs.append(
        "apiVersion: evalward.dev/v1\nkind: JudgeCalibration\nmetadata: { name: answer-pairs }\n"
        f"spec:\n  rubric: {RUBRIC}\n  judgeModels: [openai/gpt-4.1-mini]\n  pairs:\n{listed}"
    )
    return "---\n".join(docs)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@dataclass(frozen=True)
class Trial:
    result: str
    counts: dict[str, int]


def trial(script: Script, pairwise: bool, src: str) -> Trial:
    httpd = server(script)
    try:
        with tempfile.TemporaryDirectory(prefix="evalward-power-") as folder:
            repo = Path(folder) / "repo"
            repo.mkdir()
            git(repo, "init", "-q", "-b", "main")
            git(repo, "config", "user.email", "bench@example.com")
            git(repo, "config", "user.name", "bench")
            (repo / ".gitignore").write_text(".evalward/\n")
            (repo / "helper.yaml").write_text(suite(BASE_PROMPT, pairwise))
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", "a helper")
            git(repo, "checkout", "-q", "-b", "feature")
            (repo / "helper.yaml").write_text(suite(HEAD_PROMPT, pairwise))
            git(repo, "commit", "-q", "-am", "a new prompt")
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
            env["OPENAI_BASE_URL"] = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
            env["OPENAI_API_KEY"] = "sk-power-bench"
            out = Path(folder) / "out"
            done = subprocess.run(
                [*EVALWARD, "run", "--base", "main", "--output-dir", str(out)],
                cwd=repo,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            results = out / "results.json"
            if not results.exists():
                raise SystemExit(f"evalward run wrote no results: {done.stdout}{done.stderr}")
            return Trial(json.loads(results.read_text())["result"], dict(script.counts))
    finally:
        httpd.shutdown()
        httpd.server_close()


@dataclass
class Cell:
    trials: list[Trial] = field(default_factory=list)

    def share(self, result: str) -> float:
        return sum(t.result == result for t in self.trials) / len(self.trials)

    def calls(self, *kinds: str) -> float:
        return sum(sum(t.counts.get(k, 0) for k in kinds) for t in self.trials) / len(self.trials)


KINDS = ("head", "base", "judge", "pairwise", "calibration")


def tree_of(src: str) -> str:
    """A `--before` tree's `src`: a folder as it is, or a commit of this repository, whose
    `src` is extracted once into a temporary folder."""
    if Path(src).is_dir():
        return src
    folder = Path(tempfile.mkdtemp(prefix="evalward-power-tree-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", src, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return str(folder / "src")


def run_cells(
    worse: int, accuracy: float, trials: int, seed: int, pairwise: bool, trees: dict[str, str]
) -> dict[str, Cell]:
    """One cell per tree, their trials alternated: trial i of every tree, then trial i + 1,
    each tree's on the same script (seed) so that the trees are compared pair by pair."""
    cells = {name: Cell() for name in trees}
    for index in range(trials):
        for name, src in trees.items():
            script = Script(worse=worse, accuracy=accuracy, seed=seed * 100_003 + index)
            cells[name].trials.append(trial(script, pairwise, src))
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--accuracy", default="1,0.9,0.8")
    parser.add_argument("--worse", default=f"0,1,2,{FIXTURES}", help="fixtures worse, per row")
    parser.add_argument("--before", action="append", default=[], metavar="NAME=SRC")
    args = parser.parse_args()
    accuracies = [float(a) for a in args.accuracy.split(",")]
    worses = [int(w) for w in args.worse.split(",")]
    trees = {name: tree_of(src) for name, src in before_and_this(args.before).items()}
    print(
        f"{FIXTURES} fixtures, init's defaults (reps 1-8, falseBlockRate 0.02, margin 0.2); "
        f"{args.trials} pull requests a cell through `evalward run --base main`, seed "
        f"{args.seed}, trees {', '.join(trees)} alternated trial by trial. Calls are model "
        "calls a pull request made, mean per trial: the agent's runs (head, base), the "
        "absolute judge's asks, the pairwise asks (one per pair whose first order ties, two "
        "per pair it prefers a side of, none for two answers of the same text), the "
        "calibration replay's.\n"
    )
    print(
        "| tree | fixtures worse | judge accuracy | blocked | inconclusive | calls: head + "
        "base + judge + pairwise + calibration = all |"
    )
    print("|---|---|---|---|---|---|")
    unchanged: dict[tuple[str, float], Cell] = {}
    for worse in worses:
        for accuracy in accuracies:
            cells = run_cells(worse, accuracy, args.trials, args.seed, True, trees)
            for name, cell in cells.items():
                if worse == 0:
                    unchanged[(name, accuracy)] = cell
                parts = " + ".join(f"{cell.calls(k):.1f}" for k in KINDS)
                label = "none (unchanged)" if worse == 0 else str(worse)
                print(
                    f"| {name} | {label} | {accuracy:g} | {100 * cell.share('fail'):.0f} % | "
                    f"{100 * cell.share('inconclusive'):.0f} % | {parts} = "
                    f"{cell.calls(*KINDS):.1f} |"
                )
    rubric = run_cells(0, 1.0, args.trials, args.seed, False, {"this tree": trees["this tree"]})
    print(
        "\nAn unchanged pull request's model calls, mean per trial; a later pull request "
        "with the same judge and calibration, or one whose cache is restored from the "
        "default branch's (whose push replays it), reads the replay and spends all but its "
        "calls (the last two columns):\n"
    )
    print(
        "| judged by | head runs | base runs | absolute judge | pairwise | calibration | all "
        "| × rubric only | all, replay kept | × rubric only |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    alone = rubric["this tree"]
    base = alone.calls(*KINDS)
    rows = [("the rubric alone", alone)] + [
        (f"{name}: + pairwise judge, accuracy {a:g}", c) for (name, a), c in unchanged.items()
    ]
    for label, cell in rows:
        numbers = " | ".join(f"{cell.calls(k):.1f}" for k in KINDS)
        first, later = cell.calls(*KINDS), cell.calls(*KINDS) - cell.calls("calibration")
        print(
            f"| {label} | {numbers} | {first:.1f} | {first / base:.2f} | {later:.1f} | "
            f"{later / base:.2f} |"
        )


if __name__ == "__main__":
    main()
