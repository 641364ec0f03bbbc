"""Where SDKs look for a model server, all pointed at the model proxy
(`runtime/proxy/endpoints.py`), and the provider hosts an agent that read none of them would
call, each with the variable to blame."""

from __future__ import annotations

from pathlib import Path

import anthropic
import openai
import pytest

from evalward.runtime.proxy.endpoints import (
    BASE_URLS,
    KEYS,
    OLLAMA_PORT,
    PROVIDER_HOSTS,
    provider_of,
    proxy_env,
)

pytestmark = pytest.mark.unit

URL = "http://127.0.0.1:40123"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "agent-protocols.md"


def test_every_variable_holds_the_proxy_and_every_key_variable_the_run_s_key() -> None:
    env = proxy_env(URL, "evalward-proxy-k")
    assert env["OPENAI_BASE_URL"] == f"{URL}/v1"
    assert env["ANTHROPIC_BASE_URL"] == URL
    assert all(env[name].startswith(URL) for name in BASE_URLS)
    assert all(env[name] == "evalward-proxy-k" for name in KEYS)
    assert env["OPENAI_API_VERSION"]  # Azure clients refuse to start without one
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"  # no price table fetched at import


def test_the_official_sdks_find_the_proxy_from_the_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in proxy_env(URL, "evalward-proxy-k").items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_API_KEY", "evalward-proxy-k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "evalward-proxy-k")
    with openai.OpenAI() as client:
        assert str(client.base_url).rstrip("/") == f"{URL}/v1"
    with anthropic.Anthropic() as other:
        assert str(other.base_url).rstrip("/") == URL


def test_every_variable_is_documented_with_its_readers() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert [name for name in BASE_URLS if f"`{name}`" not in text] == []


@pytest.mark.parametrize(
    ("host", "port", "provider"),
    [
        ("api.openai.com", None, "OpenAI"),
        ("API.OpenAI.com.", 443, "OpenAI"),
        ("my-deployment.openai.azure.com", None, "Azure OpenAI"),
        ("api.groq.com", None, "Groq"),
        ("localhost", OLLAMA_PORT, "Ollama"),
        ("127.0.0.1", OLLAMA_PORT, "Ollama"),
    ],
)
def test_a_provider_s_host_is_named_with_the_variable_to_blame(
    host: str, port: int | None, provider: str
) -> None:
    found = provider_of(host, port)
    assert found is not None
    assert found.provider == provider


@pytest.mark.parametrize(
    ("host", "port"),
    [
        ("openai.azure.com.evil.example", None),
        ("example.com", None),
        ("localhost", 8080),
        ("notapi.openai.com", None),
    ],
)
def test_other_hosts_are_no_provider(host: str, port: int | None) -> None:
    assert provider_of(host, port) is None


def test_a_host_under_a_dotted_name_matches_but_the_bare_suffix_does_not() -> None:
    dotted = [known.host for known in PROVIDER_HOSTS if known.host.startswith(".")]
    assert dotted
    for suffix in dotted:
        assert provider_of(f"x{suffix}") is not None
        assert provider_of(suffix.lstrip(".")) is None
