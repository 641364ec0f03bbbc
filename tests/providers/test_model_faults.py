"""A model server in a storm: retries, then `error` results that fail closed; the results file
and the comment are still written and the exit code says the gate did not pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import Reply, ScriptedModelServer, error, text
from support.actionrun import pull_request_event, run_action
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import SUPPORT_EVAL, make_pr, provider_env

pytestmark = pytest.mark.hostile

NOW = {"Retry-After": "0"}  # servers say when to retry; keeps the storm fast

STORMS: dict[str, list[Reply]] = {
    "429 storm": [error(429, headers=NOW)],
    "5xx storm": [error(500, headers=NOW), error(502, headers=NOW), error(503, headers=NOW)],
    "connection reset mid-body": [text("Hello! " * 200, cut=True, headers=NOW)],
    "truncated JSON": [Reply(raw=b'{"id": "chatcmpl-1", "choices": [{"mess', headers=NOW)],
}


@pytest.mark.parametrize("storm", list(STORMS), ids=list(STORMS))
def test_a_storm_on_every_head_run_is_an_outage_not_a_verdict(
    storm: str, repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = make_pr(repo, github)
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello! shipped 2026-11-25"))
    model.script_sequence(lambda b: "HEAD-V2" in json.dumps(b), *STORMS[storm])
    env = provider_env(model)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 3, run.stderr  # an external failure: never a pass, no verdict
    assert "Traceback" not in run.stderr
    head_calls = model.requests_mentioning("HEAD-V2")
    assert len(head_calls) >= 2 * 4  # every call was retried (4 attempts), for both fixtures
    results = run.results()
    assert (results["result"], results["unavailableEvals"]) == ("unavailable", ["support-bot-eval"])
    heads = [f for f in results["fixtures"] if f["side"] == "head"]
    assert {f["status"] for f in heads} == {"error"}  # still fail closed, row by row
    assert all(f["provider_unavailable"] and f["verdict"] != "pass" for f in heads)
    evals = {e["eval"]: e for e in results["evals"] if e["side"] == "head"}
    assert evals["support-bot-eval"]["passed"] is False
    assert all("after 4 attempts" in f["message"] for f in heads), heads
    if storm in ("429 storm", "5xx storm"):  # the server's own words reach the user
        assert all("the server said: scripted error" in f["message"] for f in heads), heads
    assert run.outputs["result"] == "unavailable"
    body = github.comments_on(7)[0]["body"]
    assert "provider unavailable — not a verdict on the agent" in body
    assert "rerun the workflow" in body
    assert "::error title=evalward%3A provider unavailable::" in run.stdout
    assert "provider unavailable — not a verdict on the agent" in run.summary
    assert (run.output_dir / "junit.xml").is_file() and (run.output_dir / "report.html").is_file()
    assert "sk-test-secret-value" not in body + run.stdout + run.stderr


JUDGED_FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata:
  name: judged
  labels: { agent: support-bot }
spec:
  targetAgent: support-bot
  input: { type: prompt, payload: { prompt: "Be polite please" } }
  assertions:
    - { type: judge, rubric: "The reply is polite." }
"""


def test_a_judge_answering_prose_is_an_error_not_a_pass(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = make_pr(repo, github)
    repo.checkout("main")
    base = repo.commit(
        "a judged fixture",
        {
            "evals/fixtures/judged.yaml": JUDGED_FIXTURE,
            "evals/support-bot.yaml": SUPPORT_EVAL + "  judge: { model: openai/gpt-test }\n",
        },
    )
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge")
    head = repo.head()
    github.pulls[7].head_sha, github.pulls[7].base_sha = head, base
    judge = lambda b: "rubric" in json.dumps(b).lower() and "score" in json.dumps(b)  # noqa: E731
    model.script(judge, text("I think the answer is quite polite, well done!"))
    model.script(lambda b: True, text("Hello! shipped 2026-11-25"))
    env = provider_env(model)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 1, run.stderr + run.stdout
    judged = [f for f in run.results()["fixtures"] if f["fixture"] == "judged"]
    assert judged and {f["status"] for f in judged} == {"error"}, judged
    assert github.comments_on(7), "the comment is still written"
    assert (
        "gave no valid verdict after a retry: it is not JSON"
        in judged[0]["assertions"][0]["message"]
    )


LONE_SURROGATE_AGENT = """\
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "tool_call", "tool": "look\\ud800", "arguments": {"q": "\\udfff"}}))
print(json.dumps({"type": "final", "content": "half an emoji: \\ud83d!"}), flush=True)
"""


def test_half_a_surrogate_pair_from_a_model_or_an_agent_is_written_as_a_replacement(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """JSON can spell a lone UTF-16 surrogate, which no UTF-8 file accepts: it becomes U+FFFD
    and every file of the run is written."""
    body = (
        b'{"id": "x", "object": "chat.completion", "model": "gpt-test", "choices": [{"index": 0,'
        b' "message": {"role": "assistant", "content": "broken \\ud83d emoji"},'
        b' "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}'
    )
    model.script("hello", Reply(raw=body))
    repo.commit(
        "agents",
        {
            "agents.yaml": (
                "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: chat }\n"
                "spec: { models: [openai/gpt-test], system: Be brief. }\n---\n"
                "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: byo }\n"
                "spec: { runtime: { command: { run: [python3, byo.py] } } }\n"
            ),
            "byo.py": LONE_SURROGATE_AGENT,
            "evals.yaml": "".join(
                "---\napiVersion: evalward.dev/v1\nkind: Eval\n"
                f"metadata: {{ name: {name}-eval }}\n"
                f"spec: {{ targetAgent: {name},"
                f" fixtureSelector: {{ matchLabels: {{ a: {name} }} }} }}\n"
                "---\napiVersion: evalward.dev/v1\nkind: EvalFixture\n"
                f"metadata: {{ name: {name}-hello, labels: {{ a: {name} }} }}\n"
                f"spec: {{ targetAgent: {name},"
                " input: { type: prompt, payload: { prompt: hello } },"
                " assertions: [{ type: contains, value: emoji }] }\n"
                for name in ("chat", "byo")
            ),
        },
    )
    out = tmp_path / "out"
    done = evalward(
        "run", str(repo.path), "--no-cache", "--no-history", "--output-dir", str(out),
        cwd=repo.path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-test",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    outputs = {f["fixture"]: f["output"] for f in results["fixtures"]}
    assert outputs == {"chat-hello": "broken \ufffd emoji", "byo-hello": "half an emoji: \ufffd!"}
    byo = next(f for f in results["fixtures"] if f["fixture"] == "byo-hello")
    call = byo["trace"]["steps"][1]
    assert (call["tool"], call["arguments"]) == ("look\ufffd", {"q": "\ufffd"})
    assert "broken \ufffd emoji" in (out / "report.html").read_text(encoding="utf-8")
    assert (out / "junit.xml").is_file() and (out / "comment.md").is_file()
