"""Running a plan through the command line: concurrency limits, result order, and traces that
leave memory once scored but come back whole in every file that prints them."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from evalward.execute.execute import UNSCORED_PER_SLOT
from evalward.flows.pipeline import evaluate_change
from evalward.git import Git
from evalward.plan.progress import RunProgress
from evalward.plan.run_setup import Revisions, RunOptions, RunSetup
from evalward.providers.registry import build_providers
from evalward.rundata.results import FixtureResult
from fakes.http import Request, Response
from fakes.model_server import ScriptedModelServer, text
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.integration

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: {name} }}
spec:
  models: [openai/gpt-test]
  system: You are agent {name}.
"""
EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: {name}-eval }}
spec:
  targetAgent: {name}
  fixtureSelector: {{ matchLabels: {{ agent: {name} }} }}
  scoring: {{ passThreshold: 1.0 }}
  execution: {{ parallel: {parallel} }}
"""
FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}-case-{index}, labels: {{ agent: {name} }} }}
spec:
  targetAgent: {name}
  input: {{ type: prompt, payload: {{ prompt: "question {index} for {name}" }} }}
  assertions:
    - {{ type: contains, value: "answer to question {index}" }}
"""


def suite(repo: GitRepo, agents: dict[str, int | None], fixtures: int) -> None:
    """One Eval per agent with `execution.parallel` as given (None: unset), `fixtures`
    fixtures each."""
    files: dict[str, str] = {}
    for name, parallel in agents.items():
        files[f"{name}/agent.yaml"] = AGENT.format(name=name)
        evaluation = EVAL.format(name=name, parallel=parallel)
        if parallel is None:
            evaluation = evaluation.replace("  execution: { parallel: None }\n", "")
        files[f"{name}/eval.yaml"] = evaluation
        files[f"{name}/fixtures.yaml"] = "".join(
            FIXTURE.format(name=name, index=i) for i in range(fixtures)
        )
    repo.commit("suite", files)


class InFlight:
    """Wraps the model server's handler: counts requests in flight, per agent and in all."""

    def __init__(self, model: ScriptedModelServer, hold: float) -> None:
        self.lock = threading.Lock()
        self.now: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.hold = hold
        self.original = model.server.handler
        model.server.handler = self.handle

    def handle(self, request: Request) -> Response:
        messages = json.dumps(request.json().get("messages", []))
        if "JUDGE-RUBRIC" in messages:
            agent = "judge"
        else:
            agent = "slow" if "agent slow" in messages[:200] else "fast"
        with self.lock:
            for key in (agent, "all"):
                self.now[key] = self.now.get(key, 0) + 1
                self.peak[key] = max(self.peak.get(key, 0), self.now[key])
            if self.now.get("judge") and (self.now.get("slow") or self.now.get("fast")):
                self.peak["judge beside an agent"] = 1
        try:
            threading.Event().wait(self.hold)
            return self.original(request)
        finally:
            with self.lock:
                for key in (agent, "all"):
                    self.now[key] -= 1


def answer_every_question(model: ScriptedModelServer) -> None:
    model.default = text("placeholder")
    for index in range(10):
        model.script(f"question {index} for", text(f"answer to question {index}"))


def test_eval_and_run_limits_hold_while_evals_share_the_run(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo, {"slow": 2, "fast": 5}, fixtures=6)
    answer_every_question(model)
    counter = InFlight(model, hold=0.15)
    env = provider_env(model, "sk-test")

    wide = evalward(
        "run", str(repo.path), "--parallel", "4", "--no-cache", "--no-history",
        "--output-dir", str(tmp_path / "wide"), cwd=repo.path, **env,
    )  # fmt: skip
    assert wide.returncode == 0, wide.stderr
    assert counter.peak["slow"] == 2  # the slow Eval's own limit, reached and held
    assert counter.peak["all"] == 4  # the run's limit, reached: the fast Eval used the rest
    assert len(model.calls) == 12

    narrow = evalward(
        "run", str(repo.path), "--parallel", "1", "--no-cache", "--no-history",
        "--output-dir", str(tmp_path / "narrow"), cwd=repo.path, **env,
    )  # fmt: skip
    assert narrow.returncode == 0, narrow.stderr

    def order(run: str) -> list[tuple[str, str]]:
        document = json.loads((tmp_path / run / "results.json").read_text())
        return [(f["eval"], f["fixture"]) for f in document["fixtures"]]

    assert order("wide") == order("narrow")  # plan order, whatever order runs finished in
    assert len(order("wide")) == 12


def test_an_eval_without_its_own_parallel_is_bounded_by_the_run_alone(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    suite(repo, {"fast": None}, fixtures=10)
    assert "execution" not in (repo.path / "fast/eval.yaml").read_text()
    answer_every_question(model)
    counter = InFlight(model, hold=0.5)
    env = provider_env(model, "sk-test")

    done = evalward(
        "run", str(repo.path), "--parallel", "8", "--no-cache", "--no-history",
        cwd=repo.path, **env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    # the run's limit (8, or nearly, on a loaded machine), not a default of the Eval's (4)
    assert 4 < counter.peak["all"] <= 8
    assert len(model.calls) == 10


def test_an_evals_own_parallel_above_the_runs_is_held_to_the_runs(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    suite(repo, {"fast": 50}, fixtures=8)
    answer_every_question(model)
    counter = InFlight(model, hold=0.2)
    env = provider_env(model, "sk-test")

    done = evalward(
        "run", str(repo.path), "--parallel", "3", "--no-cache", "--no-history",
        cwd=repo.path, **env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    assert counter.peak["all"] == 3


def test_traces_leave_memory_once_scored_and_every_file_prints_them_whole(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo, {"fast": 3}, fixtures=4)
    answer_every_question(model)
    env = provider_env(model, "sk-test")

    async def evaluate() -> Any:
        providers = build_providers(env)
        try:
            return await evaluate_change(
                RunSetup(
                    Git(repo.path), Revisions(base=None), providers, env, RunOptions(parallel=3)
                )
            )
        finally:
            await providers.aclose()

    evaluation = asyncio.run(evaluate())
    assert len(evaluation.fixtures) == 4
    assert all(result.trace is None for result in evaluation.fixtures)
    for result in evaluation.fixtures:
        steps = evaluation.trace_of(result).steps
        index = result.fixture.rsplit("-", 1)[1]
        assert [s.content for s in steps] == [
            f"question {index} for fast",
            f"answer to question {index}",
        ]

    out = tmp_path / "out"
    done = evalward(
        "run", str(repo.path), "--no-cache", "--no-history", "--json",
        "--output-dir", str(out), cwd=repo.path, **env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    written = json.loads((out / "results.json").read_text())
    for document in (printed, written):
        for record in document["fixtures"]:
            index = record["fixture"].rsplit("-", 1)[1]
            contents = [step["content"] for step in record["trace"]["steps"]]
            assert contents == [f"question {index} for fast", f"answer to question {index}"]
    assert [e["fixture_results"] for e in printed["evals"]] == [
        e["fixture_results"] for e in written["evals"]
    ]
    page = (out / "report.html").read_text()
    for index in range(4):
        assert f"question {index} for fast" in page and f"answer to question {index}" in page


def test_judging_a_run_overlaps_the_next_run_of_its_eval(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """`execution.parallel` bounds an Eval's agent runs; judges are not held to it."""
    suite(repo, {"slow": 1}, fixtures=4)
    judged = {}
    for index in range(4):
        judged[f"slow/judged-{index}.yaml"] = FIXTURE.format(name="slow", index=index).replace(
            "slow-case-", "slow-judged-"
        ) + (
            "    - { type: judge, kind: rubric, rubric: 'JUDGE-RUBRIC: right answer? 1 if so.' }\n"
        )
    evaluation = (repo.path / "slow/eval.yaml").read_text()
    judged["slow/eval.yaml"] = evaluation.replace(
        "  execution:", "  judge: { model: openai/gpt-test }\n  execution:"
    )
    repo.commit("judged fixtures", judged)
    verdict = '{"score": 1, "confidence": 0.9, "summary": "right", "violations": []}'
    model.script("JUDGE-RUBRIC", text(verdict))
    answer_every_question(model)
    counter = InFlight(model, hold=0.2)
    env = provider_env(model, "sk-test")

    done = evalward(
        "run", str(repo.path), "--parallel", "4", "--no-cache", "--no-history",
        cwd=repo.path, **env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    assert counter.peak["slow"] == 1  # the Eval's agent runs, one at a time
    assert counter.peak["judge"] >= 1 and counter.peak.get("judge beside an agent") == 1


def test_runs_wait_for_their_scoring_when_they_outpace_it(repo: GitRepo, tmp_path: Path) -> None:
    """A mock script answers without ever waiting, so nothing but the bound on unscored
    traces lets scoring in before the next run: without it every run would finish (and its
    trace stay in memory) before the first result was scored."""
    suite(repo, {"fast": None}, fixtures=40)
    script = tmp_path / "mock.yaml"
    script.write_text("replies: []\ndefault: answer to question 0\n")
    providers = build_providers({}, mock_script=str(script))
    unscored: list[int] = []

    class Counting(RunProgress):
        def on_result(self, result: FixtureResult) -> None:
            super().on_result(result)
            unscored.append(providers.spent.calls - len(unscored) - 1)

    async def evaluate() -> Any:
        try:
            return await evaluate_change(
                RunSetup(
                    Git(repo.path), Revisions(base=None), providers, {}, RunOptions(parallel=2)
                ),
                Counting(),
            )
        finally:
            await providers.aclose()

    evaluation = asyncio.run(evaluate())
    assert providers.spent.calls == 40 and len(unscored) == 40
    # 4 traces per run slot waiting to be scored, and one more per worker that finished a
    # run and waits for room
    assert max(unscored) <= UNSCORED_PER_SLOT * 2 + 2, unscored
    assert sorted(r.fixture for r in evaluation.fixtures) == sorted(
        f"fast-case-{i}" for i in range(40)
    )
    passed = [r.fixture for r in evaluation.fixtures if r.passed]
    assert passed == ["fast-case-0"]
