"""Real-world provider trouble end to end: outages (exit 3, no verdict), malformed replies
(error rows, never a crash), answers cut at the token limit, a result cache that must not
carry one server's answers to another, and base URLs without a scheme."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, error, shaped, text, tool_call
from support import resultdb
from support.actionrun import pull_request_event, run_action
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env

pytestmark = pytest.mark.hostile

FAST_RETRY = "providers:\n  openai:\n    retry: { attempts: 3, baseDelaySeconds: 0.01 }\n"
KEY = "sk-test-secret-value"
UNAVAILABLE = "provider unavailable — not a verdict on the agent"


@contextmanager
def dead_url(port: int = 0) -> Iterator[str]:
    """A loopback port bound and never listened on, held while the block runs: connections
    are refused, and no other test's server (another worker's) can take the port meanwhile,
    as it could a port merely let go of."""
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past a closed server's
        held.bind(("127.0.0.1", port))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/v1"


def head_of(body: dict[str, Any]) -> bool:
    return "HEAD-V2" in json.dumps(body)


def base_of(body: dict[str, Any]) -> bool:
    return "BASE-V1" in json.dumps(body)


def order(body: dict[str, Any]) -> bool:
    return "12345" in json.dumps(body)


def pr_with_fast_retries(repo: GitRepo, github: FakeGitHub) -> tuple[str, str]:
    repo.commit("provider settings", {"evalward.yaml": FAST_RETRY})
    return make_pr(repo, github)


def answer_well(model: ScriptedModelServer, side: Any) -> None:
    model.script(
        lambda b: side(b) and order(b),
        tool_call("lookup_order", {"order_id": "12345"}),
        text("Your order has shipped and arrives on 2026-11-25."),
    )
    model.script(side, text("Hello! How can I help?"))


# --- outages through the action ------------------------------------------------------------


def test_connection_refused_on_every_run_is_exit_3_with_every_file_written(
    repo: GitRepo, github: FakeGitHub
) -> None:
    base, head = pr_with_fast_retries(repo, github)
    with dead_url() as url:
        env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": KEY}
        run = run_action(
            repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
        )

    assert run.returncode == 3, run.stderr
    assert "Traceback" not in run.stderr
    results = run.results()
    assert results["result"] == "unavailable"
    assert UNAVAILABLE in results["reason"] and "rerun" in results["reason"]
    heads = [f for f in results["fixtures"] if f["side"] == "head"]
    assert heads and all(f["status"] == "error" and f["provider_unavailable"] for f in heads)
    assert all("no complete reply" in f["message"] for f in heads), heads
    body = github.comments_on(7)[0]["body"]
    assert UNAVAILABLE in body and "❌" not in body.split("\n", 3)[1]
    # one word for an outage in every part of the comment: its table and lists too
    assert "| ⚠️ Unavailable |" in body and "### ⚠️ Unavailable — not a verdict" in body
    assert "❌" not in body and "Failing fixtures" not in body and "💥 Errors" not in body
    assert "- every run of support-bot-eval failed to reach its model provider" in body
    html = (run.output_dir / "report.html").read_text()
    assert '<span class="verdict unavailable">unavailable</span>' in html
    assert "head support-bot-eval / greeting #0: unavailable (0.00)" in run.stdout
    assert 'type="unavailable"' in (run.output_dir / "junit.xml").read_text()
    for name in ("results.json", "junit.xml", "report.html", "comment.md"):
        assert (run.output_dir / name).is_file(), name


def test_a_key_the_provider_refuses_is_no_verdict_on_the_agent(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """A key the provider refuses (HTTP 401: a typo, a revoked key) fails every call, and
    nothing is learnt of the agent: unavailable and exit 3, never "Blocked" on a score of 0,
    each run saying which key to mend, as a missing key says which to set."""
    status = 401
    base, head = pr_with_fast_retries(repo, github)
    model.script(lambda body: True, *[error(status)] * 40)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={**provider_env(model), "OPENAI_API_KEY": KEY},
    )

    assert run.returncode == 3, run.stdout + run.stderr
    results = run.results()
    assert results["result"] == "unavailable"
    heads = [f for f in results["fixtures"] if f["side"] == "head"]
    assert heads and all(f["status"] == "error" and f["provider_unavailable"] for f in heads)
    assert all(
        f"rejected the API key (HTTP {status}" in f["message"]
        and "Check OPENAI_API_KEY" in f["message"]
        for f in heads
    ), heads
    assert len(model.calls) == len(results["fixtures"])  # a run's one call, not retried
    body = github.comments_on(7)[0]["body"]
    assert UNAVAILABLE in body and "Blocked" not in body, body
    assert "where it refused the API key, mend the key first" in body, body
    assert KEY not in body and KEY not in run.stdout + run.stderr


def test_mixed_answers_and_outage_keep_fail_closed_error_rows_and_exit_1(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """Some runs answered, some could not reach the provider: the run failed closed, as
    before, and the gate fails (exit 1): an outage of part of the runs is not a pass."""
    base, head = pr_with_fast_retries(repo, github)
    answer_well(model, base_of)
    model.script_sequence(lambda b: head_of(b) and order(b), error(503))
    model.script(head_of, text("Hello! How can I help?"))
    env = provider_env(model, KEY)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 1, run.stderr
    results = run.results()
    assert (results["result"], results["unavailableEvals"]) == ("fail", [])
    heads = {f["fixture"]: f for f in results["fixtures"] if f["side"] == "head"}
    assert heads["order-status"]["status"] == "error"
    assert heads["order-status"]["provider_unavailable"] is True
    assert heads["greeting"]["status"] == "pass"
    body = github.comments_on(7)[0]["body"]
    assert UNAVAILABLE not in body and "error" in body.lower()
    # the Eval fails, and the run that could not reach its provider is unavailable, not failing
    assert "| ❌ Fail |" in body and "**Failing fixtures**" not in body
    assert (
        "### ⚠️ Unavailable — not a verdict on the agent\n- support-bot-eval / order-status" in body
    )


def test_a_base_side_outage_leaves_no_baseline_and_the_head_gates(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = pr_with_fast_retries(repo, github)
    model.script_sequence(base_of, error(500))
    answer_well(model, head_of)
    env = provider_env(model, KEY)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 0, run.stderr + run.stdout
    results = run.results()
    assert results["result"] == "pass"
    assert any("no baseline" in note and "base run" in note for note in results["notes"])
    bases = [e for e in results["evals"] if e["side"] == "base"]
    assert bases and bases[0]["provider_unavailable"] is True


# --- the command line: the judge's provider, the cache, malformed and cut replies ------------

SUITE = {
    "agents.yaml": (
        "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: chat }\n"
        "spec: { models: [openai/gpt-test], system: Be brief. }\n"
    ),
    "evals.yaml": (
        "apiVersion: evalward.dev/v1\nkind: Eval\nmetadata: { name: chat-eval }\n"
        "spec: { targetAgent: chat, fixtureSelector: { matchLabels: { a: chat } }JUDGE }\n"
        "---\napiVersion: evalward.dev/v1\nkind: EvalFixture\n"
        "metadata: { name: where, labels: { a: chat } }\n"
        "spec: { targetAgent: chat, input: { type: prompt, payload: { prompt: Where is it? } },"
        " assertions: [{ type: contains, value: shipped }JUDGED] }\n"
    ),
    "evalward.yaml": FAST_RETRY,
}


def suite(repo: GitRepo, *, judged: bool = False) -> None:
    files = dict(SUITE)
    files["evals.yaml"] = (
        files["evals.yaml"]
        .replace(
            "JUDGED", ", { type: judge, rubric: The answer says where it is. }" if judged else ""
        )
        .replace("JUDGE", ", judge: { model: openai/judge-1 }" if judged else "")
    )
    repo.commit("suite", files)


def run_cli(repo: GitRepo, out: Path, base_url: str, *extra: str) -> Any:
    return evalward(
        "run", str(repo.path), "--no-history", "--output-dir", str(out), *extra,
        cwd=repo.path, OPENAI_BASE_URL=base_url, OPENAI_API_KEY=KEY,
    )  # fmt: skip


def results_of(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return data


def test_a_judge_outage_is_an_outage_not_a_verdict(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo, judged=True)
    model.script_sequence("Grade the run", error(502, headers={"retry-after": "0"}))
    model.script("Where is it?", text("It shipped."))

    done = run_cli(repo, tmp_path / "out", model.base_url)

    assert done.returncode == 3, done.stderr + done.stdout
    assert UNAVAILABLE in done.stdout
    (fixture,) = results_of(tmp_path / "out")["fixtures"]
    judge = next(a for a in fixture["assertions"] if a["type"] == "judge")
    assert (judge["status"], judge["provider_unavailable"]) == ("error", True)
    assert fixture["provider_unavailable"] is True and fixture["output"] == "It shipped."


@pytest.mark.parametrize(
    "body",
    [
        {"choices": [{"message": "It shipped.", "finish_reason": "stop"}]},
        {"choices": [{"message": {"role": "assistant", "tool_calls": ["lookup_order"]}}]},
        {
            "choices": [{"message": {"role": "assistant", "content": "It shipped."}}],
            "usage": {"prompt_tokens": "twelve", "completion_tokens": 1},
        },
        {"choices": [{"message": {"role": "assistant", "content": "shipped"}}], "usage": [1, 2]},
    ],
    ids=["message a string", "tool call not an object", "tokens not a number", "usage a list"],
)
def test_a_malformed_reply_is_an_error_row_never_a_crash(
    body: dict[str, Any], repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo)
    model.script("Where is it?", shaped(body))

    done = run_cli(repo, tmp_path / "out", model.base_url)

    assert done.returncode == 1, done.stderr  # exit 4 (a crash) before
    assert "Traceback" not in done.stderr
    (fixture,) = results_of(tmp_path / "out")["fixtures"]
    assert fixture["status"] == "error" and fixture["provider_unavailable"] is False
    assert "openai: malformed reply:" in fixture["message"]
    assert (tmp_path / "out" / "report.html").is_file()


def test_an_answer_cut_at_the_token_limit_is_shown_as_cut(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo)
    model.script("Where is it?", text("It shipped on the twenty", finish_reason="length"))

    done = run_cli(repo, tmp_path / "out", model.base_url)

    assert done.returncode == 0, done.stderr
    (fixture,) = results_of(tmp_path / "out")["fixtures"]
    final = fixture["trace"]["steps"][-1]
    assert (final["type"], final["stop_reason"]) == ("final", "length")
    assert "cut off at the model's token limit" in fixture["message"]
    # the fixture passes, so the comment gives it no block; report.html shows the message
    assert "cut off at the model" in (tmp_path / "out" / "report.html").read_text()


def test_a_gemini_answer_cut_at_its_token_limit_is_shown_as_cut(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Gemini says a reply was cut with `MAX_TOKENS`, where OpenAI says `length`."""
    suite(repo)
    repo.commit(
        "a gemini agent",
        {
            "agents.yaml": SUITE["agents.yaml"].replace("openai/gpt-test", "gemini/gemini-test"),
            "evalward.yaml": "providers:\n  gemini: { api: gemini, baseUrl: "
            f"{model.server.url}, apiKeyEnv: GEMINI_API_KEY }}\n",
        },
    )
    model.script("Where is it?", text("It shipped on the twenty", finish_reason="length"))

    done = evalward(
        "run", str(repo.path), "--no-history", "--output-dir", str(tmp_path / "out"),
        cwd=repo.path, GEMINI_API_KEY="gm-key-value-1",
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    (fixture,) = results_of(tmp_path / "out")["fixtures"]
    assert fixture["trace"]["steps"][-1]["stop_reason"] == "MAX_TOKENS"
    assert "cut off at the model's token limit (stop reason `MAX_TOKENS`)" in fixture["message"]


def test_a_pass_cached_from_one_server_is_not_reused_against_another(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo)
    model.script("Where is it?", text("It shipped."))
    first = run_cli(repo, tmp_path / "a", model.base_url)
    assert first.returncode == 0, first.stderr
    assert "reused" not in first.stderr

    with dead_url() as url:
        elsewhere = run_cli(repo, tmp_path / "b", url)

    assert elsewhere.returncode == 3, elsewhere.stderr + elsewhere.stdout
    assert results_of(tmp_path / "b")["cacheHits"] == 0
    again = run_cli(repo, tmp_path / "c", model.base_url)
    assert again.returncode == 0
    # the first lines say so, not only the footer
    assert again.stderr.splitlines()[1].startswith("evalward: 1 of 1 runs reused")
    assert "♻️ 1 run(s) reused from the result cache" in "\n".join(again.stdout.splitlines()[:6])
    assert len(model.calls) == 1


def test_no_cache_replaces_stale_results(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo)
    model.script_sequence("Where is it?", text("It shipped."), text("It was lost."))
    assert run_cli(repo, tmp_path / "1", model.base_url).returncode == 0
    stale = run_cli(repo, tmp_path / "2", model.base_url)
    assert stale.returncode == 0 and results_of(tmp_path / "2")["cacheHits"] == 1

    fresh = run_cli(repo, tmp_path / "3", model.base_url, "--no-cache")
    assert fresh.returncode == 1, fresh.stdout  # the server answers differently now
    after = run_cli(repo, tmp_path / "4", model.base_url)
    # the stale pass was replaced: no old result outlives --no-cache (a failing one is kept,
    # as any result but an error is)
    assert after.returncode == 1 and results_of(tmp_path / "4")["cacheHits"] == 1
    # one result, replaced in place, in a database readable by its owner only
    cache = repo.path / ".evalward/cache"
    (stored,) = resultdb.stored(cache).values()
    assert stored["output"] == "It was lost."
    files = [p for p in (cache / "results").iterdir() if p.is_file()]
    assert [p.name for p in files] == ["results.sqlite"]  # its logs are gone once it closed
    assert files[0].stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("damage", ["cut", "garbage", "another schema"])
def test_a_result_cache_that_is_not_ours_is_set_aside_never_read(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path, damage: str
) -> None:
    """A database cut short (a cache saved while it was written), garbage, or one of another
    shape is no result: the run runs the fixture, and stores into a new database."""
    suite(repo)
    model.script_sequence("Where is it?", text("It shipped."), text("It was lost."))
    assert run_cli(repo, tmp_path / "1", model.base_url).returncode == 0
    cache = repo.path / ".evalward/cache"
    database = resultdb.database(cache)
    whole = database.read_bytes()
    if damage == "cut":
        database.write_bytes(whole[: len(whole) // 3])
    elif damage == "garbage":
        database.write_bytes(b"not a database " * 500)
    else:
        database.unlink()
        with sqlite3.connect(database) as db:
            db.execute("CREATE TABLE results (key TEXT, passed INTEGER)")
        db.close()
    damaged = database.read_bytes()

    again = run_cli(repo, tmp_path / "2", model.base_url)
    assert again.returncode == 1, again.stdout  # run again: the server answers differently now
    assert results_of(tmp_path / "2")["cacheHits"] == 0
    (stored,) = resultdb.stored(cache).values()
    assert stored["output"] == "It was lost."
    assert database.with_name("results.sqlite.unreadable").read_bytes() == damaged
    assert database.stat().st_mode & 0o777 == 0o600


def test_no_cache_against_a_dead_server_drops_the_stale_pass(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo)
    model.script("Where is it?", text("It shipped."))
    assert run_cli(repo, tmp_path / "1", model.base_url).returncode == 0
    model.close()
    port = int(model.base_url.rsplit(":", 1)[1].split("/")[0])
    with dead_url(port) as url:  # the same URL, now refusing connections
        assert url == model.base_url.rstrip("/")
        assert run_cli(repo, tmp_path / "2", url, "--no-cache").returncode == 3
        after = run_cli(repo, tmp_path / "3", url)
    assert after.returncode == 3, after.stdout  # no pass resurfaces from the cache


@pytest.mark.parametrize("url", ["localhost:8080/v1", "127.0.0.1:11434", "ftp://x/v1"])
def test_a_base_url_without_its_scheme_is_a_configuration_error(
    url: str, repo: GitRepo, tmp_path: Path
) -> None:
    suite(repo)
    done = run_cli(repo, tmp_path / "out", url)
    assert done.returncode == 2, done.stderr
    assert "OPENAI_BASE_URL" in done.stderr and "http://" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_action_says_in_its_first_lines_that_it_reuses_results(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = pr_with_fast_retries(repo, github)
    answer_well(model, base_of)
    answer_well(model, head_of)
    env = provider_env(model, KEY)
    event = pull_request_event(github.repository, 7, base, head)
    first = run_action(repo.path, github, event, env=env)
    assert first.returncode == 0, first.stderr
    assert "reused" not in first.stdout

    again = run_action(repo.path, github, event, env=env)

    assert again.returncode == 0, again.stderr
    # after the notice that a result cache restored in the workspace is read on a pull request
    opening = again.stdout.splitlines()[:3]
    assert opening[0].startswith("::notice") and "could have written" in opening[0], opening
    assert opening[2].startswith("evalward: 4 of 4 runs reused from the result cache"), opening
    assert "♻️ 4 run(s) reused from the result cache" in github.comments_on(7)[0]["body"]


GATEWAY_KEY = "Gw-Query-Key-31337"


@pytest.mark.parametrize(
    "query",
    [
        f"?key={GATEWAY_KEY}",
        f"?subscription-key={GATEWAY_KEY}",
        f"#{GATEWAY_KEY}",
        f"?api-version=2024-02-01&token={GATEWAY_KEY}",
    ],
)
def test_a_base_url_whose_query_holds_a_gateway_key_is_refused_and_never_shown(
    query: str, repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """A gateway's key in the base URL's query was never sent (the API's routes went after
    it) and was shown, with the URL, in the error of every run: in the comment, the job
    summary and the log. It is refused before any run, the URL shown up to its path."""
    base, head = make_pr(repo, github)
    env = {**provider_env(model, KEY), "OPENAI_BASE_URL": model.base_url + query}
    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    said = run.stderr + run.stdout
    assert "OPENAI_BASE_URL holds a query or a fragment" in said, said[-2000:]
    assert f"(OPENAI_BASE_URL up to its path: {model.base_url!r})" in said
    comments = "\n".join(c["body"] for c in github.comments_on(7))
    assert GATEWAY_KEY not in said + run.summary + comments
    assert not model.requests, "refused before any call"


def test_a_providers_base_url_with_a_query_in_evalward_yaml_is_named_at_its_line(
    repo: GitRepo, tmp_path: Path
) -> None:
    suite(repo)
    repo.commit(
        "a gateway",
        {"evalward.yaml": "providers:\n  openai:\n    baseUrl: https://gw.example/v1?key=abc\n"},
    )
    done = run_cli(repo, tmp_path / "out", "http://127.0.0.1:9/v1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "evalward.yaml:3" in done.stderr and "holds a query or a fragment" in done.stderr
    assert "apiKeyEnv" in done.stderr and "Traceback" not in done.stderr


def test_the_action_refuses_a_base_url_without_its_scheme(
    repo: GitRepo, github: FakeGitHub
) -> None:
    base, head = make_pr(repo, github)
    env = {"OPENAI_BASE_URL": "localhost:11434/v1", "OPENAI_API_KEY": KEY}
    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )
    assert run.returncode == 2, run.stderr
    assert "OPENAI_BASE_URL='localhost:11434/v1': expected an http:// or https:// URL" in (
        run.stderr + run.stdout
    )


def test_an_unusable_judge_reply_is_kept_redacted(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A judge that echoes the key: its reply is kept to explain the error, without the key."""
    suite(repo, judged=True)
    model.script("Grade the run", text(f"I refuse. Your key is {KEY}, by the way."))
    model.script("Where is it?", text("It shipped."))

    done = run_cli(repo, tmp_path / "out", model.base_url)

    assert done.returncode == 1, done.stderr
    raw = (tmp_path / "out" / "results.json").read_text(encoding="utf-8")
    assert KEY not in raw + done.stdout + done.stderr
    (fixture,) = json.loads(raw)["fixtures"]
    judge = next(a for a in fixture["assertions"] if a["type"] == "judge")
    assert judge["status"] == "error" and "no valid verdict" in judge["message"]
    assert judge["judge_reply"].startswith("I refuse. Your key is ")
    assert judge["judge_reply"].endswith(", by the way.")
