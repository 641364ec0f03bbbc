"""Every CLI command through `python -m evalward` on a real git repository, with the mock
provider: history deltas, selection, plan, diff, promote, shards and merge."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.clirun import evalward as run_evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "data" / "traces"
SUITE = ROOT / "tests" / "data" / "support-bot-suite"
GOOD = (SUITE / "mock-replies.yaml").read_text()
# order-status answers without the date its regex wants: the fixture fails, the Eval drops
WORSE = GOOD.replace("should arrive on 2026-11-25", "should arrive soon")


def evalward(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_evalward(*args, cwd=repo)


@pytest.fixture
def bot(repo: GitRepo) -> GitRepo:
    """The frozen support-bot suite as a repository with one commit on main."""
    shutil.copytree(SUITE / "support-bot", repo.path / "support-bot")
    repo.write({"mock.yaml": GOOD, ".gitignore": ".evalward/\n"})
    repo.commit("support bot")
    return repo


def test_version_imports_none_of_the_engine() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "evalward", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip().startswith("evalward ")
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    for heavy in ("evalward.flows.pipeline", "pydantic", "aiohttp", "jinja2", "evalward.cli.run"):
        assert heavy not in imported


def test_history_shows_the_delta_against_the_previous_local_run(bot: GitRepo) -> None:
    first = evalward(bot.path, "run", "--mock-script", "mock.yaml", "--no-cache")
    assert first.returncode == 0, first.stderr
    assert "support-bot-eval (first run)" in first.stdout
    # plain progress lines when stderr is not a terminal
    assert "[1/2] head support-bot-eval /" in first.stderr

    bot.write({"mock.yaml": WORSE})
    second = evalward(bot.path, "run", "--mock-script", "mock.yaml", "--no-cache", "--json")
    assert second.returncode == 1, second.stderr
    document = json.loads(second.stdout)
    (entry,) = document["history"]
    assert entry["eval"] == "support-bot-eval" and not entry["first"]
    assert entry["scores"]["passRate"] == {"value": 0.5, "previous": 1.0, "delta": -0.5}

    bot.write({"mock.yaml": GOOD})
    third = evalward(bot.path, "run", "--mock-script", "mock.yaml", "--no-cache")
    assert "→ passRate: 100.00% (🟢+0.50)" in third.stdout
    stored = json.loads((bot.path / ".evalward/history/support-bot-eval.json").read_text())
    assert [s["averageScores"]["passRate"] for s in stored["history"]] == [1.0, 0.5, 1.0]
    assert {r["fixture"] for r in stored["history"][1]["runs"]} == {
        "order-status",
        "refund-must-clarify",
    }


@pytest.mark.parametrize(
    "last",
    [["not", "a", "set"], {"timestamp": "t"}, {"averageScores": {}, "runs": ["no-fixture"]}],
    ids=["a-list", "no-scores", "a-run-without-its-fixture"],
)
def test_a_history_whose_last_set_is_not_one_is_set_aside_and_the_run_goes_on(
    bot: GitRepo, last: object
) -> None:
    history = bot.path / ".evalward/history/support-bot-eval.json"
    history.parent.mkdir(parents=True)
    history.write_text(json.dumps({"name": "support-bot-eval", "history": [last]}))
    done = evalward(bot.path, "run", "--mock-script", "mock.yaml", "--no-cache")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert "support-bot-eval (first run)" in done.stdout
    assert json.loads(history.with_name(history.name + ".unreadable").read_text())["history"] == [
        last
    ]
    assert len(json.loads(history.read_text())["history"]) == 1


def test_run_narrows_by_fixture_and_reps_and_writes_the_action_files(bot: GitRepo) -> None:
    done = evalward(
        bot.path,
        *("run", "--mock-script", "mock.yaml", "--no-history", "--json"),
        *("--agent", "support-bot", "--fixture", "order-status", "--reps", "3"),
        *("--output-dir", "out"),
    )
    assert done.returncode == 0, done.stderr
    runs = [(f["fixture"], f["rep"]) for f in json.loads(done.stdout)["fixtures"]]
    assert runs == [("order-status", 0), ("order-status", 1), ("order-status", 2)]
    for name in ("results.json", "junit.xml", "report.html", "comment.md"):
        assert (bot.path / "out" / name).is_file()
    assert not (bot.path / ".evalward" / "history").exists()

    unknown = evalward(bot.path, "run", "--mock-script", "mock.yaml", "--eval", "support-bot-evl")
    assert unknown.returncode == 2
    assert "--eval support-bot-evl: no such resource" in unknown.stderr
    assert "support-bot-eval" in unknown.stderr and "Traceback" not in unknown.stderr


def test_a_name_that_narrows_a_run_to_nothing_is_a_mistake_not_a_pass(bot: GitRepo) -> None:
    """A fixture no Eval selects (its label misspelt): the run planned nothing and said
    "every affected Eval passes, 0/0 fixtures pass", exit 0."""
    stray = (SUITE / "support-bot" / "evals" / "fixtures" / "order-status.yaml").read_text()
    stray = stray.replace("name: order-status", "name: stray").replace(
        "agent: support-bot,", "agent: suport-bot,"
    )
    bot.commit("a stray fixture", {"support-bot/evals/fixtures/stray.yaml": stray})
    done = evalward(bot.path, "run", "--mock-script", "mock.yaml", "--fixture", "stray")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert (
        "--fixture stray: nothing of this run runs it: no Eval it runs selects the fixture"
    ) in done.stderr


def test_plan_says_which_file_changed_which_agent_and_what_it_costs(bot: GitRepo) -> None:
    bot.branch("feature")
    agent = bot.path / "support-bot/agents/support-bot.yaml"
    agent.write_text(agent.read_text().replace("Never email", "Do not ever email"))
    bot.commit("reword the prompt")
    done = evalward(bot.path, "plan", "--base", "main")
    assert done.returncode == 0, done.stderr
    assert "M support-bot/agents/support-bot.yaml" in done.stdout
    assert "support-bot: system changed in support-bot/agents/support-bot.yaml" in done.stdout
    assert "support-bot-eval (agent support-bot): agent support-bot changed" in done.stdout
    assert "2 fixtures, 2 head runs, 2 base runs" in done.stdout
    plan = json.loads(evalward(bot.path, "plan", "--base", "main", "--json").stdout)
    assert plan["modelCalls"] == plan["evals"][0]["modelCalls"] > 0
    assert plan["costUsd"] is not None and plan["costUsd"] > 0

    untouched = json.loads(evalward(bot.path, "plan", "--base", "HEAD", "--json").stdout)
    assert untouched["evals"] == [] and untouched["modelCalls"] == 0


def test_diff_compares_two_results_files_like_the_comment(bot: GitRepo) -> None:
    before = evalward(bot.path, "run", "--mock-script", "mock.yaml", "--output-dir", "a")
    assert before.returncode == 0, before.stderr
    bot.write({"mock.yaml": WORSE})
    evalward(bot.path, "run", "--mock-script", "mock.yaml", "--output-dir", "b", "--no-cache")
    done = evalward(bot.path, "diff", "a/results.json", "b/results.json")
    assert done.returncode == 1
    assert "order-status" in done.stdout and "regress" in done.stdout.lower()
    as_json = json.loads(
        evalward(bot.path, "diff", "a/results.json", "b/results.json", "--json").stdout
    )
    (entry,) = as_json["evals"]
    assert entry["before"] == 1.0 and entry["after"] < 1.0
    assert {"fixture": "order-status", "change": "regression"} in entry["fixtures"]
    broken = evalward(bot.path, "diff", "mock.yaml", "b/results.json")
    assert broken.returncode == 2 and "mock.yaml: not JSON" in broken.stderr


def _comparable(document: dict[str, Any]) -> Any:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if k
                not in ("duration_ms", "started_at", "cached", "wall_time_s", "run_time_summed_s")
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(document)


def _timeless(comment: str) -> str:
    """A comment without the time its runs took (each execution measures its own); what
    their model calls spent stays: the merge adds up its parts'."""
    return re.sub(r"wall time [^·]*? \(runs summed [^)]*\)", "wall time …", comment)


def test_shards_merge_into_exactly_the_unsharded_result(bot: GitRepo) -> None:
    bot.branch("feature")
    agent = bot.path / "support-bot/agents/support-bot.yaml"
    agent.write_text(agent.read_text().replace("Never email", "Do not ever email"))
    bot.write({"mock.yaml": WORSE})
    bot.commit("change the agent")
    common = ("--mock-script", "mock.yaml", "--base", "main", "--no-cache")
    whole = evalward(bot.path, "run", *common, "--output-dir", "whole", "--no-history")
    assert whole.returncode == 1, whole.stderr
    for index in (1, 2, 3):
        part = evalward(bot.path, "run", *common, "--shard", f"{index}/3", "--output-dir", "parts")
        assert part.returncode == 0, part.stderr
    counts = [
        len(json.loads((bot.path / f"parts/shard-{i}-of-3.json").read_text())["fixtures"])
        for i in (1, 2, 3)
    ]
    assert sum(counts) == 4 and max(counts) <= 2  # 2 head + 2 base runs, spread out

    parts = [f"parts/shard-{i}-of-3.json" for i in (1, 2, 3)]
    merged = evalward(bot.path, "merge", *parts, "--base", "main", "--output-dir", "merged")
    assert merged.returncode == whole.returncode == 1
    # the same comment, but for the time the runs took, measured again by each; the model
    # calls, tokens and cost are the parts' added up
    assert _timeless(merged.stdout) == _timeless(whole.stdout)
    expected = json.loads((bot.path / "whole/results.json").read_text())
    actual = json.loads((bot.path / "merged/results.json").read_text())
    assert _comparable(actual) == _comparable(expected)
    assert _timeless((bot.path / "merged/comment.md").read_text()) == _timeless(
        (bot.path / "whole/comment.md").read_text()
    )

    missing = evalward(bot.path, "merge", parts[0], parts[2], "--base", "main")
    assert missing.returncode == 2
    assert "shard 2/3 missing: got 2 of 3 parts" in missing.stderr
    twice = evalward(bot.path, "merge", parts[0], parts[1], parts[1], parts[2], "--base", "main")
    assert twice.returncode == 2 and "shard 2/3 is given twice" in twice.stderr

    other = evalward(bot.path, "run", *common, "--shard", "1/2", "--output-dir", "other")
    assert other.returncode == 0
    mixed = evalward(
        bot.path, "merge", "other/shard-1-of-2.json", parts[1], parts[2], "--base", "main"
    )
    assert mixed.returncode == 2 and "is not a part of the 2-part split" in mixed.stderr
    narrowed = evalward(bot.path, "merge", *parts, "--base", "main", "--reps", "2")
    assert narrowed.returncode == 2
    assert "ran another plan or other definitions than this merge computes" in narrowed.stderr
    bad = evalward(bot.path, "run", *common, "--shard", "4/3")
    assert bad.returncode == 2 and "--shard: expected i/n" in bad.stderr


@pytest.mark.parametrize(
    ("trace", "trace_id", "tools"),
    [
        ("evalward.json", "run-evalward-0003", ["lookup_order"]),
        ("openai.json", "conv-openai-0001", ["lookup_order"]),
        ("anthropic.json", "conv-anthropic-0002", ["clarify_reason", "create_jira_ticket"]),
        ("otel.json", "5b8efff798038103d269b633813fc60c", ["clarify_reason", "create_jira_ticket"]),
    ],
)
def test_promote_writes_a_fixture_the_eval_selects(
    bot: GitRepo, trace: str, trace_id: str, tools: list[str]
) -> None:
    target = bot.path / "support-bot/evals/fixtures/promoted.yaml"
    target.write_text(
        "# Fixtures promoted from production traces.\n"
        "apiVersion: evalward.dev/v1  # keep this comment\n"
        "kind: EvalFixture\n"
        "metadata: { name: hand-written, labels: { agent: support-bot } }\n"
        "spec:\n"
        "  targetAgent: support-bot\n"
        "  input: { type: prompt, payload: { prompt: hi } }\n"
        "  assertions: [{ type: contains, value: hi }]\n"
    )
    bot.git("config", "user.email", "promoter@example.com")
    done = evalward(
        bot.path,
        *("promote", str(TRACES / trace), "--agent", "support-bot", "--name", "from-trace"),
        *("--output", str(target)),
    )
    assert done.returncode == 0, done.stderr
    text = target.read_text()
    assert text.startswith("# Fixtures promoted from production traces.\n")
    assert "# keep this comment" in text and text.index("hand-written") < text.index("from-trace")
    documents = list(yaml.safe_load_all(text))
    fixture = documents[-1]
    assert fixture["metadata"] == {"name": "from-trace", "labels": {"agent": "support-bot"}}
    assert fixture["spec"]["origin"]["traceId"] == trace_id
    assert fixture["spec"]["origin"]["promotedBy"] == "promoter@example.com"
    assert [a["tool"] for a in fixture["spec"]["assertions"]] == tools
    assert [r["tool"] for r in fixture["spec"]["toolReplay"]] == tools

    # the Eval's label selector picks the new fixture up, and it runs
    ran = evalward(
        bot.path,
        *("run", "--mock-script", "mock.yaml", "--no-history", "--json"),
        *("--fixture", "from-trace"),
    )
    assert ran.returncode in (0, 1), ran.stderr
    (result,) = json.loads(ran.stdout)["fixtures"]
    assert (result["eval"], result["fixture"]) == ("support-bot-eval", "from-trace")

    again = evalward(
        bot.path,
        *("promote", str(TRACES / trace), "--agent", "support-bot", "--name", "from-trace"),
        *("--output", str(target)),
    )
    assert "fixture from-trace replaced" in again.stdout
    assert len(list(yaml.safe_load_all(target.read_text()))) == 2


def test_promote_prints_to_stdout_and_refuses_what_it_cannot_read(bot: GitRepo) -> None:
    done = evalward(bot.path, "promote", str(TRACES / "openai.json"), "--agent", "support-bot")
    assert done.returncode == 0, done.stderr
    fixture = yaml.safe_load(done.stdout)
    assert fixture["metadata"]["name"] == "promoted-conv-openai-0001"
    assert fixture["spec"]["input"] == {
        "type": "prompt",
        "payload": {"prompt": "Where is my order 12345?"},
    }
    assert "- {type: toolCalled, tool: lookup_order}" in done.stdout
    junk = evalward(bot.path, "promote", "mock.yaml", "--agent", "support-bot")
    assert junk.returncode == 2 and "mock.yaml: not JSON" in junk.stderr


def test_promote_refuses_an_agent_the_repository_lacks_and_a_name_another_file_holds(
    bot: GitRepo,
) -> None:
    """A mistyped `--agent` would make a fixture no Eval runs, and a `--name` another file
    defines one the next run refuses: both are said before anything is written."""
    promote = ["promote", str(TRACES / "openai.json")]
    target = bot.path / "support-bot/evals/fixtures/promoted.yaml"
    typo = evalward(bot.path, *promote, "--agent", "suport-bot", "--output", str(target))
    assert typo.returncode == 2, typo.stderr
    assert (
        "--agent 'suport-bot': the repository defines no Agent of that name (did you mean "
        "'support-bot'?)" in typo.stderr
    )
    taken = evalward(
        bot.path, *promote, "--agent", "support-bot", "--name", "order-status", "-o", str(target)
    )
    assert taken.returncode == 2, taken.stderr
    assert (
        "--name 'order-status': a fixture of that name is already defined at "
        "support-bot/evals/fixtures/order-status.yaml:1; give another --name, or `--output "
        "support-bot/evals/fixtures/order-status.yaml` to replace it"
    ) in taken.stderr
    assert not target.exists()
    replaced = evalward(
        bot.path,
        *promote,
        *("--agent", "support-bot", "--name", "order-status"),
        *("-o", "support-bot/evals/fixtures/order-status.yaml"),
    )
    assert replaced.returncode == 0, replaced.stderr
    assert "fixture order-status replaced" in replaced.stdout


def test_a_shard_file_never_holds_a_secret_the_agent_echoed(bot: GitRepo) -> None:
    bot.write({"leak.yaml": 'replies: []\ndefault: "the deploy token is tok-3f9a-secret"\n'})
    part = run_evalward(
        "run", "--mock-script", "leak.yaml", "--no-cache", "--shard", "1/1",
        "--output-dir", "parts", cwd=bot.path, DEPLOY_TOKEN="tok-3f9a-secret",
    )  # fmt: skip
    assert part.returncode == 0, part.stderr
    written = (bot.path / "parts/shard-1-of-1.json").read_text()
    assert "the deploy token is ***" in written
    assert "tok-3f9a-secret" not in written
