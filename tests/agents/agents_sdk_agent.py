"""An agent on the OpenAI Agents SDK, as its documentation writes one: an `Agent` with a
function tool, run by `Runner` — the Responses API, through OPENAI_BASE_URL — and its final
output printed. No adapter.

    agents_sdk_agent.py QUESTION [--stream] [--export-traces]

`--export-traces` turns the SDK's own tracing back on, as code that calls
`set_tracing_disabled(False)` would: its exporter then sends to api.openai.com (once: the
attempt is what shows, and its retries' backoff would keep the process seconds at exit).
"""

import asyncio
import sys

from agents import Agent, Runner, function_tool, set_tracing_disabled, tracing


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order's shipping status."""
    return f'{{"order_id": "{order_id}", "status": "shipped"}}'


agent = Agent(
    name="Support",
    instructions="You are Acme's support agent. Look orders up before answering.",
    tools=[lookup_order],
    model="gpt-4.1-mini",
)


async def streamed(question: str) -> str:
    result = Runner.run_streamed(agent, question)
    async for _ in result.stream_events():
        pass
    return str(result.final_output)


def main() -> None:
    question = sys.argv[1]
    if "--export-traces" in sys.argv:
        set_tracing_disabled(False)
        tracing.default_exporter().max_retries = 1  # one attempt, no backoff before giving up
    if "--stream" in sys.argv:
        print(asyncio.run(streamed(question)))
    else:
        print(Runner.run_sync(agent, question).final_output)


if __name__ == "__main__":
    main()
