"""What a first run says is true: a mock run costs what the models it stands for would, and
the built-in prices cover the current OpenAI and Anthropic models, dated snapshots too."""

from __future__ import annotations

import json

import pytest

from evalward.providers.config import Price
from evalward.providers.pricing import PriceTable
from fakes.model_server import ScriptedModelServer
from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture

pytestmark = pytest.mark.integration

SUITE = documents(
    greeter_agent("MODEL"),
    greeter_eval(),
    greeting_fixture("{ type: contains, value: help }", "{ type: cost, maxUsd: 1 }"),
)
MOCK = """\
replies:
  - match: { agent: greeter }
    turns: [{ content: "Hello! How can I help?" }]
"""


def test_a_mock_run_costs_what_the_model_it_names_would(repo: GitRepo) -> None:
    repo.commit(
        "a suite", {"suite.yaml": SUITE.replace("MODEL", "openai/gpt-5-mini"), "mock.yaml": MOCK}
    )
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode == 0, done.stdout + done.stderr
    (fixture,) = json.loads(done.stdout)["fixtures"]
    usage = fixture["usage"]
    # gpt-5-mini's list price: $0.25 a million input tokens, $2 a million output tokens
    priced = (usage["input_tokens"] * 0.25 + usage["output_tokens"] * 2.0) / 1e6
    assert usage["cost_usd"] == pytest.approx(priced) and priced > 0
    cost = fixture["assertions"][1]
    assert cost["status"] == "pass" and cost["message"].startswith("cost $"), cost
    assert "no price" not in done.stderr


@pytest.mark.parametrize(
    "model",
    [
        "openai/gpt-5", "openai/gpt-5-mini", "openai/gpt-5-nano", "openai/gpt-4.1",
        "openai/gpt-4.1-mini-2025-04-14", "openai/o3", "openai/o4-mini", "openai/o3-mini",
        "anthropic/claude-sonnet-4-5-20250929", "anthropic/claude-opus-4-1",
        "anthropic/claude-sonnet-4", "anthropic/claude-haiku-4-5",
        "anthropic/claude-3-5-haiku-latest", "anthropic/claude-3-5-sonnet-20241022",
        "openai/gpt-4o-2024-08-06", "openai/gpt-3.5-turbo",
    ],
)  # fmt: skip
def test_the_built_in_prices_cover_current_models(model: str) -> None:
    assert PriceTable().of(model) is not None


def test_a_dated_snapshot_with_its_own_price_keeps_it() -> None:
    table = PriceTable({"openai/gpt-4.1-2025-04-14": Price(input=1.0, output=1.0)})
    assert table.of("openai/gpt-4.1-2025-04-14") == Price(input=1.0, output=1.0)
    assert table.of("openai/gpt-4.1") == Price(input=2.0, output=8.0)
    assert table.of("openai/gpt-4.1-turbo") is None


def test_a_misspelled_model_is_a_validate_warning_with_the_name_it_was_meant_to_be(
    repo: GitRepo,
) -> None:
    suite = SUITE.replace("MODEL", "openai/gpt-4.1-mni")
    suite = suite.replace(
        "  fixtures: [greeting]\n",
        "  fixtures: [greeting]\n  judge: { model: anthropic/claude-sonet-4-5 }\n",
    )
    repo.commit("typos", {"suite.yaml": suite})
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 0, done.stderr  # a warning: the model may be newer than evalward
    lines = [x for x in done.stdout.splitlines() if x.startswith("warning:")]
    assert lines[0].startswith("warning: suite.yaml:5:12: spec.models[0]: no provider knows")
    assert "Did you mean 'openai/gpt-4.1-mini'?" in lines[0]
    assert (
        "suite.yaml:14:12: spec.judge.model" in lines[1]
        and "Did you mean 'anthropic/claude-sonnet-4-5'?" in lines[1]
    )


def test_models_evalward_cannot_list_are_not_warned_about(repo: GitRepo) -> None:
    files = {
        "suite.yaml": SUITE.replace("MODEL", "openai/gemini-2.5-flash, openai/gpt-test"),
        "other.yaml": SUITE.replace("MODEL", "anthropic/claude-opus-4-1-20250805")
        .replace("greeter", "second")
        .replace("greeting", "second-greeting"),
    }
    repo.commit("a gateway's models", files)
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stdout
    # a provider pointed at another server serves models evalward cannot know
    repo.commit("an Ollama", {
        "suite.yaml": SUITE.replace("MODEL", "openai/gpt-4.1-mni"),
        "evalward.yaml": "providers: { openai: { baseUrl: 'http://localhost:11434/v1' } }\n",
    })  # fmt: skip
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 0 and "warning" not in done.stdout, done.stdout + done.stderr


JUDGED = (
    SUITE.replace("MODEL", "openai/gpt-4.1-mini").replace(
        "  fixtures: [greeting]\n",
        "  fixtures: [greeting]\n  judge: { model: openai/gpt-4.1-mini }\n",
    )
    + "    - { type: judge, rubric: Is it polite? }\n"
)
JUDGE_TWICE_WRONG = """\
replies:
  - match: { purpose: judge }
    turns:
      - content: '{"score": 2, "confidence": 0.9, "summary": "Very.", "violations": []}'
      - content: "It is polite, I would say."
  - match: { agent: greeter }
    turns: [{ content: "Hello! How can I help?" }]
"""


def test_a_judges_invalid_replies_are_each_reported(repo: GitRepo) -> None:
    repo.commit("a judge", {"suite.yaml": JUDGED, "mock.yaml": JUDGE_TWICE_WRONG})
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    (fixture,) = json.loads(done.stdout)["fixtures"]
    judge = fixture["assertions"][2]
    assert judge["status"] == "error"
    assert judge["message"] == (
        "the judge openai/gpt-4.1-mini gave no valid verdict after a retry: its reply: score: "
        "Input should be less than or equal to 1; its retry: it is not JSON"
    )


def test_validate_asks_the_providers_for_their_models_and_names_the_nearest(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    model.models = ["llama3.2:3b", "qwen2.5:7b", "claude-haiku-4-5"]
    settings = (
        f"providers:\n  ollama: {{ api: openai, baseUrl: '{model.base_url}' }}\n"
        f"  anthropic: {{ baseUrl: '{model.anthropic_url}' }}\n"
        "  gateway: { api: openai, baseUrl: 'http://127.0.0.1:9/v1' }\n"
    )
    suite = SUITE.replace("MODEL", "ollama/llama3.2:3B, anthropic/claude-haiku-4-5, gateway/any")
    repo.commit("an Ollama suite", {"suite.yaml": suite, "evalward.yaml": settings})
    silent = evalward("validate", ".", cwd=repo.path)
    assert silent.returncode == 0 and "warning" not in silent.stdout  # nothing asked
    assert model.targets == []

    done = evalward("validate", ".", "--ask-providers", cwd=repo.path, ANTHROPIC_API_KEY="sk-x")
    assert done.returncode == 0, done.stderr  # warnings: a list may lag behind a new model
    said = done.stdout
    assert (
        "warning: suite.yaml:5:12: spec.models[0]: the provider 'ollama' does not serve the "
        "model ollama/llama3.2:3B: it is not among the 3 models its model list gave. Did you "
        "mean 'ollama/llama3.2:3b'?"
    ) in said
    assert "note: gateway did not list its models (" in said
    assert "sk-x" not in said + done.stderr
    assert sorted(t.split("?")[0] for t in model.targets) == ["GET /v1/models"] * 2
