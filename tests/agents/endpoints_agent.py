"""An agent that finds its model server the way one SDK or another does: by the variable
named in its argument (what LlamaIndex, LiteLLM, Azure clients, Ollama read), or by an
address in its own code (`past: …`), which evalward must stop and name."""

import json
import os
import sys
import urllib.error
import urllib.request


def post(url: str, body: dict, headers: dict) -> dict:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json", **headers}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.load(reply)


def chat(base: str, key: str, prompt: str) -> str:
    body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": prompt}]}
    reply = post(f"{base}/chat/completions", body, {"authorization": f"Bearer {key}"})
    return reply["choices"][0]["message"]["content"]


def messages(base: str, key: str, prompt: str) -> str:
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": prompt}],
    }
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    return post(f"{base}/v1/messages", body, headers)["content"][0]["text"]


def main(prompt: str) -> None:
    env = os.environ
    mode = prompt.split(":")[0]
    if mode == "OPENAI_API_BASE":
        print(chat(env["OPENAI_API_BASE"], env["OPENAI_API_KEY"], prompt))
    elif mode == "LITELLM_PROXY_API_BASE":
        print(chat(env["LITELLM_PROXY_API_BASE"], env["LITELLM_PROXY_API_KEY"], prompt))
    elif mode == "ANTHROPIC_API_BASE":
        print(messages(env["ANTHROPIC_API_BASE"], env["ANTHROPIC_API_KEY"], prompt))
    elif mode == "AZURE_OPENAI_ENDPOINT":
        import openai  # the real Azure client, configured from its variables alone

        client = openai.AzureOpenAI(max_retries=0)
        client.chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": prompt}]
        )
    elif mode == "OLLAMA_HOST":
        body = {"model": "llama3", "messages": [{"role": "user", "content": prompt}]}
        post(
            f"{env['OLLAMA_HOST']}/api/chat",
            body,
            {"authorization": f"Bearer {env['OLLAMA_API_KEY']}"},
        )
    elif mode == "past":
        import openai

        client = openai.OpenAI(base_url="https://api.openai.com/v1", max_retries=0)
        client.chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": prompt}]
        )


if __name__ == "__main__":
    main(sys.argv[1])
