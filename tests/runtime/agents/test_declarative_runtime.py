"""evalward's own tool loop: fallbacks, maxTurns, tool offering and implementations, the
response cache and the side-effect refusal, against the scripted model server."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from evalward.plan.preflight.preflight import side_effect_refusal
from evalward.providers.base import RunLabels
from evalward.providers.config import provider_config
from evalward.providers.registry import Providers, build_providers
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.models import EvalFixtureSpec, FixtureInput, ToolReplay
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.agents.runner import AgentRunner, FixtureRun
from evalward.runtime.tools.tools import FixtureTools
from fakes.model_server import Reply, ScriptedModelServer, error, text, tool_call
from support.limits import subprocess_limit

pytestmark = pytest.mark.integration

FAST_RETRY = {"attempts": 2, "baseDelaySeconds": 0.001, "maxDelaySeconds": 0.01}
LOOKUP = {
    "name": "lookup_order",
    "description": "Look up an order.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
}


def make_providers(
    model: ScriptedModelServer, tmp_path: Path, cache: str = "off", **env: str
) -> Providers:
    config = provider_config(
        {
            "providers": {"openai": {"retry": FAST_RETRY}, "anthropic": {"retry": FAST_RETRY}},
            "cache": {"mode": cache, "dir": str(tmp_path / "cache")},
        }
    )
    return build_providers(
        {
            "OPENAI_BASE_URL": model.base_url,
            "ANTHROPIC_BASE_URL": model.anthropic_url,
            "ANTHROPIC_API_KEY": "sk-ant-test",
            **env,
        },
        config=config,
    )


def agent(spec: dict[str, Any], root: Path) -> ResolvedAgent:
    return ResolvedAgent("bot", AgentSpec.model_validate(spec), "You are a bot.", root)


def run(
    bot: ResolvedAgent,
    providers: Providers,
    prompt: str = "Where is order 12345?",
    *,
    replay: list[dict[str, Any]] | None = None,
    shadow: list[str] | None = None,
    rep: int = 0,
    env: dict[str, str] | None = None,
    close: bool = True,
) -> Trace:
    async def go() -> Trace:
        runner = AgentRunner(bot, providers, env or {"PATH": "/usr/bin:/bin"}, kill_grace=0.2)
        try:
            return await runner.run(
                FixtureRun(
                    labels=RunLabels(agent="bot", fixture="fx", rep=rep),
                    fixture_input=FixtureInput(type="prompt", payload={"prompt": prompt}),
                    tools=FixtureTools(
                        [ToolReplay.model_validate(r) for r in replay or []],
                        frozenset(shadow or []),
                    ),
                    timeout_seconds=subprocess_limit(),  # a guard against a hang, not a bound
                )
            )
        finally:
            await runner.aclose()
            if close:
                await providers.aclose()

    return asyncio.run(go())


def test_a_failing_model_falls_back_and_the_trace_says_so(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script(lambda body: body["model"] == "broken", error(500))
    model.script(lambda body: body["model"] == "claude-test", text("answer: 4"))
    bot = agent({"models": ["openai/broken", "anthropic/claude-test"]}, tmp_path)
    trace = run(bot, make_providers(model, tmp_path))
    assert trace.final_output == "answer: 4"
    assert trace.error is None
    (fallback,) = trace.fallbacks
    assert (fallback.from_model, fallback.to_model) == ("openai/broken", "anthropic/claude-test")
    assert "HTTP 500 after 2 attempts" in fallback.reason
    assert trace.steps[-1].model == "anthropic/claude-test"
    assert [c.path for c in model.calls] == ["/v1/chat/completions"] * 2 + ["/v1/messages"]


def test_when_every_model_fails_the_run_ends_with_an_error_step(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script(lambda body: True, error(503))
    bot = agent({"models": ["openai/a", "openai/b"]}, tmp_path)
    trace = run(bot, make_providers(model, tmp_path))
    assert trace.steps[-1].type is StepType.error
    assert "openai/a: openai: HTTP 503" in trace.steps[-1].content
    assert "openai/b: openai: HTTP 503" in trace.steps[-1].content


def test_max_turns_ends_with_a_clear_error_step(model: ScriptedModelServer, tmp_path: Path) -> None:
    model.script("order", tool_call("lookup_order", {"order_id": "1"}))
    bot = agent(
        {
            "models": ["openai/gpt-test"],
            "maxTurns": 2,
            "tools": [{**LOOKUP, "mock": {"output": "x"}}],
        },
        tmp_path,
    )
    trace = run(bot, make_providers(model, tmp_path))
    assert len(model.calls) == 2
    assert trace.steps[-1].type is StepType.error
    assert trace.steps[-1].content == "the agent reached maxTurns (2) without a final answer"


def test_disabled_tools_are_not_offered_and_options_are_sent(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("order", text("ok"))
    bot = agent(
        {
            "models": ["openai/gpt-test"],
            "temperature": 0.2,
            "maxTokens": 77,
            "tools": [LOOKUP, {"type": "send_email", "enabled": False}],
        },
        tmp_path,
    )
    run(bot, make_providers(model, tmp_path))
    body = model.calls[0].body
    assert [t["function"]["name"] for t in body["tools"]] == ["lookup_order"]
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 77


def test_mock_output_is_templated_from_the_arguments(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("order", tool_call("lookup_order", {"order_id": "12345"}), text("done"))
    tool = {**LOOKUP, "mock": {"output": {"order": "{{ order_id }}", "status": "shipped"}}}
    trace = run(
        agent({"models": ["openai/gpt-test"], "tools": [tool]}, tmp_path),
        make_providers(model, tmp_path),
    )
    result = next(s for s in trace.steps if s.type is StepType.tool_result)
    assert json.loads(result.output or "") == {"order": "12345", "status": "shipped"}
    assert result.source == "mock"
    second = model.calls[1].body["messages"][-1]
    assert second["role"] == "tool" and "12345" in second["content"]


def test_tool_replay_matches_by_arguments_in_order(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script(
        "order",
        tool_call("lookup_order", {"order_id": "B", "verbose": True}),
        tool_call("lookup_order", {"order_id": "A"}),
        tool_call("lookup_order", {"order_id": "A"}),
        tool_call("lookup_order", {"order_id": "A"}),
        text("done"),
    )
    replay = [
        {"tool": "lookup_order", "arguments": {"order_id": "A"}, "output": "A first"},
        {"tool": "lookup_order", "arguments": {"order_id": "B"}, "output": {"status": "B"}},
        {
            "tool": "lookup_order",
            "arguments": {"order_id": "A"},
            "output": "A gone",
            "isError": True,
        },
    ]
    tool = {**LOOKUP, "mock": {"output": "the mock must not answer replayed tools"}}
    trace = run(
        agent({"models": ["openai/gpt-test"], "tools": [tool]}, tmp_path),
        make_providers(model, tmp_path),
        replay=replay,
    )
    results = [s for s in trace.steps if s.type is StepType.tool_result]
    assert [(r.output, r.is_error, r.source) for r in results[:3]] == [
        ('{"status": "B"}', False, "replay"),
        ("A first", False, "replay"),
        ("A gone", True, "replay"),
    ]
    assert results[3].is_error
    assert "no recorded output left in toolReplay" in (results[3].output or "")


def test_shadowed_tools_are_recorded_but_never_executed(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    marker = tmp_path / "sent.txt"
    script = tmp_path / "send.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('sent')\nprint('sent')\n")
    model.script("order", tool_call("send_email", {"to": "a@b.c"}), text("done"))
    tool = {"name": "send_email", "command": [sys.executable, str(script)], "sideEffects": True}
    bot = agent({"models": ["openai/gpt-test"], "tools": [tool]}, tmp_path)
    trace = run(bot, make_providers(model, tmp_path), shadow=["send_email"])
    call = next(s for s in trace.steps if s.type is StepType.tool_call)
    result = next(s for s in trace.steps if s.type is StepType.tool_result)
    assert call.tool == "send_email" and call.arguments == {"to": "a@b.c"}
    assert result.source == "shadow"
    assert json.loads(result.output or "")["shadowed"] is True
    assert not marker.exists()


def test_side_effecting_command_tools_must_be_shadowed_or_replayed() -> None:
    spec = AgentSpec.model_validate(
        {
            "models": ["openai/gpt-test"],
            "tools": [
                {"name": "refund", "command": ["refund.py"], "sideEffects": True},
                {"name": "off", "command": ["x.py"], "sideEffects": True, "enabled": False},
                {"name": "canned", "mock": {"output": "ok"}, "sideEffects": True},
            ],
        }
    )

    def fixture(**extra: object) -> EvalFixtureSpec:
        base = {"targetAgent": "bot", "input": {"type": "prompt", "payload": {"prompt": "x"}}}
        assertions = [{"type": "contains", "value": "x"}]
        return EvalFixtureSpec.model_validate({**base, "assertions": assertions, **extra})

    refused = side_effect_refusal("bot", spec.tools, "fx", fixture())
    assert refused is not None
    assert re.search(r"side-effecting tool 'refund'.*shadowTools: \[refund\]", refused)
    assert side_effect_refusal("bot", spec.tools, "fx", fixture(shadowTools=["refund"])) is None
    replayed = fixture(toolReplay=[{"tool": "refund", "output": "ok"}])
    assert side_effect_refusal("bot", spec.tools, "fx", replayed) is None


def test_command_tools_get_json_on_stdin_a_limited_env_and_the_checkout_as_cwd(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "echo.py").write_text(
        "import json, os, sys\n"
        "args = json.load(sys.stdin)\n"
        "print(json.dumps({'args': args, 'cwd': os.getcwd(),"
        " 'allowed': os.environ.get('ALLOWED'), 'secret': os.environ.get('OPENAI_API_KEY')}))\n"
    )
    model.script("order", tool_call("echo", {"x": 1}), text("done"))
    tool = {
        "name": "echo",
        "command": {"run": [sys.executable, "tools/echo.py"], "env": ["ALLOWED"]},
    }
    bot = agent({"models": ["openai/gpt-test"], "tools": [tool]}, tmp_path)
    env = {"PATH": "/usr/bin:/bin", "ALLOWED": "yes", "OPENAI_API_KEY": "sk-must-not-leak"}
    trace = run(bot, make_providers(model, tmp_path), env=env)
    result = next(s for s in trace.steps if s.type is StepType.tool_result)
    assert result.source == "command" and not result.is_error
    assert json.loads(result.output or "") == {
        "args": {"x": 1},
        "cwd": str(tmp_path),
        "allowed": "yes",
        "secret": None,
    }


def test_a_command_tool_that_hangs_is_killed_at_its_timeout(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    (tmp_path / "hang.py").write_text("import time\ntime.sleep(60)\n")
    model.script("order", tool_call("hang", {}), text("done"))
    tool = {"name": "hang", "command": {"run": [sys.executable, "hang.py"], "timeoutSeconds": 0.3}}
    trace = run(
        agent({"models": ["openai/gpt-test"], "tools": [tool]}, tmp_path),
        make_providers(model, tmp_path),
    )
    result = next(s for s in trace.steps if s.type is StepType.tool_result)
    assert result.is_error
    assert "timed out after 0.3 s" in (result.output or "")
    assert trace.final_output == "done"


def test_cache_hits_and_misses_and_reps_never_share_a_reply(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("order", text("fresh"))
    bot = agent({"models": ["openai/gpt-test"]}, tmp_path)
    first = run(bot, make_providers(model, tmp_path, cache="read-write"))
    assert (first.cache_hits, len(model.calls)) == (0, 1)
    again = run(bot, make_providers(model, tmp_path, cache="read-write"))
    assert again.cache_hits == 1 and again.steps[-1].cached
    assert again.final_output == "fresh"
    assert len(model.calls) == 1
    other_rep = run(bot, make_providers(model, tmp_path, cache="read-write"), rep=1)
    assert other_rep.cache_hits == 0
    assert len(model.calls) == 2
    read_only = run(bot, make_providers(model, tmp_path, cache="read-only"), rep=2)
    assert read_only.cache_hits == 0
    run(bot, make_providers(model, tmp_path, cache="read-only"), rep=2)
    assert len(model.calls) == 4  # read-only never stored rep 2's reply
    off = run(bot, make_providers(model, tmp_path, cache="off"))
    assert off.cache_hits == 0 and len(model.calls) == 5


def test_a_run_past_its_timeout_is_marked_timed_out(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("order", Reply(content="too late", delay=3))
    bot = agent({"models": ["openai/gpt-test"]}, tmp_path)
    providers = make_providers(model, tmp_path)

    async def go() -> Trace:
        runner = AgentRunner(bot, providers, {"PATH": "/usr/bin:/bin"}, kill_grace=0.2)
        try:
            return await runner.run(
                FixtureRun(
                    labels=RunLabels(agent="bot", fixture="fx"),
                    fixture_input=FixtureInput(type="prompt", payload={"prompt": "order 1?"}),
                    tools=FixtureTools(),
                    timeout_seconds=0.3,
                )
            )
        finally:
            await runner.aclose()
            await providers.aclose()

    trace = asyncio.run(go())
    assert trace.timed_out is True
    assert trace.error == "the run timed out after 0.3 s (spec.execution.timeoutSeconds)"
    assert trace.final_output == ""
