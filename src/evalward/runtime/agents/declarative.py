"""Run a declarative Agent (seed 003: models, system, tools) with evalward's own tool loop."""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import replace

from evalward.errors import McpFailure, ProviderError, ProviderUnavailable
from evalward.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    RunLabels,
)
from evalward.providers.registry import MeteredProvider, Providers
from evalward.providers.tool_choice import choice_for
from evalward.rundata.spending import OwnCalls
from evalward.rundata.trace import Fallback, StepType, Trace
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.tools.tools import ToolExecutor, ToolResult


async def run_declarative(
    agent: ResolvedAgent,
    conversation: list[ChatMessage],
    providers: Providers,
    labels: RunLabels,
    trace: Trace,
    executor: ToolExecutor,
    *,
    budget: OwnCalls | None = None,
) -> None:
    """Drive the tool loop until the model answers without tool calls or max turns is hit.

    Steps are appended to `trace` as they happen, so a timeout keeps what was done. `models`
    are tried in order: a call that fails after its retries moves the run to the next model
    for good, and the trace records the fallback. Each call is held to `budget` (None: no
    budget is set): one it refuses is never sent, and the run ends with an error saying so.
    """
    messages = opening_messages(agent)
    for message in conversation:
        messages.append(message)
        trace.add(StepType.input, content=message.content)
    await continue_declarative(agent, messages, providers, labels, trace, executor, budget=budget)


def opening_messages(agent: ResolvedAgent) -> list[ChatMessage]:
    """What every conversation with the agent starts with: its system prompt."""
    return [ChatMessage(role="system", content=agent.system_prompt)] if agent.system_prompt else []


async def continue_declarative(
    agent: ResolvedAgent,
    messages: list[ChatMessage],
    providers: Providers,
    labels: RunLabels,
    trace: Trace,
    executor: ToolExecutor,
    *,
    budget: OwnCalls | None = None,
) -> None:
    """The tool loop from `messages` (the history so far, which it extends) to the agent's
    answer: one run, or one turn of a conversation."""
    specs = executor.offered()
    offered = trace.offered_tools if trace.offered_tools is not None else []
    trace.offered_tools = [*offered, *(n for n in executor.offered_names() if n not in offered)]
    models = list(agent.spec.models)
    for number in range(agent.spec.max_turns):
        request = ChatRequest(
            model="",
            messages=tuple(messages),
            tools=specs,
            temperature=agent.spec.temperature,
            max_tokens=agent.spec.max_tokens,
            labels=labels,
            tool_choice=choice_for(agent.spec.tool_choice, number),
        )
        answered = await _complete(models, request, providers, trace, budget)
        if answered is None:
            return
        model_id, response, elapsed_ms = answered
        _record_response(trace, response, model_id, elapsed_ms, executor)
        messages.append(
            ChatMessage(role="assistant", content=response.content, tool_calls=response.tool_calls)
        )
        if not response.tool_calls or not await _call_tools(response, executor, trace, messages):
            return
    trace.add(
        StepType.error,
        content=f"the agent reached maxTurns ({agent.spec.max_turns}) without a final answer",
    )


async def _call_tools(
    response: ChatResponse, executor: ToolExecutor, trace: Trace, messages: list[ChatMessage]
) -> bool:
    """Run the reply's tool calls, each result a step and a message; False when the run
    ends here (an MCP server broke the protocol or a bound, or a command tool printed past
    its bound: its error step says so)."""
    for call in response.tool_calls:
        tool, server = executor.recorded(call.name)
        started = time.time()
        step = {"tool": tool, "server": server, "call_id": call.id, "started_at": started}
        try:
            result = await executor.execute(call)
        except McpFailure as failure:
            result = ToolResult(str(failure), True, "mcp", failure=str(failure))
        trace.add(
            StepType.tool_result,
            output=result.output,
            is_error=result.is_error,
            source=result.source,
            duration_ms=(time.time() - started) * 1000,
            **step,
        )
        if result.failure is not None:
            trace.add(StepType.error, content=result.failure)
            return False
        messages.append(ChatMessage(role="tool", content=result.output, tool_call_id=call.id))
    return True


class _Refused(Exception):
    """The budget refused a call before it was sent (`OwnCalls.admit`)."""


async def _complete(
    models: list[str],
    request: ChatRequest,
    providers: Providers,
    trace: Trace,
    budget: OwnCalls | None,
) -> tuple[str, ChatResponse, float] | None:
    """Ask the current model; on failure fall back down the list. None: all failed, or the
    budget refused the call (an error of the agent's, not an outage: no other model is
    tried)."""
    failures: list[str] = []
    outage = True

    mocked = providers.override is not None  # a mock script's replies are free

    async def admit(worst_usd: float = 0.0) -> None:
        """Run only when a provider is to be called (a reply from the cache is free), with
        the call's cost at its worst, which the budget holds until its reply."""
        if budget is not None and (refusal := await budget.admit(0.0 if mocked else worst_usd)):
            raise _Refused(refusal)

    while models:
        model_id = models[0]
        provider, model = providers.resolve(model_id)
        started = time.monotonic()
        trace.model_calls += 1
        try:
            asked = replace(request, model=model)
            with nullcontext() if budget is None else budget.in_flight():
                if isinstance(provider, MeteredProvider):
                    response = await provider.complete(asked, before_call=admit)
                else:
                    await admit()
                    response = await provider.complete(asked)
        except _Refused as refused:
            trace.model_calls -= 1  # never sent
            trace.budget_refused = True
            trace.add(StepType.error, content=f"a model call was refused: {refused}")
            return None
        except ProviderError as exc:
            failures.append(f"{model_id}: {exc}")
            outage = outage and isinstance(exc, ProviderUnavailable)
            models.pop(0)
            if models:
                trace.fallbacks.append(
                    Fallback(
                        from_model=model_id,
                        to_model=models[0],
                        reason=str(exc),
                        at_step=len(trace.steps) + 1,
                    )
                )
            continue
        if response.cached:
            trace.cache_hits += 1
        elif budget is not None:
            budget.spend(0.0 if mocked else response.usage.cost_usd)
        return model_id, response, (time.monotonic() - started) * 1000
    trace.add(StepType.error, content="; ".join(failures) or "no model to call")
    trace.provider_unavailable = bool(failures) and outage
    return None


def _record_response(
    trace: Trace,
    response: ChatResponse,
    model_id: str,
    elapsed_ms: float,
    executor: ToolExecutor,
) -> None:
    """One model reply becomes a final step, or optional text plus one step per tool call.

    The call's usage and duration ride on the first step the reply produced; every step
    keeps the reply's stop reason, so an answer cut at the token limit shows as such.
    """
    started_at = time.time() - elapsed_ms / 1000
    timing = {
        "model": model_id,
        "started_at": started_at,
        "cached": response.cached,
        "stop_reason": response.stop_reason or None,
    }
    first = {"duration_ms": elapsed_ms, "usage": response.usage}
    if not response.tool_calls:
        trace.add(StepType.final, content=response.content, **timing, **first)
        return
    if response.content:
        trace.add(StepType.assistant, content=response.content, **timing, **first)
        first = {}
    for call in response.tool_calls:
        tool, server = executor.recorded(call.name)
        trace.add(
            StepType.tool_call,
            tool=tool,
            server=server,
            call_id=call.id,
            arguments=call.arguments,
            **timing,
            **first,
        )
        first = {}
