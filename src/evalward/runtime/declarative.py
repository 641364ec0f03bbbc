"""Run a declarative Agent (seed 003: models, system, tools) with evalward's own tool loop."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from evalward.errors import ProviderError
from evalward.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    RunLabels,
    ToolCall,
    ToolSpec,
)
from evalward.providers.registry import Providers
from evalward.resources.models import AgentSpec, Tool
from evalward.runtime.trace import StepType, Trace


@dataclass(frozen=True)
class DeclarativeAgent:
    """An Agent spec with its system prompt resolved (systemFile read from its checkout)."""

    name: str
    spec: AgentSpec
    system_prompt: str


async def run_declarative(
    agent: DeclarativeAgent,
    conversation: list[ChatMessage],
    providers: Providers,
    labels: RunLabels,
    trace: Trace,
) -> None:
    """Drive the tool loop until the model answers without tool calls or max turns is hit.

    Steps are appended to `trace` as they happen, so a timeout keeps what was done.
    """
    tools = {t.tool_name: t for t in agent.spec.tools if t.enabled}
    specs = tuple(
        ToolSpec(name=name, description=t.description, parameters=t.parameters)
        for name, t in tools.items()
    )
    messages: list[ChatMessage] = []
    if agent.system_prompt:
        messages.append(ChatMessage(role="system", content=agent.system_prompt))
    for message in conversation:
        messages.append(message)
        trace.add(StepType.input, content=message.content)

    model_id = agent.spec.models[0]
    provider, model = providers.resolve(model_id)
    for _turn in range(agent.spec.max_turns):
        request = ChatRequest(
            model=model,
            messages=tuple(messages),
            tools=specs,
            temperature=agent.spec.temperature,
            max_tokens=agent.spec.max_tokens,
            labels=labels,
        )
        started = time.monotonic()
        try:
            response = await provider.complete(request)
        except ProviderError as exc:
            trace.add(StepType.error, content=str(exc), model=model_id)
            return
        elapsed_ms = (time.monotonic() - started) * 1000
        _record_response(trace, response, model_id, elapsed_ms)
        messages.append(
            ChatMessage(role="assistant", content=response.content, tool_calls=response.tool_calls)
        )
        if not response.tool_calls:
            return
        for call in response.tool_calls:
            output, is_error = _execute_tool(tools.get(call.name), call)
            trace.add(
                StepType.tool_result,
                tool=call.name,
                call_id=call.id,
                output=output,
                is_error=is_error,
                started_at=time.time(),
            )
            messages.append(ChatMessage(role="tool", content=output, tool_call_id=call.id))
    trace.add(
        StepType.error,
        content=f"the agent reached maxTurns ({agent.spec.max_turns}) without a final answer",
    )


def _record_response(
    trace: Trace, response: ChatResponse, model_id: str, elapsed_ms: float
) -> None:
    """One model reply becomes a final step, or optional text plus one step per tool call.

    The call's usage and duration ride on the first step the reply produced.
    """
    started_at = time.time() - elapsed_ms / 1000
    timing = {"model": model_id, "started_at": started_at}
    first = {"duration_ms": elapsed_ms, "usage": response.usage}
    if not response.tool_calls:
        trace.add(StepType.final, content=response.content, **timing, **first)
        return
    if response.content:
        trace.add(StepType.assistant, content=response.content, **timing, **first)
        first = {}
    for call in response.tool_calls:
        trace.add(
            StepType.tool_call,
            tool=call.name,
            call_id=call.id,
            arguments=call.arguments,
            **timing,
            **first,
        )
        first = {}


def _execute_tool(tool: Tool | None, call: ToolCall) -> tuple[str, bool]:
    if tool is None:
        return f"error: no tool named {call.name!r} is available", True
    if tool.mock is not None:
        output = tool.mock.output
        return (output if isinstance(output, str) else json.dumps(output)), False
    return f"error: tool {call.name!r} has no implementation (give it `mock.output`)", True
