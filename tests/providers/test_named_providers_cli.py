"""Providers of a repository's own in evalward.yaml (an Ollama box, an Anthropic gateway),
through `python -m evalward` on a real repository: each serves the model ids that name it, the
agent's and the judge's, with its own key; a result is reused only against the same server;
a mock run prices calls as that provider's; and a mistake is one message at its line."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from fakes.model_server import ScriptedModelServer, text, tool_call
from scoring.judges.test_judge import verdict
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: support-bot }
spec:
  models: [local/llama3.2]
  system: You are the support agent.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: support-bot-eval }
spec:
  targetAgent: support-bot
  fixtures: [refund]
  judge: { model: gateway/judge-model }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund }
spec:
  targetAgent: support-bot
  input: { type: prompt, payload: { prompt: "I want a refund" } }
  assertions:
    - { type: contains, value: reason }
    - { type: judge, rubric: Did the agent ask for the reason?, minScore: 0.8 }
"""


def settings(local: str, gateway: str) -> str:
    return (
        "providers:\n"
        f"  local: {{ api: openai, baseUrl: {local} }}\n"
        f"  gateway: {{ api: anthropic, baseUrl: {gateway}, apiKeyEnv: GATEWAY_KEY }}\n"
        "pricing:\n"
        "  local/llama3.2: { input: 1000, output: 1000 }\n"
    )


@pytest.fixture
def other() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer()
    yield server
    server.close()


def script(server: ScriptedModelServer) -> None:
    server.script(lambda b: b["model"] == "llama3.2", text("What is the reason for the refund?"))
    server.script(lambda b: b["model"] == "judge-model", text(verdict(0.9)))


def test_named_providers_serve_their_models_and_results_are_kept_per_server(
    repo: GitRepo, model: ScriptedModelServer, other: ScriptedModelServer
) -> None:
    script(model)
    script(other)
    repo.commit(
        "a suite",
        {"bot.yaml": SUITE, "evalward.yaml": settings(model.base_url, model.anthropic_url)},
    )
    assert evalward("validate", cwd=repo.path).returncode == 0

    first = evalward("run", "--output-dir", "out", cwd=repo.path, GATEWAY_KEY="gw-test-key-value")

    assert first.returncode == 0, first.stdout + first.stderr
    paths = {call.body["model"]: (call.path, call.headers.get("x-api-key")) for call in model.calls}
    assert paths == {
        "llama3.2": ("/v1/chat/completions", None),  # no apiKeyEnv: no key is sent
        "judge-model": ("/v1/messages", "gw-test-key-value"),
    }
    assert all("authorization" not in call.headers for call in model.calls)
    results = json.loads((repo.path / "out" / "results.json").read_text())
    assert [f["status"] for f in results["fixtures"]] == ["pass"]
    assert results["run"]["spent"]["unpriced_calls"] == 1  # the judge's; the agent's is priced
    assert results["run"]["spent"]["priced_cost_usd"] > 0
    assert "gw-test-key-value" not in first.stdout + first.stderr

    again = evalward("run", cwd=repo.path, GATEWAY_KEY="gw-test-key-value")
    assert again.returncode == 0 and len(model.calls) == 2  # the same servers: reused

    moved = settings(other.base_url, model.anthropic_url)
    repo.commit("the local model moves", {"evalward.yaml": moved})
    third = evalward("run", cwd=repo.path, GATEWAY_KEY="gw-test-key-value")
    assert third.returncode == 0, third.stdout + third.stderr
    assert [call.body["model"] for call in other.calls] == ["llama3.2"]  # not reused


def test_a_mock_run_prices_calls_as_the_named_providers_model(repo: GitRepo) -> None:
    script_file = "default: What is the reason for the refund?\n"
    suite = SUITE.replace(
        "    - { type: judge, rubric: Did the agent ask for the reason?, minScore: 0.8 }\n", ""
    )
    repo.commit(
        "a suite",
        {
            "bot.yaml": suite,
            "evalward.yaml": settings("http://127.0.0.1:9/v1", "http://127.0.0.1:9"),
            "mock.yaml": script_file,
        },
    )

    done = evalward(
        "run", "--mock-script", "mock.yaml", "--no-cache", "--output-dir", "out", cwd=repo.path
    )

    assert done.returncode == 0, done.stdout + done.stderr
    spent = json.loads((repo.path / "out" / "results.json").read_text())["run"]["spent"]
    assert spent["cost_usd"] > 0 and "cost unknown" not in done.stdout


def test_provider_mistakes_are_one_message_each_at_their_line(repo: GitRepo) -> None:
    config = (
        "providers:\n"
        "  ollama: { api: openai }\n"
        "  Big_Box: { api: openai, baseUrl: http://127.0.0.1:9/v1 }\n"
    )
    suite = SUITE.replace("local/llama3.2", "vllm/qwen").replace(
        "gateway/judge-model", "ollama/judge"
    )
    repo.commit("a suite", {"bot.yaml": suite, "evalward.yaml": config})

    done = evalward("validate", cwd=repo.path)

    assert done.returncode == 2
    said = done.stdout + done.stderr
    assert (
        "evalward.yaml:2:3: providers.ollama: provider 'ollama' is not built in (openai, "
        "anthropic), so it needs `baseUrl`"
    ) in said
    assert "evalward.yaml:3:3: providers.Big_Box: 'Big_Box' is not a provider name" in said
    # its models are refused, naming the providers there are; the judge's provider is there
    assert (
        "unknown provider 'vllm'; expected one of openai, anthropic, Big_Box, ollama, mock" in said
    )
    assert "'ollama'" not in said.split("providers.Big_Box")[1]
    assert "Traceback" not in said


def test_a_named_providers_models_are_not_taken_for_misspelled_vendor_models(repo: GitRepo) -> None:
    suite = SUITE.replace("local/llama3.2", "local/gpt-4.1-mni")
    repo.commit(
        "a suite",
        {
            "bot.yaml": suite,
            "evalward.yaml": settings("http://127.0.0.1:9/v1", "http://127.0.0.1:9"),
        },
    )
    done = evalward("validate", cwd=repo.path)
    assert done.returncode == 0 and "warning" not in done.stdout, done.stdout + done.stderr
    typo = SUITE.replace("local/llama3.2", "openai/gpt-4.1-mni")
    repo.commit("a typo", {"bot.yaml": typo})
    assert "Did you mean 'openai/gpt-4.1-mini'" in evalward("validate", cwd=repo.path).stdout


GEMINI_SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: support-bot }
spec:
  models: [gemini/gemini-2.5-flash]
  system: You are the support agent.
  tools:
    - name: lookup_order
      description: Look up an order by its id.
      parameters: { type: object, properties: { order_id: { type: string } } }
      mock: { output: { status: shipped } }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: order }
spec:
  targetAgent: support-bot
  input: { type: prompt, payload: { prompt: "Where is order 12345?" } }
  assertions:
    - { type: toolCalled, tool: lookup_order }
    - { type: contains, value: shipped }
    - { type: judge, rubric: Did the agent say where the order is?, minScore: 0.8 }
"""


def test_a_gemini_provider_serves_a_declarative_agent_and_its_judge(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    model.script("Did the agent say where the order is?", text(verdict(0.9)))
    model.script(
        "Where is order 12345?",
        tool_call("lookup_order", {"order_id": "12345"}),
        text("Order 12345 has shipped."),
    )
    config = (
        "providers:\n"
        f"  gemini: {{ api: gemini, baseUrl: {model.server.url}, apiKeyEnv: GEMINI_API_KEY }}\n"
        "pricing:\n"
        "  gemini/gemini-2.5-flash: { input: 0.3, output: 2.5 }\n"
    )
    eval_doc = (
        "---\napiVersion: evalward.dev/v1\nkind: Eval\nmetadata: { name: support-bot-eval }\n"
        "spec:\n  targetAgent: support-bot\n  fixtures: [order]\n"
        "  judge: { model: gemini/gemini-2.5-flash }\n"
    )
    repo.commit("a suite", {"bot.yaml": GEMINI_SUITE + eval_doc, "evalward.yaml": config})

    done = evalward(
        "run", "--no-cache", "--output-dir", "out", cwd=repo.path, GEMINI_API_KEY="gm-key-value-1"
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert {(c.path, c.headers.get("x-goog-api-key")) for c in model.calls} == {
        ("/v1beta/models/gemini-2.5-flash:generateContent", "gm-key-value-1")
    }
    answered = model.calls[1].body["contents"][-1]["parts"]
    assert answered == [
        {
            "functionResponse": {
                "name": "lookup_order",
                "response": {"result": '{"status": "shipped"}'},
            }
        }
    ]
    results = json.loads((repo.path / "out" / "results.json").read_text())
    assert [f["status"] for f in results["fixtures"]] == ["pass"]
    assert results["run"]["spent"]["priced_cost_usd"] > 0
    assert model.contract_violations == []
