"""Adaptive reps through `evalward run`: a scripted model server answers each fixture correctly
with a set probability (its replies drawn from a seeded generator beforehand, so no timing
decides which rep gets which), and the run spends reps only where the outcome is open, runs
the base only where the verdict reads it, and says how sure each verdict is."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from clirun import evalward
from fakes.model_script import Reply, Rule
from fakes.model_server import ScriptedModelServer, text
from gitrepo import GitRepo

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: helper }}
spec:
  models: [openai/gpt-4.1-mini]
  system: You are a helper ({version}). Answer in one sentence.
"""
EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: helper-eval }
spec:
  targetAgent: helper
  fixtureSelector: { matchLabels: { agent: helper } }
  execution: { reps: { min: 2, max: 8 } }
"""
FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: helper }} }}
spec:
  targetAgent: helper
  input: {{ type: prompt, payload: {{ prompt: "question about {name}" }} }}
  assertions:
    - {{ type: contains, value: "the answer" }}
"""
FIXTURES = [f"f{i}" for i in range(8)]


def script(model: ScriptedModelServer, version: str, chances: dict[str, float], seed: int) -> None:
    """Each fixture's replies for one side's agent, drawn in advance: right with its chance."""
    rng = random.Random(seed)
    for name, chance in chances.items():
        replies: list[Reply] = [
            text("the answer" if rng.random() < chance else "no idea") for _ in range(20)
        ]

        def asks(body: dict[str, Any], name: str = name) -> bool:
            said = json.dumps(body)
            return f"question about {name}" in said and f"({version})" in said

        model.rules.append(Rule(asks, replies, sequence=True))


def change(repo: GitRepo) -> None:
    fixtures = "---\n".join(FIXTURE.format(name=name) for name in FIXTURES)
    repo.commit(
        "suite",
        {
            "agent.yaml": AGENT.format(version="v1"),
            "eval.yaml": EVAL,
            "fixtures.yaml": fixtures,
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("change")
    repo.commit("a new prompt", {"agent.yaml": AGENT.format(version="v2")})


def run(repo: GitRepo, model: ScriptedModelServer, out: Path) -> Any:
    return evalward(
        "run", "--base", "main", "--no-cache", "--no-history", "--output-dir", str(out),
        cwd=repo.path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-test",
    )  # fmt: skip


def spent(document: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Reps per side and fixture, as results.json records the runs."""
    reps: dict[str, dict[str, int]] = {"head": {}, "base": {}}
    for fixture in document["fixtures"]:
        side = reps[fixture["side"]]
        side[fixture["fixture"]] = side.get(fixture["fixture"], 0) + 1
    return reps


def test_one_broken_fixture_is_a_settled_regression_and_the_base_runs_only_it(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    change(repo)
    script(model, "v1", dict.fromkeys(FIXTURES, 1.0), seed=1)
    script(model, "v2", {**dict.fromkeys(FIXTURES, 1.0), "f3": 0.0}, seed=2)

    done = run(repo, model, tmp_path / "out")

    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    reps = spent(document)
    # Two failures of f3 leave the whole Eval's pooled test open: one more round for all;
    # f3 settles broken at 0/4, which ends the pooled test's question. The base runs only
    # f3, the one fixture whose verdict reads it, at its minimum.
    assert reps["head"] == {**dict.fromkeys(FIXTURES, 3), "f3": 4}
    assert reps["base"] == {"f3": 2}
    (head,) = [e for e in document["evals"] if e["side"] == "head"]
    verdicts = {f["fixture"]: f["verdict"] for f in head["sequential"]["fixtures"]}
    assert verdicts == {**dict.fromkeys(FIXTURES, "stable"), "f3": "regression"}
    (broken,) = [f for f in head["sequential"]["fixtures"] if f["blocks"]]
    assert (broken["head_passes"], broken["head_runs"], broken["base_runs"]) == (0, 4, 2)
    comment = (tmp_path / "out" / "comment.md").read_text()
    why = comment.split("### Why it is blocked")[1].split("\n\n")[0]
    assert "helper-eval: f3 regression (sequential test per fixture" in why
    assert "head 0/4 · base 2/2 · p ≤ 2.4e-04" in why
    assert "✅ Pass" not in comment
    assert "| f3 | ❌ regression | 0/4 | 2/2 |" in comment
    assert "1 regression" in comment


def test_a_noisy_agent_that_did_not_change_is_not_blocked(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Every fixture right 90 % of the time on both sides: the reps go to the fixtures that
    failed, the base runs nowhere, and nothing blocks."""
    change(repo)
    chances = dict.fromkeys(FIXTURES, 0.9)
    script(model, "v1", chances, seed=3)
    script(model, "v2", chances, seed=4)

    done = run(repo, model, tmp_path / "out")

    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    reps = spent(document)
    (head,) = [e for e in document["evals"] if e["side"] == "head"]
    calls = {f["fixture"]: f for f in head["sequential"]["fixtures"]}
    failed = {name for name, f in calls.items() if f["head_passes"] < f["head_runs"]}
    assert failed, "the seed gives some fixture a failed rep"
    assert all(reps["head"][name] == 2 for name in set(FIXTURES) - failed)
    assert all(reps["head"][name] > 2 for name in failed)
    assert all(calls[name]["verdict"] == "noise" for name in failed)
    assert reps["base"] == {}
    assert sum(reps["head"].values()) < 5 * len(FIXTURES)
