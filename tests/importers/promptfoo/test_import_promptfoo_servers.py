"""A promptfoo suite that compares models on several servers (OpenAI, Ollama, Azure OpenAI, two
in-house OpenAI-compatible servers) imports whole: every server becomes a provider of its own
in evalward.yaml, every (provider × test) case a fixture, and `evalward run` sends each agent's
calls to its own server. What has no equivalent is left out by name, with why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakes.reply_table import Entry, ReplyTableServer
from support.clirun import evalward, run_for_results
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

SERVERS = ("hosted", "ollama", "azure", "house", "lab")
TABLE = [Entry("France", "Paris"), Entry("Japan", "Tokyo")]


@pytest.fixture
def servers() -> Iterator[dict[str, ReplyTableServer]]:
    started = {name: ReplyTableServer(TABLE, "I do not know.") for name in SERVERS}
    yield started
    for server in started.values():
        server.close()


def suite(servers: dict[str, ReplyTableServer]) -> dict[str, Any]:
    def at(name: str) -> str:
        return servers[name].base_url

    return {
        "description": "Capitals everywhere",
        "prompts": ["What is the capital of {{country}}? One word."],
        "providers": [
            "openai:gpt-4.1-mini",
            {"id": "ollama:chat:llama3.2", "config": {"apiBaseUrl": at("ollama")}},
            {
                "id": "azure:chat:capitals-4o",
                "label": "azure",
                "config": {"apiBaseUrl": at("azure").removesuffix("/v1")},
            },
            {"id": "openai:chat:house-model", "config": {"apiBaseUrl": at("house")}},
            {"id": "openai:chat:lab-model", "config": {"apiBaseUrl": at("lab")}},
            "azure:responses:capitals-o3",
            "azure:chat:nowhere-deployment",
        ],
        "tests": [
            {"vars": {"country": "France"}, "assert": [{"type": "icontains", "value": "paris"}]},
            {"vars": {"country": "Japan"}, "assert": [{"type": "icontains", "value": "tokyo"}]},
        ],
    }


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_every_server_of_a_suite_becomes_a_provider_and_answers_its_own_agents(
    repo: GitRepo, servers: dict[str, ReplyTableServer]
) -> None:
    repo.commit("a suite", {"promptfooconfig.yaml": yaml.safe_dump(suite(servers))})

    refused = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)
    assert refused.returncode == 2 and "--skip-unsupported" in refused.stderr
    done = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", "--skip-unsupported", cwd=repo.path
    )

    assert done.returncode == 0, done.stderr
    # the providers with no equivalent are named, each with why
    left_out = [line for line in done.stdout.splitlines() if line.startswith("left out:")]
    assert len(left_out) == 2, done.stdout
    assert "'azure:responses:capitals-o3' is left out" in left_out[0]
    assert (
        "'nowhere-deployment' (azure:chat) is left out: it names no Azure resource" in (left_out[1])
    )
    folder = repo.path / "evals" / "capitals-everywhere"
    agents = {a["metadata"]["name"]: a["spec"]["models"] for a in documents(folder / "agents.yaml")}
    house, lab = (
        f"openai-127-0-0-1-{servers[n].server.url.rpartition(':')[2]}" for n in SERVERS[3:]
    )
    assert agents == {
        "capitals-everywhere-gpt-4-1-mini": ["openai/gpt-4.1-mini"],
        "capitals-everywhere-llama3-2": ["ollama/llama3.2"],
        "capitals-everywhere-azure": ["azure/capitals-4o"],
        "capitals-everywhere-house-model": [f"{house}/house-model"],
        "capitals-everywhere-lab-model": [f"{lab}/lab-model"],
    }
    assert len(documents(folder / "fixtures.yaml")) == 2 * 5  # every (provider × test) case
    settings = yaml.safe_load((repo.path / "evalward.yaml").read_text())
    assert settings["providers"] == {
        "azure": {
            "api": "openai",
            "baseUrl": servers["azure"].server.url + "/openai",
            "apiKeyEnv": "AZURE_API_KEY",
            "apiVersion": "2024-12-01-preview",  # promptfoo's, when the config gives none
        },
        house: {
            "api": "openai",
            "baseUrl": servers["house"].base_url,
            "apiKeyEnv": "OPENAI_API_KEY",
        },
        lab: {"api": "openai", "baseUrl": servers["lab"].base_url, "apiKeyEnv": "OPENAI_API_KEY"},
        "ollama": {"api": "openai", "baseUrl": servers["ollama"].base_url},
    }
    validated = evalward("validate", cwd=repo.path)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "warning" not in validated.stdout

    code, results, said = run_for_results(
        repo.path,
        OPENAI_BASE_URL=servers["hosted"].base_url,
        OPENAI_API_KEY="sk-test-openai-key",
        AZURE_API_KEY="azure-test-key-value",
    )

    assert code == 0, said
    assert {f["status"] for f in results["fixtures"]} == {"pass"}
    models = {name: sorted(r["model"] for r in s.requests) for name, s in servers.items()}
    assert models == {
        "hosted": ["gpt-4.1-mini"] * 2,
        "ollama": ["llama3.2"] * 2,
        "azure": ["capitals-4o"] * 2,
        "house": ["house-model"] * 2,
        "lab": ["lab-model"] * 2,
    }
    assert "azure-test-key-value" not in said


def test_a_named_providers_key_must_be_set_before_any_call(
    repo: GitRepo, servers: dict[str, ReplyTableServer]
) -> None:
    config = suite(servers)
    config["providers"] = config["providers"][2:3]
    repo.commit("an azure suite", {"promptfooconfig.yaml": yaml.safe_dump(config)})
    assert evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path).returncode == 0

    done = evalward("run", "--no-cache", cwd=repo.path, AZURE_API_KEY="")

    said = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in said, said
    assert "needs AZURE_API_KEY (the `apiKeyEnv` of provider 'azure' in evalward.yaml)" in said
    assert servers["azure"].requests == []


def test_hugging_face_models_are_called_on_its_openai_compatible_router(
    repo: GitRepo, servers: dict[str, ReplyTableServer]
) -> None:
    router = servers["house"].base_url  # stands in for https://router.huggingface.co/v1
    config = suite(servers)
    config["providers"] = [
        {
            "id": "huggingface:chat:meta-llama/Llama-3.3-70B-Instruct",
            "config": {"apiEndpoint": router + "/chat/completions", "max_new_tokens": 256},
        },
        {  # promptfoo calls a text-generation model through the chat API when told to
            "id": "huggingface:text-generation:mistralai/Mistral-7B-Instruct-v0.3",
            "config": {"chatCompletion": True, "inferenceProvider": "together",
                       "apiBaseUrl": router, "temperature": 0.1},
        },
        "huggingface:text-generation:gpt2",
        {"id": "replicate:meta/meta-llama-3-8b-instruct", "config": {"max_new_tokens": 64}},
    ]  # fmt: skip
    repo.commit("open models", {"promptfooconfig.yaml": yaml.safe_dump(config)})

    refused = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)

    assert refused.returncode == 2, refused.stdout + refused.stderr
    lines = [line for line in refused.stderr.splitlines() if "is left out" in line]
    assert len(lines) == 2, refused.stderr
    assert "promptfooconfig.yaml:15:3: providers[2]: 'huggingface:text-generation:gpt2'" in lines[0]
    assert "write `huggingface:chat:gpt2` (or add `config.chatCompletion: true`)" in lines[0]
    assert "promptfooconfig.yaml:16:3: providers[3]: 'replicate:meta/meta-llama-3-8b" in lines[1]
    assert "write it as `openai:chat:<model>` with `config: { apiBaseUrl:" in lines[1]

    done = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", "--skip-unsupported", cwd=repo.path
    )
    assert done.returncode == 0, done.stderr
    code, results, said = run_for_results(repo.path, HF_TOKEN="hf-test-token-value")

    assert code == 0, said
    assert {f["status"] for f in results["fixtures"]} == {"pass"}
    sent = sorted((r["model"], r.get("max_tokens")) for r in servers["house"].requests)
    assert sent == [
        ("meta-llama/Llama-3.3-70B-Instruct", 256),
        ("meta-llama/Llama-3.3-70B-Instruct", 256),
        ("mistralai/Mistral-7B-Instruct-v0.3:together", None),
        ("mistralai/Mistral-7B-Instruct-v0.3:together", None),
    ]
    keys = {
        v
        for r in servers["house"].received
        for k, v in r.headers.items()
        if k.lower() == "authorization"
    }
    assert keys == {"Bearer hf-test-token-value"}
    assert "hf-test-token-value" not in said
