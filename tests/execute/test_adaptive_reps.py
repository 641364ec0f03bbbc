"""Adaptive reps through `evalward run`: a scripted model server answers each fixture correctly
with a set probability (its replies drawn from a seeded generator beforehand, so no timing
decides which rep gets which), and the run spends reps only where the outcome is open, runs
the base only where the verdict reads it, and says how sure each verdict is."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from fakes.model_script import Rule
from fakes.model_server import ScriptedModelServer, error
from support.answered import ADAPTIVE_EVAL, AGENT, FIXTURE, commit_suite, helper_eval, scripted
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.e2e

EVAL = ADAPTIVE_EVAL
FIXED = helper_eval(
    "scoring: { passThreshold: 0, gate: { failOnRegression: %s } }",
    "execution: { repsPerFixture: %d }",
)
WHERE_READ = FIXED.replace("failOnRegression: %s", "failOnRegression: %s, baseRuns: whereRead")
FIXTURES = [f"f{i}" for i in range(8)]


def script(model: ScriptedModelServer, version: str, chances: dict[str, float], seed: int) -> None:
    """Each fixture's replies for one side's agent, drawn in advance: right with its chance."""
    rng = random.Random(seed)
    answers = {name: [rng.random() < chance for _ in range(20)] for name, chance in chances.items()}
    scripted(model, version, answers)


def change(repo: GitRepo, eval_yaml: str = EVAL, names: list[str] = FIXTURES, **pr: str) -> None:
    """A suite on main, and a branch that changes the agent's prompt (and `pr`'s files)."""
    commit_suite(repo, eval_yaml, names)
    repo.branch("change")
    repo.commit("a new prompt", {"agent.yaml": AGENT.format(version="v2"), **pr})


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
    # The fixtures that passed settled working at their minimum; f3's own test runs on alone
    # (the pooled test waits for it) and settles broken at 0/3, which ends the pooled test's
    # question. The base runs only f3, the one fixture whose verdict reads it, at its minimum.
    assert reps["head"] == {**dict.fromkeys(FIXTURES, 2), "f3": 3}
    assert reps["base"] == {"f3": 2}
    assert "evalward: 16 runs planned" in done.stderr
    assert "evalward: 1 more run where outcomes are open (adaptive reps), 17 in all" in (
        done.stderr
    )
    (head,) = [e for e in document["evals"] if e["side"] == "head"]
    verdicts = {f["fixture"]: f["verdict"] for f in head["sequential"]["fixtures"]}
    assert verdicts == {**dict.fromkeys(FIXTURES, "stable"), "f3": "regression"}
    (broken,) = [f for f in head["sequential"]["fixtures"] if f["blocks"]]
    assert (broken["head_passes"], broken["head_runs"], broken["base_runs"]) == (0, 3, 2)
    comment = (tmp_path / "out" / "comment.md").read_text()
    why = comment.split("### Why it is blocked")[1].split("\n\n")[0]
    assert (
        "- helper-eval: f3 regression by its per-fixture sequential test: head 0/3, base 2/2; "
        "p ≤ 1.2e-03, within its share of the false-block rate 1.3e-03 (falseBlockRate 0.02 / "
        "2 / 8 fixtures)"
    ) in why
    assert "✅ Pass" not in comment
    assert "| f3 | ❌ regression | 0/3 | 2/2 |" in comment
    assert "7/8 fixtures pass on head · 1 regression · 1 failing" in comment
    assert (
        "Blocked: helper-eval: f3 regression (per-fixture sequential test: head 0/3, base 2/2, "
        "p ≤ 1.2e-03) — 1 regression"
    ) in comment
    page = (tmp_path / "out" / "report.html").read_text()
    assert "helper-eval: how sure each verdict is" in page
    row = page.split("<td>f3</td>")[1].split("</tr>")[0]
    assert "regression" in row and "0/3" in row and "2/2" in row and "0.0012" in row


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


def test_fail_on_regression_lives_in_the_eval_and_a_pull_request_cannot_lower_it(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """`failOnRegression: significant` blocks through the command line (whose exit code once
    ignored it), per fixture, with McNemar's numbers in the why line; the pull request's own
    copy of the Eval, set to `none`, does not gate (the base branch's does)."""
    names = ["f0", "f1", "f2"]
    change(repo, FIXED % ("significant", 5), names, **{"eval.yaml": FIXED % ("none", 5)})
    scripted(model, "v1", {name: [True] * 5 for name in names})
    scripted(model, "v2", {"f0": [True] * 5, "f1": [False] * 5, "f2": [True] * 5})

    done = run(repo, model, tmp_path / "out")

    assert done.returncode == 1, done.stdout + done.stderr
    comment = (tmp_path / "out" / "comment.md").read_text()
    why = comment.split("### Why it is blocked")[1]
    assert (
        "- helper-eval / f1: significant regression (McNemar's exact test per fixture: 5 worse "
        "/ 0 better over paired reps, p = 0.03 &lt; 0.05; base 5/5 → head 0/5)"
    ) in why
    assert "| 2/3 | ❌ Regressed |" in comment
    assert (
        "Blocked: helper-eval: a significant regression blocks (failOnRegression: significant) "
        "— 1 regression"
    ) in comment
    assert "✅ Pass" not in comment
    assert "significant regression" in done.stdout


@pytest.mark.parametrize("threshold", [0, 0.5], ids=["no threshold", "a threshold it fails"])
def test_a_drop_spread_thin_over_fixtures_is_shown_with_its_numbers_and_does_not_block(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path, threshold: float
) -> None:
    """Pooled over the Eval, six failed reps of nine look significant (p = 1/64); no fixture's
    drop is (2 of 3, p = 0.25): `significant` is per fixture, and the pooled test is shown.
    Below a threshold of 0.5 the Eval is blocked by it, and the pooled test's line says no
    regression blocks, not that nothing does."""
    names = ["f0", "f1", "f2"]
    eval_yaml = (FIXED % ("significant", 3)).replace(
        "passThreshold: 0,", f"passThreshold: {threshold},"
    )
    change(repo, eval_yaml, names)
    scripted(model, "v1", {name: [True] * 3 for name in names})
    scripted(model, "v2", {name: [False, False, True] for name in names})

    done = run(repo, model, tmp_path / "out")

    assert done.returncode == (1 if threshold else 0), done.stdout + done.stderr
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "McNemar's exact test over paired reps, 6 worse / 0 better, p = 0.016" in comment
    assert "no fixture's own drop is significant, so no regression blocks" in comment
    assert ("Why it is blocked" in comment) == bool(threshold)


def test_an_eval_its_regression_blocks_reads_regressed_in_the_report_as_in_the_comment(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Above its threshold of 0, with `failOnRegression: any`, one fixture that regressed
    blocks the Eval: report.html said "pass" where the comment said "Regressed"."""
    names = ["f0", "f1"]
    change(repo, FIXED % ("any", 1), names)
    scripted(model, "v1", {name: [True] for name in names})
    scripted(model, "v2", {"f0": [True], "f1": [False]})

    done = run(repo, model, tmp_path / "out")

    assert done.returncode == 1, done.stdout + done.stderr
    assert "❌ Regressed" in (tmp_path / "out" / "comment.md").read_text()
    page = (tmp_path / "out" / "report.html").read_text()
    assert '<span class="verdict fail">regressed</span>' in page
    assert '<span class="verdict pass">' not in page


def test_the_plan_gives_the_range_and_a_call_budget_stops_the_rounds(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    change(repo)
    script(model, "v1", dict.fromkeys(FIXTURES, 1.0), seed=1)
    script(model, "v2", {**dict.fromkeys(FIXTURES, 1.0), "f3": 0.0}, seed=2)

    planned = evalward("plan", "--base", "main", cwd=repo.path)
    assert planned.returncode == 0, planned.stderr
    assert "8 fixtures, 16 head runs; ~16 model calls" in planned.stdout
    assert "adaptive reps: the runs above at least, at most 64 head and 64 base runs" in (
        planned.stdout
    )
    assert "Estimate: ~16 model calls (up to ~128 with adaptive reps)" in planned.stdout

    out = tmp_path / "out"
    done = evalward(
        "run", "--base", "main", "--no-cache", "--no-history", "--output-dir", str(out),
        "--max-model-calls", "16",
        cwd=repo.path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-test",
    )  # fmt: skip

    # the first round (16 calls) fits; the second (f3's one more) does not: the gate is
    # incomplete, never passed on a fixture whose verdict stayed open
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((out / "results.json").read_text())
    assert document["result"] == "incomplete"
    assert len(model.requests) == 16
    assert len(document["skippedRuns"]) == 1
    (head,) = [e for e in document["evals"] if e["side"] == "head"]
    (f3,) = [f for f in head["sequential"]["fixtures"] if f["fixture"] == "f3"]
    assert (f3["verdict"], f3["head_runs"]) == ("likely regression", 2)
    assert "adaptive reps stopped early: 1 more run would exceed max-model-calls (16)" in (
        (out / "comment.md").read_text()
    )


def test_allow_incomplete_never_excuses_a_round_the_head_s_failure_asked_for(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """The budget holds the plan (16 calls: every fixture's minimum, both sides), as it would
    an unchanged pull request's; only the round f3's failures ask for does not fit. That
    round is the pull request's to pay: left out, f3 stays open, and `--allow-incomplete`,
    which excuses only what the base's own runs cannot fit, does not pass the gate."""
    change(repo)
    script(model, "v1", dict.fromkeys(FIXTURES, 1.0), seed=1)
    script(model, "v2", {**dict.fromkeys(FIXTURES, 1.0), "f3": 0.0}, seed=2)

    out = tmp_path / "out"
    done = evalward(
        "run", "--base", "main", "--no-cache", "--no-history", "--output-dir", str(out),
        "--max-model-calls", "16", "--allow-incomplete",
        cwd=repo.path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-test",
    )  # fmt: skip

    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((out / "results.json").read_text())
    assert document["result"] == "incomplete"
    assert "cannot hold the base's own runs" not in done.stdout + done.stderr
    (head,) = [e for e in document["evals"] if e["side"] == "head"]
    (f3,) = [f for f in head["sequential"]["fixtures"] if f["fixture"] == "f3"]
    assert (f3["verdict"], f3["head_passes"], f3["head_runs"]) == ("likely regression", 0, 2)


def test_shards_run_adaptive_evals_at_their_maximum_and_the_merge_decides(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Parts cannot take turns, so a sharded run gives every fixture its maximum reps on
    both sides: never a verdict on fewer reps than the Eval may need."""
    names = ["f0", "f1"]
    change(repo, EVAL.replace("max: 8", "max: 4"), names)
    scripted(model, "v1", {name: [True] * 10 for name in names})
    scripted(model, "v2", {"f0": [True] * 10, "f1": [False] * 10})
    keys = provider_env(model, "sk-test")
    parts = tmp_path / "parts"
    for index in (1, 2):
        part = evalward(
            "run", "--base", "main", "--no-cache", "--shard", f"{index}/2",
            "--output-dir", str(parts), cwd=repo.path, **keys,
        )  # fmt: skip
        assert part.returncode == 0, part.stdout + part.stderr
    out = tmp_path / "out"
    merged = evalward(
        "merge", "--base", "main", "--output-dir", str(out),
        *sorted(str(p) for p in parts.glob("shard-*.json")), cwd=repo.path, **keys,
    )  # fmt: skip

    assert merged.returncode == 1, merged.stdout + merged.stderr
    document = json.loads((out / "results.json").read_text())
    assert spent(document) == {"head": {"f0": 4, "f1": 4}, "base": {"f0": 4, "f1": 4}}
    (head,) = [e for e in document["evals"] if e["side"] == "head"]
    verdicts = {f["fixture"]: f["verdict"] for f in head["sequential"]["fixtures"]}
    assert verdicts == {"f0": "stable", "f1": "regression"}


def test_a_pull_request_cannot_loosen_its_own_sequential_gate(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """The pull request's copy of the Eval asks for one rep, lax error rates and a fixture
    that "works" at 10 %: the base branch's Eval gates, with its own reps and rates."""
    names = ["f0", "f1", "f2"]
    lax = EVAL.replace(
        "execution: { reps: { min: 2, max: 8 } }",
        "execution: { reps: { min: 1, max: 1 } }\n"
        "  scoring: { gate: { goodPassRate: 0.1, brokenPassRate: 0.0, falseBlockRate: 0.4 } }",
    )
    change(repo, EVAL, names, **{"eval.yaml": lax})
    scripted(model, "v1", {name: [True] * 10 for name in names})
    scripted(model, "v2", {"f0": [True] * 10, "f1": [False] * 10, "f2": [True] * 10})

    done = run(repo, model, tmp_path / "out")

    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    (head,) = [e for e in document["evals"] if e["side"] == "head"]
    assert (head["sequential"]["min_reps"], head["sequential"]["alpha"]) == (2, 0.02)
    (f1,) = [f for f in head["sequential"]["fixtures"] if f["fixture"] == "f1"]
    assert f1["verdict"] == "regression" and f1["blocks"]
    assert spent(document)["head"]["f1"] > 1


def test_an_outage_on_the_head_spends_no_reps_past_the_minimum(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Every head call fails through its retries: each fixture's minimum reps run, none more
    (an outage's runs say nothing, so no test asks for another), and the gate is unavailable,
    no verdict on the agent."""
    names = ["f0", "f1"]
    retry = "{ attempts: 2, baseDelaySeconds: 0.001, maxDelaySeconds: 0.01 }"
    repo.commit(
        "fast retries", {"evalward.yaml": f"providers: {{ openai: {{ retry: {retry} }} }}\n"}
    )
    change(repo, EVAL, names)
    scripted(model, "v1", {name: [True] * 10 for name in names})
    down = [error(503) for _ in range(40)]
    model.rules.append(Rule(lambda body: "(v2)" in json.dumps(body), down, sequence=True))

    done = run(repo, model, tmp_path / "out")

    assert done.returncode == 3, done.stdout + done.stderr
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert document["result"] == "unavailable"
    assert spent(document) == {"head": {"f0": 2, "f1": 2}, "base": {}}
    assert len(model.requests) == 2 * 2 * 2  # two fixtures, two reps, two attempts each


def test_fixed_reps_run_the_base_only_where_the_decision_or_the_comparison_reads_it(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    names = ["f0", "f1", "f2"]
    change(repo, WHERE_READ % ("none", 2), names)
    scripted(model, "v1", dict.fromkeys(names, [True] * 4))
    scripted(model, "v2", {"f0": [True] * 4, "f1": [False] * 4, "f2": [True] * 4})

    planned = evalward("plan", "--base", "main", cwd=repo.path)
    assert "3 fixtures, 6 head runs; ~6 model calls" in planned.stdout, planned.stderr
    assert (
        "base runs where read: at most 6 (those of the fixtures the head does not pass), ~12"
        in (planned.stdout)
    )

    # A threshold decides (`failOnRegression: none`): it reads the head alone, so with
    # `baseRuns: whereRead` the base runs only f1, which the head failed, and the
    # comparison can still call it a regression.
    done = run(repo, model, tmp_path / "none")
    document = json.loads((tmp_path / "none" / "results.json").read_text())
    assert spent(document) == {"head": dict.fromkeys(names, 2), "base": {"f1": 2}}, done.stderr
    (head,) = [e for e in document["evals"] if e["side"] == "head"]
    assert head["base_not_needed"] == ["f0", "f2"]
    assert document["summary"]["counts"]["regressions"] == 1
    assert "the base ran 1 of 3 fixtures, those the head did not pass" in done.stdout

    # `failOnRegression: any` (on main, whose Eval gates) reads every fixture's base: every
    # base rep runs, and the regression blocks.
    repo.checkout("main")
    repo.commit("any regression blocks", {"eval.yaml": WHERE_READ % ("any", 2)})
    repo.checkout("change")
    repo.git("merge", "-q", "main", "-m", "merge main")
    model.rules.clear()
    scripted(model, "v1", dict.fromkeys(names, [True] * 4))
    scripted(model, "v2", {"f0": [True] * 4, "f1": [False] * 4, "f2": [True] * 4})
    done = run(repo, model, tmp_path / "any")
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((tmp_path / "any" / "results.json").read_text())
    assert spent(document) == {"head": dict.fromkeys(names, 2), "base": dict.fromkeys(names, 2)}
    assert [e["base_not_needed"] for e in document["evals"] if e["side"] == "head"] == [[]]


@pytest.mark.parametrize(
    "added",
    [{f"p{i}": True for i in range(10)}, {"p0": False}],
    ids=["ten-that-pass", "one-that-fails"],
)
def test_fixtures_the_pr_adds_do_not_end_the_pooled_test_s_reps(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path, added: dict[str, bool]
) -> None:
    """Every base fixture fails one head rep in three: no fixture's own test settles, the
    pooled test draws reps until it settles broken, and the drop blocks. Fixtures the pull
    request adds to the Eval gate only once merged; they are left out of the pooled test, so
    ten that always pass cannot settle it working, nor one that always fails (settled broken,
    it blocks nothing) end its reps, leaving it open at "likely regression", which does not
    block."""
    names = [f"f{i}" for i in range(6)]
    pending = "---\n".join(FIXTURE.format(name=name) for name in added)
    change(repo, names=names, **{"added.yaml": pending})
    scripted(model, "v1", {name: [True] * 20 for name in names})
    thirds = [True, True, False] * 8
    scripted(model, "v2", {name: thirds[i % 3 :] for i, name in enumerate(names)})
    scripted(model, "v2", {name: [right] * 20 for name, right in added.items()})

    done = run(repo, model, tmp_path / "out")

    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    (sequential,) = [e["sequential"] for e in document["evals"] if e["side"] == "head"]
    assert sequential["pooled"] == "regression"


def test_a_fixture_the_pr_adds_asking_for_a_pairwise_judge_does_not_loosen_the_eval_s_tests(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """f3 fails every head rep: at its Eval's whole false-block rate it settles broken at its
    maximum of 3 reps and blocks. The pull request adds a fixture that asks for a pairwise
    judge: it gates only once merged and has no base run to pair with, so it is not judged in
    pairs, and the Eval's pass-rate tests keep their whole rate (a pairwise judge takes three
    quarters of it for its own tests, and at a quarter f3 would end open, not blocking)."""
    names = [f"f{i}" for i in range(6)]
    suite = helper_eval(
        "execution: { reps: { min: 2, max: 3 } }", "judge: { model: openai/gpt-4.1-mini }"
    )
    added = FIXTURE.format(name="p0") + '  pairwise: { rubric: "Which answers better?" }\n'
    change(repo, suite, names, **{"added.yaml": added})
    scripted(model, "v1", {name: [True] * 20 for name in names})
    scripted(model, "v2", {name: [name != "f3"] * 20 for name in [*names, "p0"]})

    done = run(repo, model, tmp_path / "out")

    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    (sequential,) = [e["sequential"] for e in document["evals"] if e["side"] == "head"]
    calls = {f["fixture"]: f["verdict"] for f in sequential["fixtures"]}
    assert calls["f3"] == "regression"


def test_a_fixture_the_pr_adds_asking_for_a_pairwise_judge_does_not_plan_the_held_base_runs(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A threshold decides (`failOnRegression: none`, `baseRuns: whereRead`), so the base runs
    only where the head fails; a budget of 3 calls holds the head's three runs, and f1, which
    the head fails, blocks. The pull request adds a fixture asking for a pairwise judge: the
    base's own Eval does not judge in pairs, so its base runs stay held back. Planned at once,
    they would make the base's own runs more than the budget holds, and allow-incomplete
    would excuse leaving out f1 with them."""
    names = ["f0", "f1", "f2"]
    suite = helper_eval(
        "scoring: { passThreshold: 0.9, gate: { failOnRegression: none, baseRuns: whereRead } }",
        "judge: { model: openai/gpt-4.1-mini }",
    )
    added = FIXTURE.format(name="p0") + '  pairwise: { rubric: "Which answers better?" }\n'
    change(repo, suite, names, **{"added.yaml": added})
    scripted(model, "v1", {name: [True] * 4 for name in names})
    scripted(model, "v2", {name: [name != "f1"] * 4 for name in [*names, "p0"]})

    done = evalward(
        "run", "--base", "main", "--no-cache", "--no-history", "--output-dir",
        str(tmp_path / "out"), "--max-model-calls", "3", "--allow-incomplete",
        cwd=repo.path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-test",
    )  # fmt: skip

    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert spent(document)["head"] == dict.fromkeys(names, 1)
