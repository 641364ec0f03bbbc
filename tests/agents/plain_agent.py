"""A plain agent on the official SDKs, as a team writes one with no adapter: the question is
its first argument, the answer its only stdout, and a `lookup_order` tool loop in between.

    plain_agent.py QUESTION [--api chat|responses|messages] [--stream] [--chatty]
                            [--events] [--embed]

`--chatty` prints log lines to stdout first, as frameworks do; `--events` also writes its
tool calls to $EVALWARD_EVENTS; `--embed` embeds the question first (a retrieval step).
"""

import argparse
import json
import os
import sys

import anthropic
import openai

TOOL = {
    "name": "lookup_order",
    "description": "Look up an order's shipping status.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
}


def lookup_order(arguments: dict) -> str:
    return json.dumps({"order_id": arguments.get("order_id"), "status": "shipped"})


def emit(event: dict) -> None:
    with open(os.environ["EVALWARD_EVENTS"], "a") as events:
        events.write(json.dumps(event) + "\n")


def chat(question: str, stream: bool, events: bool) -> str:
    client = openai.OpenAI()
    messages: list = [{"role": "user", "content": question}]
    tools = [{"type": "function", "function": TOOL}]
    for _ in range(4):
        if stream:
            with client.chat.completions.stream(
                model="gpt-4.1-mini", messages=messages, tools=tools
            ) as streamed:
                message = streamed.get_final_completion().choices[0].message
        else:
            reply = client.chat.completions.create(
                model="gpt-4.1-mini", messages=messages, tools=tools
            )
            message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments or "{}")
            if events:
                emit({"type": "tool_call", "tool": call.function.name, "arguments": arguments})
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": lookup_order(arguments)}
            )
    return "gave up"


def responses(question: str, stream: bool, events: bool) -> str:
    client = openai.OpenAI()
    items: list = [{"role": "user", "content": question}]
    tools = [{"type": "function", "strict": False, **TOOL}]
    for _ in range(4):
        if stream:
            with client.responses.stream(model="gpt-4.1-mini", input=items, tools=tools) as s:
                reply = s.get_final_response()
        else:
            reply = client.responses.create(model="gpt-4.1-mini", input=items, tools=tools)
        calls = [item for item in reply.output if item.type == "function_call"]
        if not calls:
            return reply.output_text
        for call in calls:
            arguments = json.loads(call.arguments or "{}")
            if events:
                emit({"type": "tool_call", "tool": call.name, "arguments": arguments})
            items.append(call.model_dump(exclude_none=True))
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": lookup_order(arguments),
                }
            )
    return "gave up"


def messages(question: str, stream: bool, events: bool) -> str:
    client = anthropic.Anthropic()
    history: list = [{"role": "user", "content": question}]
    tools = [
        {
            "name": TOOL["name"],
            "description": TOOL["description"],
            "input_schema": TOOL["parameters"],
        }
    ]
    for _ in range(4):
        if stream:
            with client.messages.stream(
                model="claude-haiku-4-5", max_tokens=512, messages=history, tools=tools
            ) as streamed:
                reply = streamed.get_final_message()
        else:
            reply = client.messages.create(
                model="claude-haiku-4-5", max_tokens=512, messages=history, tools=tools
            )
        content = [block.model_dump(exclude_none=True) for block in reply.content]
        history.append({"role": "assistant", "content": content})
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in reply.content if block.type == "text")
        results = []
        for use in uses:
            if events:
                emit({"type": "tool_call", "tool": use.name, "arguments": use.input})
            results.append(
                {"type": "tool_result", "tool_use_id": use.id, "content": lookup_order(use.input)}
            )
        history.append({"role": "user", "content": results})
    return "gave up"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("question")
    parser.add_argument("--api", default="chat", choices=["chat", "responses", "messages"])
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--chatty", action="store_true")
    parser.add_argument("--events", action="store_true")
    parser.add_argument("--embed", action="store_true")
    args = parser.parse_args()
    if args.chatty:
        print("╭─ agent starting ─╮")
        print("{'step': 1, 'note': 'not JSON, a framework log'}")
    if args.embed:
        vector = openai.OpenAI().embeddings.create(
            model="text-embedding-3-small", input=args.question
        )
        print(f"embedded into {len(vector.data[0].embedding)} numbers", file=sys.stderr)
    loop = {"chat": chat, "responses": responses, "messages": messages}[args.api]
    print(loop(args.question, args.stream, args.events))


if __name__ == "__main__":
    main()
