"""A bring-your-own agent for tests written against the official `openai` and `anthropic`
SDKs with their default configuration: the clients read OPENAI_BASE_URL / OPENAI_API_KEY and
ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY from the environment, as agents in the wild do."""

import json
import sys

import anthropic
import openai

request = json.loads(sys.stdin.readline())
prompt = request["messages"][-1]["content"]

chat = openai.OpenAI().chat.completions.create(
    model="gpt-4.1-mini",
    messages=[{"role": "user", "content": prompt}],
    response_format={"type": "json_object"},
)
message = anthropic.Anthropic().messages.create(
    model="claude-haiku-4-5",
    max_tokens=100,
    messages=[{"role": "user", "content": prompt}],
)
answer = f"{chat.choices[0].message.content} / {message.content[0].text}"
print(json.dumps({"type": "final", "content": answer}), flush=True)
