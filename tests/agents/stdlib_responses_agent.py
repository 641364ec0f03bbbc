"""An agent with no dependencies that speaks the OpenAI Responses API, streamed, over plain
HTTP: what an SDK does, written out, for the action's sandbox where no SDK is installed.

    stdlib_responses_agent.py QUESTION

The question is its argument and the answer its stdout. It asks for `lookup_order`, answers
the call, and writes one `assistant` event to $EVALWARD_EVENTS saying it did.
"""

import json
import os
import sys
import urllib.request

URL = os.environ["OPENAI_BASE_URL"] + "/responses"
TOOL = {"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}


def stream(items: list) -> dict:
    """One streamed call; the response its `response.completed` event carries."""
    body = {"model": "gpt-4.1-mini", "input": items, "tools": [TOOL], "stream": True}
    request = urllib.request.Request(URL, data=json.dumps(body).encode(), method="POST")
    request.add_header("content-type", "application/json")
    request.add_header("authorization", "Bearer " + os.environ["OPENAI_API_KEY"])
    with urllib.request.urlopen(request, timeout=60) as reply:
        for raw in reply:
            line = raw.decode().strip()
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "response.completed":
                    return event["response"]
    raise SystemExit("the stream ended without response.completed")


def main() -> None:
    items: list = [{"role": "user", "content": sys.argv[1]}]
    for _ in range(4):
        response = stream(items)
        calls = [item for item in response["output"] if item["type"] == "function_call"]
        if not calls:
            text = "".join(
                part["text"]
                for item in response["output"]
                if item["type"] == "message"
                for part in item["content"]
            )
            with open(os.environ["EVALWARD_EVENTS"], "w") as events:
                events.write(json.dumps({"type": "assistant", "content": "looked it up"}) + "\n")
            print(text)
            return
        for call in calls:
            items.append(call)
            result = {
                "order_id": json.loads(call["arguments"]).get("order_id"),
                "status": "shipped",
            }
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call["call_id"],
                    "output": json.dumps(result),
                }
            )
    print("gave up")


if __name__ == "__main__":
    main()
