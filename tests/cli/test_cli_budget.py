"""Budgets on `evalward run`: `--max-model-calls` and `--max-cost-usd` with the action's rule
(the most severe fixtures first, the gate incomplete unless `--allow-incomplete`), and the
estimate printed beside what the run spent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakes.model_server import ScriptedModelServer, text
from scoring.judges.test_judge_cannot_score import RESOURCES as CALIBRATED
from support.answered import helper_eval
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: helper }
spec:
  models: [openai/gpt-4.1-mini]
  system: You are a helper. Answer in one sentence.
"""
EVAL = helper_eval()
FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: helper }} }}
spec:
  targetAgent: helper
  severity: {severity}
  input: {{ type: prompt, payload: {{ prompt: "question about {name}" }} }}
  assertions:
    - {{ type: contains, value: "answer" }}
"""


def suite(repo: GitRepo) -> None:
    # same-sized prompts, so that both fixtures have the same estimate
    fixtures = [FIXTURE.format(name="aaa-low", severity="low")]
    fixtures.append(FIXTURE.format(name="zzz-top", severity="critical"))
    repo.commit(
        "suite", {"agent.yaml": AGENT, "eval.yaml": EVAL, "fixtures.yaml": "---\n".join(fixtures)}
    )


def run(repo: GitRepo, model: ScriptedModelServer, out: Path, *options: str) -> Any:
    return evalward(
        "run", str(repo.path), "--no-cache", "--no-history", "--output-dir", str(out), *options,
        cwd=repo.path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-test",
    )  # fmt: skip


def results(out: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((out / "results.json").read_text())
    return document


def test_a_call_budget_runs_the_most_severe_fixture_and_the_gate_is_incomplete(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo)
    model.default = text("the answer")

    over = run(repo, model, tmp_path / "over", "--max-model-calls", "1")

    assert over.returncode == 1, over.stderr
    assert results(tmp_path / "over")["result"] == "incomplete"
    assert [f["fixture"] for f in results(tmp_path / "over")["fixtures"]] == ["zzz-top"]
    assert [r["fixture"] for r in results(tmp_path / "over")["skippedRuns"]] == ["aaa-low"]
    assert "skipped by the budget" in over.stdout
    # the Eval's row is of what ran, and says so: no "✅ Pass" under an incomplete gate
    assert "⏹️ Pass on what ran (1 skipped)" in over.stdout and "✅ Pass" not in over.stdout
    assert len(model.requests) == 1
    # what the plan was estimated to need and what the run spent, side by side
    line = next(x for x in over.stderr.splitlines() if x.startswith("evalward: estimated"))
    assert re.fullmatch(
        r"evalward: estimated 1 model calls, ~[\d,]+ tokens, ~\$0\.\d{4} \(before retries and "
        r"calibration replays\); actual 1 model call, 15 tokens incl\. judge, \$0\.0000",
        line,
    ), line

    allowed = run(repo, model, tmp_path / "allowed", "--max-model-calls", "1", "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stderr
    assert results(tmp_path / "allowed")["result"] == "pass"


def test_a_cost_budget_trims_by_the_estimated_cost(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo)
    model.default = text("the answer")
    whole = run(repo, model, tmp_path / "whole", "--json")
    assert whole.returncode == 0, whole.stderr
    spending = json.loads(whole.stdout)["spending"]
    assert spending["estimate"]["calls"] == spending["actual"]["calls"] == 2
    assert spending["actual"]["costUsd"] == 2 * (10 * 0.4 + 5 * 1.6) / 1e6  # gpt-4.1-mini
    one_fixture = spending["estimate"]["costUsd"] / 2

    trimmed = run(repo, model, tmp_path / "trimmed", "--max-cost-usd", f"{one_fixture * 1.5:.8f}")

    assert trimmed.returncode == 1, trimmed.stderr
    assert [f["fixture"] for f in results(tmp_path / "trimmed")["fixtures"]] == ["zzz-top"]


PROMPT_FILE = "You are a helper. Answer in one sentence.\n" + "Be thorough. " * 3_330
"""A system prompt of 40 KB: 10,000 tokens a call, at four characters a token."""


def test_a_cost_budget_counts_the_system_prompt_a_system_file_holds(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Each call sends the 40 KB prompt and the model says it read 10,000 tokens ($0.004):
    the estimate counts the file as the run sends it, so a budget of one and a half runs
    keeps the critical fixture and skips the other, and the job spends within it. Counted
    as the few tokens of an inline prompt, both fitted, and the job spent twice what one
    run may. The call kept is held at its worst (the prompt's 40 KB as 40,000 tokens and
    the 128,000 an agent without `maxTokens` may write), which the budget cannot hold: it
    is refused, never sent."""
    suite(repo)
    prompted = AGENT.replace(
        "  system: You are a helper. Answer in one sentence.\n", "  systemFile: prompt.md\n"
    )
    repo.commit("a long prompt", {"agent.yaml": prompted, "prompt.md": PROMPT_FILE})
    model.default = text("the answer", prompt_tokens=10_000)
    call_usd = (10_000 * 0.4 + 5 * 1.6) / 1e6

    done = run(repo, model, tmp_path / "out", "--json", "--max-cost-usd", f"{1.5 * call_usd:.6f}")

    assert done.returncode == 1, done.stderr
    spending = json.loads(done.stdout)["spending"]
    assert spending["estimate"]["tokens"] > 10_000
    assert spending["actual"]["costUsd"] <= 1.5 * call_usd
    assert [f["fixture"] for f in results(tmp_path / "out")["fixtures"]] == ["zzz-top"]
    assert [r["fixture"] for r in results(tmp_path / "out")["skippedRuns"]] == ["aaa-low"]
    (kept,) = results(tmp_path / "out")["fixtures"]
    assert kept["budget_refused"] and "cannot hold this call" in kept["message"], kept
    assert len(model.requests) == 0


def test_a_budget_that_is_not_a_positive_number_is_refused(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo)
    for option, value in (("--max-cost-usd", "-1"), ("--max-cost-usd", "nan"),
                          ("--max-cost-usd", "lots"), ("--max-model-calls", "0")):  # fmt: skip
        done = run(repo, model, tmp_path / "out", option, value)
        assert done.returncode == 2, (option, value, done.stderr)
        assert option in done.stderr and "Traceback" not in done.stderr
    assert model.requests == []


def test_a_dollar_budget_over_a_model_without_a_price_is_refused_before_any_call(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo)
    repo.commit("an unpriced model", {"agent.yaml": AGENT.replace("gpt-4.1-mini", "gpt-next")})
    model.default = text("the answer")

    refused = run(repo, model, tmp_path / "refused", "--max-cost-usd", "1")
    assert refused.returncode == 2, refused.stderr
    assert "max-cost-usd is set, but openai/gpt-next has no price" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert model.requests == []

    counted = run(repo, model, tmp_path / "counted", "--max-model-calls", "10")
    assert counted.returncode == 0, counted.stderr
    assert len(model.requests) == 2


def test_a_judge_without_a_price_that_no_planned_fixture_calls_is_not_refused(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo)
    judged = EVAL + "  judge: { model: openai/local-judge }\n"
    repo.commit("a judge for later fixtures", {"eval.yaml": judged})
    model.default = text("the answer")

    done = run(repo, model, tmp_path / "out", "--max-cost-usd", "1")
    assert done.returncode == 0, done.stderr
    assert {r["model"] for r in model.requests} == {"gpt-4.1-mini"}


def test_the_estimate_is_the_same_made_during_the_runs_or_before_them(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Without a budget, a run the result cache can answer none of estimates its runs while
    they wait on their model calls; a budget estimates them before the first call; a rerun
    the cache answers estimates only what ran."""
    suite(repo)
    model.default = text("the answer")

    def spending(*options: str) -> Any:
        done = evalward(
            "run", str(repo.path), "--no-history", "--json", *options, cwd=repo.path,
            OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-test",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["spending"]

    during = spending()  # the first run: the cache is empty
    before = spending("--no-cache", "--max-model-calls", "10")
    assert during["estimate"] == before["estimate"]
    assert during["estimate"]["calls"] == 2 and during["estimate"]["costUsd"] > 0
    reused = spending()
    assert reused["estimate"]["calls"] == 0 and reused["actual"]["calls"] == 0


def test_the_help_of_a_budget_names_every_call_it_holds_as_they_are_made(tmp_path: Path) -> None:
    """What the estimate leaves holds the calls it cannot foresee: a bring-your-own agent's,
    a declarative agent's past its estimate and a simulated user's (plan/estimate.py); the
    help says so of all three, as action.yml and the README do."""
    done = evalward("run", "--help", cwd=tmp_path, COLUMNS="200")
    assert done.returncode == 0, done.stderr
    action = yaml.safe_load((Path(__file__).parents[2] / "action.yml").read_text())
    described = action["inputs"]["max-model-calls"]["description"]
    for said in (" ".join(done.stdout.split()), " ".join(described.split())):
        for calls in ("bring-your-own agents", "a declarative agent's", "simulated users'"):
            assert calls in said, (calls, said)


def test_allow_incomplete_without_a_budget_is_a_warning_and_the_run_goes_on(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """No budget leaves a run out, so `--allow-incomplete` alone changes nothing: said, not
    refused, for the gate decides as it would without it."""
    suite(repo)
    model.default = text("no idea")

    done = run(repo, model, tmp_path / "out", "--allow-incomplete")

    assert done.returncode == 1, done.stderr  # the fixtures fail: nothing excuses them
    assert (
        "evalward: warning: --allow-incomplete is given without --max-model-calls or "
        "--max-cost-usd: it lets the gate pass without the runs a budget leaves out, and with "
        "no budget none is left out, so it changes nothing; give the budget it is for, or "
        "leave it out"
    ) in done.stderr, done.stderr
    assert results(tmp_path / "out")["result"] == "fail"
    budgeted = run(
        repo, model, tmp_path / "budgeted", "--allow-incomplete", "--max-model-calls", "9"
    )
    assert "--allow-incomplete is given" not in budgeted.stderr


def test_a_judges_calibration_replay_is_held_to_the_budget_at_its_worst(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A JudgeCalibration's examples are replayed before the runs, which the estimate does
    not count: each replay is a judge's call, held at its worst against the whole
    `--max-cost-usd` (its 60,000-character example as as many tokens, 2,000 more and 2,048
    output tokens: $0.066 at $1 a million) and refused where the $0.05 cannot hold it. The
    calibration cannot be computed, so the Eval is never passed."""
    long = "LONG " + "x" * 60_000
    scores = {f"CAND-1 {long}": 1.0, "CAND-2": 0.0, "CAND-3": 1.0, "CAND-4": 0.0}
    examples = "".join(
        f'    - {{ input: "sum?", candidateOutput: "{out}", humanScore: {score} }}\n'
        for out, score in scores.items()
    )
    bounded = CALIBRATED.replace("  system: AGENT", "  maxTokens: 100\n  system: AGENT")
    (tmp_path / "evals.yaml").write_text(bounded.replace("{examples}", examples))
    (tmp_path / "evalward.yaml").write_text(
        "pricing:\n  openai/judge: { input: 1, output: 1 }\n"
        "  openai/agent: { input: 1, output: 1 }\n"
    )
    verdict = text(json.dumps({"score": 1.0, "confidence": 0.9, "summary": "s"}))
    model.script("AGENT-PROMPT", text("answer: 4"))
    model.script("CAL-RUBRIC", verdict)
    model.script("JUDGE-RUBRIC", verdict)
    out = tmp_path / "out"

    done = evalward(
        "run", str(tmp_path), "--no-history", "--no-cache", "--max-cost-usd", "0.05",
        "--output-dir", str(out),
        cwd=tmp_path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-test",
    )  # fmt: skip

    assert done.returncode == 1, done.stderr
    assert [body for body in model.requests if "LONG" in json.dumps(body)] == []
    said = done.stdout + done.stderr
    assert "calibration 'tutor-judge' could not be computed" in said, said
    assert "a judge call was refused: the job's cost budget cannot hold this call" in said
    assert results(out)["run"]["spent"]["cost_usd"] <= 0.05


def test_the_merge_gates_parts_a_budget_trimmed_as_run_does(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A part's budget skips the low fixture: its merge is incomplete, and `--allow-incomplete`,
    which `run --shard` refuses as the gate's, lets the merge pass as it lets `run` pass."""
    suite(repo)
    model.default = text("the answer")
    keys = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
    parts = tmp_path / "parts"
    part = evalward(
        "run", str(repo.path), "--no-cache", "--shard", "1/1", "--max-model-calls", "1",
        "--output-dir", str(parts), cwd=repo.path, **keys,
    )  # fmt: skip
    assert part.returncode == 0, part.stdout + part.stderr

    def merge(out: Path, *options: str) -> Any:
        return evalward(
            "merge", "--output-dir", str(out), *options, str(parts / "shard-1-of-1.json"),
            cwd=repo.path, **keys,
        )  # fmt: skip

    strict = merge(tmp_path / "strict")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert results(tmp_path / "strict")["result"] == "incomplete"
    assert [r["fixture"] for r in results(tmp_path / "strict")["skippedRuns"]] == ["aaa-low"]

    allowed = merge(tmp_path / "allowed", "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert results(tmp_path / "allowed")["result"] == "pass"
    assert len(model.requests) == 1  # the merge runs nothing
