"""promptfoo itself and evalward, on the same suites against the same model server, give every
test the same verdict: each configuration of tests/data/promptfoo is run by promptfoo (pinned,
offline, as bench/p1_promptfoo.py runs it) and, converted by `evalward import promptfoo`, by
`evalward run`; every result of one is paired with the other's by its rendered prompt and
model, and both must match the example's expected.yaml. Both must also send the model the
same requests: each call of a test's model (not a grader's, not an embeddings call) with its
URL, its key's header, its messages (and Anthropic's `system`), its tools and tool choice.

Run with `make test-promptfoo` (it installs promptfoo from npm, about 1.4 GB, into a cache of
its own); not part of `make test`, which checks evalward's side of the same verdicts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakes.http import Request
from fakes.reply_table import (
    EVALWARD_OPEN,
    PROMPTFOO_GRADER,
    ReplyTableServer,
    load_table,
    model_env,
    point_at,
    second_env,
    second_server,
)
from support.clirun import REPO_ROOT, evalward

pytestmark = pytest.mark.promptfoo

EXAMPLES = sorted(p.parent for p in (REPO_ROOT / "tests/data/promptfoo").glob("*/expected.yaml"))
PROMPTFOO_ENV = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_DEBUG_LOG": "1",
    # its remaining outbound calls fail at once instead of waiting on a closed network
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


def promptfoo() -> str:
    found = os.environ.get("EVALWARD_PROMPTFOO", "")
    if not found or not Path(found).exists():
        pytest.fail("set EVALWARD_PROMPTFOO to promptfoo's executable (`make test-promptfoo`)")
    return found


def prompt_key(prompt: Any) -> str:
    """A rendered prompt, as either tool holds it: a conversation, JSON, or a text. A text
    promptfoo sends Anthropic line by line (each trimmed, blank ones dropped), as the import
    writes it, so both are keyed by those lines; text parts by their text."""
    if isinstance(prompt, str):
        try:
            parsed = json.loads(prompt)
        except ValueError:
            return "\n".join(line.strip() for line in prompt.splitlines() if line.strip())
        if not (
            isinstance(parsed, list) and all(isinstance(m, dict) and "role" in m for m in parsed)
        ):
            return json.dumps(parsed, sort_keys=True)
        prompt = parsed
    return json.dumps([{"role": m["role"], "content": _text(m["content"])} for m in prompt])


def _text(content: Any) -> Any:
    if isinstance(content, list) and all(isinstance(p, dict) and "text" in p for p in content):
        return "".join(p["text"] for p in content)
    return content


def promptfoo_verdicts(
    example: Path, work: Path, server: ReplyTableServer, second: ReplyTableServer | None
) -> dict[tuple[str, str], bool]:
    suite = work / "promptfoo"
    shutil.copytree(example, suite)
    point_at(suite, second)
    output = work / "promptfoo.json"
    done = subprocess.run(
        [promptfoo(), "eval", "-c", "promptfooconfig.yaml", "--no-cache", "--no-write",
         "--max-concurrency", "4", "-o", str(output)],
        cwd=suite,
        env={
            "PATH": os.environ["PATH"], "HOME": str(work), **PROMPTFOO_ENV,
            **model_env(server), **second_env(second),
        },
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode in (0, 100), done.stdout[-2000:] + done.stderr[-2000:]
    verdicts = {}
    for result in json.loads(output.read_text())["results"]["results"]:
        assert not result.get("error") or not result["success"], result
        model = result["provider"]["id"].split(":")[-1]
        verdicts[(prompt_key(result["prompt"]["raw"]), model)] = bool(result["success"])
    return verdicts


def evalward_verdicts(
    example: Path,
    work: Path,
    server: ReplyTableServer,
    second: ReplyTableServer | None,
    *flags: str,
) -> tuple[dict[tuple[str, str], bool], dict[tuple[str, str], str]]:
    repo = work / "evalward"
    shutil.copytree(example, repo)
    point_at(repo, second)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    imported = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", *flags, cwd=repo, **second_env(second)
    )
    assert imported.returncode == 0, imported.stderr
    suite = next((repo / "evals").iterdir())
    models = {
        d["metadata"]["name"]: d["spec"]["models"][0].partition("/")[2]
        for d in yaml.safe_load_all((suite / "agents.yaml").read_text()) if d
    }  # fmt: skip
    keys = {}
    for fixture in [d for d in yaml.safe_load_all((suite / "fixtures.yaml").read_text()) if d]:
        given = fixture["spec"]["input"]
        prompt = given["payload"]["prompt"] if given["type"] == "prompt" else given["messages"]
        keys[fixture["metadata"]["name"]] = (
            prompt_key(prompt),
            models[fixture["spec"]["targetAgent"]],
        )
    out = work / "out"
    ran = evalward(
        "run", "--output-dir", str(out), "--no-cache", cwd=repo,
        **model_env(server), **second_env(second),
    )  # fmt: skip
    assert ran.returncode in (0, 1), ran.stderr
    results = json.loads((out / "results.json").read_text())["fixtures"]
    verdicts = {keys[f["fixture"]]: f["status"] == "pass" for f in results}
    return verdicts, {key: name for name, key in keys.items()}


SENT = ("model", "system", "messages", "tools", "tool_choice")
"""What of a model call's body both tools must send alike (their defaults for the rest, such
as max_tokens, differ)."""


def model_calls(requests: list[Request]) -> set[str]:
    """Each call of a test's model among `requests`, as what the two tools must send alike."""
    calls = set()
    for request in requests:
        body = request.json()
        if request.path.endswith("/embeddings") or not isinstance(body, dict):
            continue
        texts = [body.get("system")] + [m.get("content") for m in body.get("messages") or []]
        said = json.dumps(texts)
        if PROMPTFOO_GRADER in said or EVALWARD_OPEN in said:
            continue
        headers = {k.lower() for k in request.headers}
        auth = "api-key" if "api-key" in headers else "x-api-key" if "x-api-key" in headers else ""
        sent = {key: body[key] for key in SENT if key in body}
        calls.add(json.dumps([request.target, auth or "bearer", sent], sort_keys=True))
    return calls


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_promptfoo_and_evalward_give_every_test_the_same_verdict(
    example: Path, tmp_path: Path
) -> None:
    server = ReplyTableServer(*load_table(example / "replies.yaml"))
    second = second_server(example)  # the suite's other server (an apiBaseUrl), when it has one
    servers = [server] + ([second] if second is not None else [])
    try:
        theirs = promptfoo_verdicts(example, tmp_path, server, second)
        their_calls = model_calls([r for s in servers for r in s.received])
        for each in servers:
            each.received.clear()
        ours, names = evalward_verdicts(example, tmp_path, server, second)
        our_calls = model_calls([r for s in servers for r in s.received])
    finally:
        server.close()
        if second is not None:
            second.close()
    expected = yaml.safe_load((example / "expected.yaml").read_text())

    print(f"\n{example.name}: {len(theirs)} tests")
    print(f"  {'fixture':<66} promptfoo  evalward  expected")
    for key in sorted(ours, key=lambda k: names[k]):
        shown = {True: "pass", False: "fail", None: "—"}
        name = names[key]
        said = f"{shown[theirs.get(key)]:<10} {shown[ours[key]]:<9} {expected.get(name, '—')}"
        print(f"  {name:<66} {said}")
    assert set(theirs) == set(ours), "the tools ran different tests"
    assert theirs == ours
    assert {names[k]: "pass" if v else "fail" for k, v in ours.items()} == expected
    assert len(their_calls) == len(theirs)  # one call of its model for each test
    assert sorted(their_calls - our_calls) == sorted(our_calls - their_calls) == []


def test_promptfoo_sends_openai_a_messages_file_as_an_object_and_claude_its_json_as_text(
    tmp_path: Path,
) -> None:
    """promptfoo's examples/claude-vs-gpt as published: gpt-4o is sent the prompt file's
    `messages:` mapping as the request's `messages`, which the API refuses, so each of its
    tests fails with that error (the import refuses that column, with the rewrite
    claude-vs-gpt/ holds); Claude is sent the file's JSON as text, which the import writes
    as promptfoo sends it: the same requests, the same verdicts."""
    published = REPO_ROOT / "tests/data/promptfoo/claude-vs-gpt/published"
    server = ReplyTableServer(*load_table(published.parent / "replies.yaml"))
    try:
        theirs = promptfoo_verdicts(published, tmp_path, server, None)
        refused = [
            r for r in server.received
            if r.path.endswith("/chat/completions") and r.json()["model"] == "gpt-4o"
        ]  # fmt: skip
        their_calls = model_calls([r for r in server.received if r.path.endswith("/messages")])
        server.received.clear()
        ours, _ = evalward_verdicts(published, tmp_path, server, None, "--skip-unsupported")
        our_calls = model_calls(server.received)
    finally:
        server.close()
    results = json.loads((tmp_path / "promptfoo.json").read_text())["results"]["results"]
    gpt = [r for r in results if r["provider"]["id"].endswith(":gpt-4o")]
    assert len(gpt) == 15 and not any(r["success"] for r in gpt)
    assert all("Invalid type for 'messages'" in r["error"] for r in gpt), gpt[0]["error"]
    assert refused and all(isinstance(r.json()["messages"], dict) for r in refused)
    claude = {key: verdict for key, verdict in theirs.items() if key[1] != "gpt-4o"}
    assert len(claude) == len(ours) == 15
    assert claude == ours
    assert len(their_calls) == 15
    assert their_calls == our_calls


def test_promptfoo_and_evalward_send_claude_the_turns_of_a_text_prompt(tmp_path: Path) -> None:
    """A text prompt's `system:`, `user:` and `assistant:` lines reach Anthropic's Messages API
    as a system and turns, from both tools alike (the import writes them as messages, so the
    tests are paired by the request each sent, not by the prompt)."""
    suite = REPO_ROOT / "tests/data/promptfoo/claude-text/turns"
    server = ReplyTableServer(*load_table(suite / "replies.yaml"))
    try:
        theirs = promptfoo_verdicts(suite, tmp_path, server, None)
        their_calls = model_calls(server.received)
        server.received.clear()
        ours, _ = evalward_verdicts(suite, tmp_path, server, None)
        our_calls = model_calls(server.received)
    finally:
        server.close()
    assert sorted(theirs.values()) == sorted(ours.values()) == [False, True]
    assert len(their_calls) == 2
    assert their_calls == our_calls
    assert all('"system": [{"text": "Answer with the colour alone."' in c for c in our_calls)
