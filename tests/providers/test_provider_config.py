"""The `providers`, `pricing` and `cache` sections of evalward.yaml, and retry delays."""

from __future__ import annotations

import pytest

from evalward.errors import ConfigError
from evalward.http.client import Reply
from evalward.providers.config import provider_config
from evalward.providers.pricing import PriceTable
from evalward.providers.retry import RetryPolicy
from evalward.rundata.cache_mode import CacheMode
from evalward.rundata.trace import Usage

pytestmark = pytest.mark.unit


def test_defaults_and_a_full_config() -> None:
    assert provider_config(None).cache.mode is CacheMode.off
    assert provider_config({}).cache.dir == ".evalward/cache"
    config = provider_config(
        {
            "version": 1,  # other sections of the file are not ours to judge
            "providers": {
                "openai": {"baseUrl": "http://localhost:11434/v1", "apiKeyEnv": "OLLAMA_KEY"},
                "anthropic": {"maxConcurrency": 2, "retry": {"attempts": 6}},
            },
            "pricing": {"openai/llama3": {"input": 0, "output": 0}},
            "cache": {"mode": "read-only", "dir": "/tmp/c"},
        }
    )
    assert config.provider("openai").api_key_env == "OLLAMA_KEY"
    assert config.provider("anthropic").retry.attempts == 6
    assert config.provider("anthropic").timeout_seconds == 120
    assert config.cache.mode is CacheMode.read_only


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"providers": {"gemini": {}}},
            "evalward.yaml: providers.gemini: provider 'gemini' is not built in (openai, "
            "anthropic), so it needs `api` and `baseUrl`",
        ),
        (
            {"providers": {"ollama": {"api": "openai"}}},
            "providers.ollama: provider 'ollama' is not built in (openai, anthropic), so it "
            "needs `baseUrl`",
        ),
        (
            {"providers": {"ollama": {"api": "google", "baseUrl": "http://h/v1"}}},
            "providers.ollama.api: expected one of: openai, anthropic, gemini; found 'google'",
        ),
        (
            {
                "providers": {
                    "gemini": {"api": "gemini", "baseUrl": "https://g"},
                    "vertex": {"api": "gemini", "baseUrl": "https://v"},
                }
            },
            "providers.vertex.api: 'gemini' already speaks `api: gemini`, and the model proxy "
            "forwards agents' Gemini calls to one provider; keep one of them",
        ),
        (
            {"providers": {"ollama": {"api": "openai", "baseUrl": "localhost:11434"}}},
            "providers.ollama.baseUrl: expected a string matching '^https?://'",
        ),
        (
            {"providers": {"My_Server": {"api": "openai", "baseUrl": "http://h/v1"}}},
            "providers.My_Server: 'My_Server' is not a provider name",
        ),
        ({"providers": {"mock": {}}}, "providers.mock: the mock provider has no settings"),
        (
            {"providers": {"openai": {"api": "anthropic"}}},
            "providers.openai.api: the openai provider speaks openai's API; remove `api`",
        ),
        (
            {"providers": {"openai": {"baseURL": "x"}}},
            "evalward.yaml: providers.openai.baseURL: unknown field 'baseURL'",
        ),
        (
            {"providers": {"openai": {"apiKey": "sk-123"}}},
            "evalward.yaml: providers.openai.apiKey: unknown field 'apiKey'",
        ),
        (
            {"providers": {"anthropic": None}},
            "evalward.yaml: providers.anthropic: expected a mapping; found nothing (null)",
        ),
        (
            {"providers": {"openai": {"retry": {"attempts": True}}}},
            "evalward.yaml: providers.openai.retry.attempts: expected a valid integer; found true",
        ),
        (
            {"cache": {"mode": "sometimes"}},
            "evalward.yaml: cache.mode: expected one of: read-write, read-only, refresh, off",
        ),
        ({"pricing": {"gpt-4o": {"input": 1, "output": 2}}}, "evalward.yaml: pricing.gpt-4o:"),
        (
            {"pricing": {"openai/x": {"input": -1, "output": 2}}},
            "evalward.yaml: pricing.openai/x.input:",
        ),
        # a run's cost at such a price is infinite: results.json could not be written
        (
            {"pricing": {"openai/x": {"input": float("inf"), "output": 2}}},
            "evalward.yaml: pricing.openai/x.input: expected a finite number; found inf",
        ),
        (
            {"pricing": {"openai/x": {"input": 1, "output": 1e308}}},
            "evalward.yaml: pricing.openai/x.output: expected a number less than or equal to",
        ),
        (
            {"providers": {"openai": {"timeoutSeconds": float("inf")}}},
            "evalward.yaml: providers.openai.timeoutSeconds: expected a finite number; found inf",
        ),
    ],
)
def test_mistakes_name_the_file_and_key(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        provider_config(raw)
    assert message in str(caught.value)


def test_prices_per_million_tokens() -> None:
    table = PriceTable()
    usage = Usage(input_tokens=2_000_000, output_tokens=1_000_000)
    assert table.with_cost("openai", "gpt-4.1-mini", usage).cost_usd == pytest.approx(2.4)
    assert table.with_cost("openai", "unknown", usage).cost_usd is None


def test_retry_after_is_honoured_but_capped() -> None:
    policy = RetryPolicy(attempts=3, base_delay=0.5, max_delay=10)
    hinted = Reply(429, {"retry-after": "3"}, b"")
    assert policy.delay(1, hinted) == 3
    assert policy.delay(1, Reply(429, {"retry-after": "3600"}, b"")) == 10
    assert policy.delay(1, Reply(429, {"retry-after-ms": "250"}, b"")) == 0.25
    for attempt in (1, 2, 3):
        backoff = policy.delay(attempt, Reply(500, {}, b""))
        assert 0.25 * 2 ** (attempt - 1) <= backoff <= 0.5 * 2 ** (attempt - 1)


def test_missing_keys_name_the_variable_the_provider_reads() -> None:
    import asyncio

    from evalward.providers.registry import build_providers, check_credentials

    config = provider_config({"providers": {"anthropic": {"apiKeyEnv": "TEAM_CLAUDE_KEY"}}})
    providers = build_providers({}, config=config)
    try:
        with pytest.raises(ConfigError, match="needs TEAM_CLAUDE_KEY, which is not set"):
            check_credentials(["anthropic/claude-haiku-4-5"], providers)
        with pytest.raises(ConfigError, match="needs OPENAI_API_KEY"):
            check_credentials(["openai/gpt-4.1"], providers)
    finally:
        asyncio.run(providers.aclose())
    local = build_providers({"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, config=config)
    check_credentials(["anthropic/claude-haiku-4-5"], local)  # a local server needs no key
    asyncio.run(local.aclose())


NAMED = {
    "providers": {
        "ollama": {"api": "openai", "baseUrl": "http://127.0.0.1:11434/v1"},
        "azure": {
            "api": "openai",
            "baseUrl": "https://my-res.openai.azure.com/openai/v1",
            "apiKeyEnv": "AZURE_OPENAI_API_KEY",
            "maxConcurrency": 3,
        },
        "claude-proxy": {"api": "anthropic", "baseUrl": "http://127.0.0.1:9/anthropic"},
    }
}


def test_a_named_provider_is_a_provider_of_its_own() -> None:
    import asyncio

    from evalward.providers.registry import build_providers, check_credentials

    config = provider_config(NAMED)
    assert config.names == ("openai", "anthropic", "azure", "claude-proxy", "ollama")
    env = {"OPENAI_API_KEY": "sk-openai-test-value", "AZURE_OPENAI_API_KEY": ""}
    providers = build_providers(env, config=config)
    try:
        check_credentials(["ollama/llama3.2", "claude-proxy/claude-x"], providers)
        # its key variable is named, and empty: refused before any run, naming the variable
        with pytest.raises(ConfigError, match=r"needs AZURE_OPENAI_API_KEY \(the `apiKeyEnv` of"):
            check_credentials(["azure/gpt-4o-mini"], providers)
        # a result against one server is never reused against another
        identities = {providers.identity_of([f"{n}/m"]) for n in config.names}
        assert len(identities) == 5
        assert providers.concurrency_of("azure/gpt-4o-mini") == 3
        assert providers.key_envs == ["ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY", "OPENAI_API_KEY"]
        assert providers.resolve("ollama/llama3.2")[0].name == "ollama"
        with pytest.raises(ConfigError) as unknown:
            providers.resolve("vllm/qwen")
        assert "expected one of openai, anthropic, azure, claude-proxy, ollama, mock" in str(
            unknown.value
        )
    finally:
        asyncio.run(providers.aclose())


def test_a_named_provider_is_priced_under_its_own_name() -> None:
    import asyncio

    from evalward.providers.registry import build_providers

    config = provider_config({**NAMED, "pricing": {"ollama/llama3.2": {"input": 1, "output": 2}}})
    providers = build_providers({}, config=config)
    try:
        ollama = providers.by_name["ollama"]
        assert ollama.priced("llama3.2") and not providers.by_name["openai"].priced("llama3.2")
        assert not providers.by_name["azure"].priced("gpt-4o-mini")  # a deployment, not a model
    finally:
        asyncio.run(providers.aclose())
