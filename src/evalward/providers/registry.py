"""Resolve `provider/model` ids to provider instances, built once per run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from evalward.errors import ConfigError
from evalward.providers.base import Provider
from evalward.providers.mock import MockProvider, load_script
from evalward.providers.openai import DEFAULT_BASE_URL, OpenAIProvider

KNOWN_PROVIDERS = ("openai", "mock")


@dataclass
class Providers:
    """The providers of one run. With `override` set, every model id is served by it."""

    by_name: dict[str, Provider]
    override: Provider | None = None

    def resolve(self, model_id: str) -> tuple[Provider, str]:
        provider_name, _, model = model_id.partition("/")
        if self.override is not None:
            return self.override, model
        provider = self.by_name.get(provider_name)
        if provider is None:
            raise ConfigError(
                f"model {model_id!r}: unknown provider {provider_name!r}; "
                f"expected one of {', '.join(KNOWN_PROVIDERS)}"
            )
        return provider, model

    async def aclose(self) -> None:
        for provider in {id(p): p for p in [*self.by_name.values(), self.override] if p}.values():
            await provider.aclose()


def build_providers(
    env: Mapping[str, str],
    *,
    mock_script: str | None = None,
    timeout_seconds: float = 120.0,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Providers:
    """Providers configured from the environment the official SDKs read."""
    by_name: dict[str, Provider] = {}
    base_url = env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(timeout_seconds, connect=10.0),
        limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
        transport=transport,
    )
    by_name["openai"] = OpenAIProvider(
        client, base_url=base_url, api_key=env.get("OPENAI_API_KEY") or None
    )
    override: Provider | None = None
    if mock_script:
        from pathlib import Path

        override = MockProvider(load_script(Path(mock_script)))
        by_name["mock"] = override
    return Providers(by_name=by_name, override=override)


def check_credentials(env: Mapping[str, str], model_ids: list[str], providers: Providers) -> None:
    """Fail before any run when a provider the plan needs has no credentials."""
    if providers.override is not None:
        return
    for model_id in model_ids:
        name = model_id.partition("/")[0]
        if name == "mock" and "mock" not in providers.by_name:
            raise ConfigError(
                f"model {model_id!r} uses the mock provider, but no mock script is set; "
                "pass `--mock-script FILE` (or the action input `mock-script`)"
            )
        if (
            name == "openai"
            and not env.get("OPENAI_API_KEY")
            and (env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL) == DEFAULT_BASE_URL
        ):
            raise ConfigError(
                f"model {model_id!r} needs OPENAI_API_KEY, which is not set. Add it to the "
                "workflow step's `env:` from a secret (secrets are not passed to workflows "
                "from forks), or set OPENAI_BASE_URL to a server that needs no key."
            )
