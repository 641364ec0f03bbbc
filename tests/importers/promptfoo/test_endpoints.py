"""One evalward provider per endpoint an imported suite calls
(`importers/promptfoo/endpoints.py`): OpenAI's and Anthropic's own keep the built-in names, a
suite's one server of an API is the built-in provider moved there, a vendor's server its
vendor's name, other servers a name from their host; each model id names its provider."""

from __future__ import annotations

import pytest

from evalward.importers.promptfoo.endpoints import Endpoints
from evalward.importers.promptfoo.providers import PromptfooProvider
from evalward.importers.promptfoo.source import Node, Source
from evalward.resources.reading.yamlsource import parse_documents

pytestmark = pytest.mark.unit

(DOCUMENT,) = parse_documents("providers: [x]\n")
NODE = Node("x", Source("promptfooconfig.yaml", DOCUMENT), ("providers", 0))


def _provider(api: str, model: str, **fields: object) -> PromptfooProvider:
    return PromptfooProvider(label=model, model=f"{api}/{model}", node=NODE, api=api, **fields)  # type: ignore[arg-type]


def test_the_vendors_own_servers_keep_the_built_in_names() -> None:
    found = [_provider("openai", "gpt-4.1"), _provider("anthropic", "claude-3-5-haiku")]
    endpoints = Endpoints()
    endpoints.assign(found)
    assert [p.model for p in found] == ["openai/gpt-4.1", "anthropic/claude-3-5-haiku"]
    assert endpoints.settings(found) == ({}, [])


def test_a_suite_s_one_server_of_an_api_is_the_built_in_provider_moved_there() -> None:
    found = [_provider("openai", "llama3", base_url="http://gpu-box:8000/v1")]
    endpoints = Endpoints()
    endpoints.assign(found)
    assert found[0].model == "openai/llama3"
    section, _ = endpoints.settings(found)
    assert section == {"providers": {"openai": {"baseUrl": "http://gpu-box:8000/v1"}}}


def test_several_servers_are_named_by_vendor_or_host_and_say_where_they_are() -> None:
    found = [
        _provider("openai", "gpt-4.1"),
        _provider("openai", "llama3", base_url="http://gpu-box:8000/v1"),
        _provider("openai", "llama3.2", base_url="http://127.0.0.1:11434/v1", vendor="ollama"),
        _provider("openai", "qwen", base_url="http://gpu-box:8000/v1", price={"input": 1.0}),
    ]
    endpoints = Endpoints()
    endpoints.assign(found)
    assert [p.model for p in found] == [
        "openai/gpt-4.1",
        "openai-gpu-box-8000/llama3",
        "ollama/llama3.2",
        "openai-gpu-box-8000/qwen",
    ]
    section, conflicts = endpoints.settings(found)
    assert section["providers"] == {
        "ollama": {"api": "openai", "baseUrl": "http://127.0.0.1:11434/v1"},
        "openai-gpu-box-8000": {
            "api": "openai",
            "baseUrl": "http://gpu-box:8000/v1",
            "apiKeyEnv": "OPENAI_API_KEY",  # promptfoo sends it to any apiBaseUrl
        },
    }
    assert section["pricing"] == {"openai-gpu-box-8000/qwen": {"input": 1.0}}
    assert conflicts == []


def test_a_server_s_own_key_variable_is_kept_when_it_is_renamed() -> None:
    """promptfoo reads a provider's `apiKeyEnvar` instead of OPENAI_API_KEY: a server named
    from its host keeps the variable its provider names."""
    found = [
        _provider("openai", "llama3", base_url="http://gpu-box:8000/v1", key_env="GPU_BOX_KEY"),
        _provider("openai", "qwen", base_url="http://127.0.0.1:9000/v1"),
    ]
    endpoints = Endpoints()
    endpoints.assign(found)
    section, _ = endpoints.settings(found)
    assert section["providers"]["openai-gpu-box-8000"]["apiKeyEnv"] == "GPU_BOX_KEY"
    assert section["providers"]["openai-127-0-0-1-9000"]["apiKeyEnv"] == "OPENAI_API_KEY"


def test_a_model_priced_twice_differently_is_a_conflict() -> None:
    found = [
        _provider("openai", "m", base_url="http://a:1/v1", price={"input": 1.0}),
        _provider("openai", "m", base_url="http://a:1/v1", price={"input": 2.0}),
    ]
    endpoints = Endpoints()
    endpoints.assign(found)
    _, conflicts = endpoints.settings(found)
    assert conflicts == [NODE]
