"""MCP servers out to break evalward's client, each an agent's only server, all in one
`evalward run`: every hostile server makes its own run an error that names the server and
what it did, and the run beside it, with a server that behaves, passes. In the action, a
server that reads every environment it can and leaves a stray process behind finds no secret
and does not outlive the job."""

from __future__ import annotations

import gzip
import json
import sys
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.http import EventStream, LoopbackServer, Request, Response, sse
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.agentenv import needs_root, open_pr, run_gate, workspace
from support.agentuser import AGENT_UID
from support.byoagent import agent_python
from support.clirun import run_for_results
from support.documents import documents
from support.gitrepo import GitRepo
from support.mcpsuite import HOSTILE_SERVER, calls, suite

pytestmark = pytest.mark.hostile


def nested(depth: int) -> dict[str, Any]:
    inner: dict[str, Any] = {}
    for _ in range(depth):
        inner = {"x": inner}
    return inner


__all__ = ["workspace"]  # a fixture

ECHO = "name: echo, arguments: { said: hi }"

HOSTILE = {
    # mode: (server settings, the request it broke, what the run's error says it did)
    "silent": ("connectTimeoutSeconds: 1", "(no answer to initialize)", "did not start within 1"),
    "exit": ("", "initialize", "exited with code 3: boom: no such database"),
    "garbage": ("", "initialize", "wrote a line that is not JSON"),
    "not-jsonrpc": ("", "initialize", "wrote a message that is not JSON-RPC 2.0"),
    "wrong-id": ("", "initialize", "sent a reply for no request waiting (id 9999)"),
    "flood": ("", "tools/list", "wrote a message over 4 MiB"),
    "many-tools": ("", "tools/list", "listed over 200 tools"),
    "newline-name": ("", "tools/list", "cannot be offered to a model as 'echo\\n'"),
    "deep-schema": ("", "tools/list", "the tool 'echo' has an input schema nested more than 32"),
    "big-schema": ("", "tools/list", "the tool 'echo' has an input schema of"),
    "hang-call": ("timeoutSeconds: 1", "tools/call 'echo'", "within 1 s"),
    "bad-result": ("", "initialize", "wrote a message that is not JSON-RPC 2.0"),
    "deep-message": ("", "initialize", "wrote a message nested more than 64 deep"),
    "chatter": ("", "tools/list", "sent more than 64 MiB in one run"),
    "ask-often": ("", "tools/list", "made more than 32 requests of the client"),
    "flood-call": ("", "tools/call 'echo'", "wrote a message over 4 MiB"),
    "endless-call": ("", "tools/call 'echo'", "wrote a message over 4 MiB"),
    "deep-call": ("", "tools/call 'echo'", "wrote a message nested more than 64 deep"),
    "exit-call": ("", "tools/call 'echo'", "exited with code 3: boom: the desk closed"),
}
MID_CALL = {"flood-call", "endless-call", "deep-call", "exit-call"}


def _server(mode: str, settings: str) -> str:
    more = f"\n      {settings}" if settings else ""
    return f"    srv:\n      command: [{sys.executable}, mcp/hostile.py, {mode}]{more}\n"


def _agent(mode: str) -> str:
    return mode.replace("-", "")


def _still_running(modes: Collection[str]) -> list[str]:
    """The command lines of the hostile servers of `modes` still running: those of this test
    alone (another test's, on another worker, may be running now)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "mcp/hostile.py" in argv[:-1] and argv[argv.index("mcp/hostile.py") + 1] in modes:
            found.append(" ".join(argv))
    return found


def _runs(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["fixture"].removesuffix("-run"): f for f in results["fixtures"]}


def test_each_hostile_server_errs_its_own_run_by_name_and_the_others_go_on(
    repo: GitRepo, tmp_path: Path
) -> None:
    modes = {**HOSTILE, "ok": ("", "", ""), "ask-client": ("", "", "")}
    suites = [suite(_agent(m), _server(m, s)) for m, (s, _, _) in modes.items()]
    # the run's own timeout ends a call its server never answers, and the server with it
    timeout = "execution: { timeoutSeconds: 2 }"
    suites.append(suite("late", _server("hang-call", ""), eval_settings=(timeout,)))
    repo.commit("servers", {"agents.yaml": documents(*suites), "mcp/hostile.py": HOSTILE_SERVER})
    script = tmp_path / "mock.yaml"
    script.write_text("replies:\n" + "".join(calls(_agent(m), ECHO) for m in [*modes, "late"]))

    code, results, said = run_for_results(repo.path, "--mock-script", str(script))

    assert not _still_running([*modes, "hang-call"]), "a server outlived its run"

    runs = _runs(results)
    assert runs["ok"]["status"] == "pass", runs["ok"]
    assert code != 0, said
    for mode, (_, asked, message) in HOSTILE.items():
        run = runs[_agent(mode)]
        assert run["status"] == "error", (mode, run["status"])
        error = next(s for s in run["trace"]["steps"] if s["type"] == "error")["content"]
        assert error.startswith("MCP server 'srv'"), (mode, error)
        assert asked in error, (mode, error)
        assert message in error, (mode, error)
    for mode in MID_CALL:  # the call a server broke is named, and what it did
        error = next(s for s in runs[_agent(mode)]["trace"]["steps"] if s["type"] == "error")
        _, asked, message = HOSTILE[mode]
        assert error["content"].startswith(f"MCP server 'srv', answering {asked}, {message}")
    late = runs["late"]
    assert late["trace"]["timed_out"], late
    assert "timed out after 2 s" in late["trace"]["steps"][-1]["content"]
    # a call the server never answers is its tool step too, with the error and the server
    hung = runs["hangcall"]["trace"]["steps"]
    result = next(s for s in hung if s["type"] == "tool_result")
    assert (result["tool"], result["server"], result["is_error"]) == ("srv__echo", "srv", True)
    # the client refuses the server's request to sample a model, and the run goes on
    asked = runs["askclient"]
    assert asked["status"] == "pass", asked
    output = next(s for s in asked["trace"]["steps"] if s["type"] == "tool_result")["output"]
    assert json.loads(output.removeprefix("the client answered: "))["message"], output
    assert "not supported" in output.lower(), output


def test_a_servers_bytes_that_are_not_utf8_are_replaced_and_the_run_goes_on(
    repo: GitRepo, tmp_path: Path
) -> None:
    """A tool description and a call's result holding `ED A0 80` and an escaped lone
    surrogate: each is U+FFFD in the trace, which writes, and the run passes."""
    assertion = "{ type: toolCalled, tool: echo }"
    suites = documents(suite("bytes", _server("bytes", ""), assertion))
    repo.commit("server", {"agents.yaml": suites, "mcp/hostile.py": HOSTILE_SERVER})
    script = tmp_path / "mock.yaml"
    script.write_text("replies:\n" + calls("bytes", ECHO))

    code, results, said = run_for_results(repo.path, "--mock-script", str(script))

    assert code == 0, said
    (run,) = results["fixtures"]
    assert run["status"] == "pass", run
    result = next(s for s in run["trace"]["steps"] if s["type"] == "tool_result")
    assert result["output"] == "a \ufffd\ufffd\ufffd b"


def _answer(request: Request) -> Response:
    """An MCP endpoint answering `initialize` as its path says: too large (as one reply or
    one event), compressed, for another request, not JSON, not JSON-RPC, or never; or
    chattering past the session's bound first."""
    mode = request.path.strip("/")
    if request.method != "POST":
        return Response(405)
    message = request.json()
    if mode in HTTP_MID_CALL and "id" in message and message.get("method") != "initialize":
        return _answer_a_call(message, mode)
    if message.get("method") != "initialize":
        return Response(202)
    if mode == "chatter":  # events each under the bound of one, over the session's in all
        noise = {"jsonrpc": "2.0", "method": "x/chatter", "params": {"x": "x" * (7 << 19)}}
        events = [sse(noise)] * 20
        return Response(stream=EventStream(events, hold_after=20, hold=threading.Event()))
    result = {
        "protocolVersion": message["params"]["protocolVersion"],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "hostile", "version": "1"},
        "instructions": "x" * (6 << 20) if mode in ("flood", "sse-flood") else "",
    }
    if mode == "deep-message":
        result["_meta"] = {"x": nested(100)}
    reply = {
        "jsonrpc": "2.0",
        "id": 9999 if mode == "wrong-id" else message["id"],
        "result": result,
    }
    body = json.dumps(reply).encode()
    if mode == "gzip":
        return Response(raw=gzip.compress(body), headers={"content-encoding": "gzip"})
    if mode == "not-json":
        return Response(raw=b"Welcome!", headers={"content-type": "application/json"})
    if mode == "not-jsonrpc":
        return Response(raw=b'{"hello": "world"}', headers={"content-type": "application/json"})
    if mode == "sse-flood":
        return Response(stream=EventStream([sse(reply)]))
    if mode == "silent":
        return Response(stream=EventStream([sse(reply)], hold_after=0, hold=threading.Event()))
    return Response(raw=body, headers={"content-type": "application/json"})


def _answer_a_call(message: dict[str, Any], mode: str) -> Response:
    """A server whose start goes well: it lists `echo`, and answers a call of it with a JSON
    reply too large or too deep."""
    if message["method"] == "tools/list":
        result: dict[str, Any] = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    elif mode == "flood-call":
        result = {"content": [{"type": "text", "text": "x" * (6 << 20)}]}
    else:
        result = {"content": [], "_meta": nested(100)}
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return Response(raw=json.dumps(reply).encode(), headers={"content-type": "application/json"})


HTTP_MID_CALL = {
    "flood-call": "MCP server 'srv', answering tools/call 'echo', sent a reply over 4 MiB",
    "deep-call": "MCP server 'srv', answering tools/call 'echo', sent a message nested more",
}
HTTP_HOSTILE = {
    "flood": ("", "sent a reply over 4 MiB"),
    "gzip": ("", "answered with a compressed reply (gzip)"),
    "wrong-id": ("", "sent a reply for no request waiting (id 9999)"),
    "not-json": ("", "initialize failed: "),
    "silent": ("connectTimeoutSeconds: 1", "did not start within 1 s"),
    "not-jsonrpc": ("", "initialize failed: Failed to parse JSON response: "),
    "deep-message": ("", "sent a message nested more than 64 deep"),
    "sse-flood": ("", "initialize failed: SSE stream failed"),
    "chatter": ("", "sent more than 64 MiB in one run"),
    **{mode: ("", said) for mode, said in HTTP_MID_CALL.items()},
}


def test_each_hostile_http_server_errs_its_own_run_by_name(repo: GitRepo, tmp_path: Path) -> None:
    server = LoopbackServer(_answer)
    try:
        suites = [
            suite(_agent(mode), f"    srv:\n      url: {server.url}/{mode}\n      {settings}\n")
            for mode, (settings, _) in HTTP_HOSTILE.items()
        ]
        repo.commit("servers", {"agents.yaml": documents(*suites)})
        script = tmp_path / "mock.yaml"
        script.write_text("replies:\n" + "".join(calls(_agent(m), ECHO) for m in HTTP_HOSTILE))
        code, results, said = run_for_results(repo.path, "--mock-script", str(script))
    finally:
        server.close()
    assert code != 0, said
    runs = _runs(results)
    for mode, (_, message) in HTTP_HOSTILE.items():
        run = runs[_agent(mode)]
        error = next(s for s in run["trace"]["steps"] if s["type"] == "error")["content"]
        assert (run["status"], error[:16]) == ("error", "MCP server 'srv'"), (mode, error)
        assert message in error, (mode, error)
        assert "initialize" in error or error.startswith(HTTP_MID_CALL.get(mode, "-")), error


SECRET = "sk-environment-secret-0123456789"  # the job's key (support.agentenv.run_gate)


def _alive_as(pid: int, uids: set[int]) -> bool:
    """Whether `pid` is a live process (not a zombie) of one of `uids`."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return fields["State"].split()[0] != "Z" and int(fields["Uid"].split()[0]) in uids


@needs_root
def test_an_action_servers_stray_reads_no_secret_and_does_not_outlive_the_job(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """A stdio server in the action leaves a process in a session of its own, deaf to
    SIGTERM (ending the server's group misses it), and reads every environment it can. It
    runs as the side's agent user: no environment holds the job's key, and the stray is
    ended with the job."""
    python, isolation = agent_python()
    server = f"    srv:\n      command: [{python}, mcp/hostile.py, stray]\n"
    checked = "{ type: toolCalled, tool: srv.echo }"
    base = {"evals.yaml": suite("desk", server, checked), "mcp/hostile.py": HOSTILE_SERVER}
    head = {"mcp/hostile.py": HOSTILE_SERVER + "\n# changed\n"}
    event = open_pr(workspace, github, base, head, suite={})
    model.script("Do it.", tool_call("echo", {}), text("done"))

    run = run_gate(
        workspace,
        github,
        event,
        inputs={"agent-isolation": isolation},
        OPENAI_BASE_URL=model.base_url,
    )

    said = run.stdout + run.stderr
    runs = {f["side"]: f for f in run.results()["fixtures"]}
    assert {side: r["status"] for side, r in runs.items()} == {"base": "pass", "head": "pass"}
    strays = []
    for result in runs.values():
        step = next(s for s in result["trace"]["steps"] if s["type"] == "tool_result")
        seen = json.loads(step["output"])
        assert seen["environments"]["own"], seen  # it read at least its own
        assert SECRET not in step["output"], said
        strays.append(seen["stray"])
    if isolation == "user":
        assert not [pid for pid in strays if _alive_as(pid, {AGENT_UID, AGENT_UID + 1})], strays


def test_a_replayed_tool_a_twin_makes_ambiguous_is_neither_replayed_nor_run(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The base's fixture replays `refund_order`, its one server's side-effecting tool; the
    pull request adds a second server that lists a `refund_order` too. The bare name could
    be either, so neither was replayed, and the model's call of the first ran it: a refund
    made. Now neither is replayed nor run, and the run's result says why."""
    made = {name: tmp_path / f"{name}-refunded" for name in ("orders", "audit")}
    servers = "".join(
        f"    {name}:\n      command: [{sys.executable}, mcp/hostile.py, refunds, {made[name]}]\n"
        for name in made
    )
    replayed = '  toolReplay:\n    - { tool: refund_order, output: "refunded A-1" }\n'
    desk = suite("desk", servers, extra=replayed)
    repo.commit("a desk", {"agents.yaml": desk, "mcp/hostile.py": HOSTILE_SERVER})
    script = tmp_path / "mock.yaml"
    refund = "name: orders__refund_order, arguments: { order_id: A-1 }"
    script.write_text("replies:\n" + calls("desk", refund))

    code, results, said = run_for_results(repo.path, "--mock-script", str(script))

    assert not [path for path in made.values() if path.exists()], "a refund was made"
    assert code == 0, said  # the fixture asks only that the model finish: it did
    (run,) = results["fixtures"]
    answered = [s for s in run["trace"]["steps"] if s["type"] == "tool_result"]
    assert answered[0]["source"] == "replay", answered
    said_of = str(answered[0]["output"])
    assert said_of.startswith("error: toolReplay names refund_order, which could be orders__")
    assert "it ran neither" in said_of
