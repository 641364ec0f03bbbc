"""One evalward provider per endpoint an imported suite calls (the API it speaks, its URL, its
key's variable): promptfoo gives each provider its own server, and evalward.yaml names each
server once, under `providers`, its models named after it (`ollama/llama3.2`). The names are
docs/cli.md's ("import promptfoo"): the built-in one, a vendor's, or one from the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from evalward.importers.promptfoo.providers import DEFAULT_KEYS, PromptfooProvider
from evalward.importers.promptfoo.resources import numbered, slug
from evalward.importers.promptfoo.source import Node

DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
NAME_LENGTH = 40


@dataclass(frozen=True)
class PromptfooEndpoint:
    """Where a provider's replies come from."""

    api: str
    base_url: str | None
    key_env: str | None
    vendor: str | None
    api_version: str | None


def endpoint_of(found: PromptfooProvider) -> PromptfooEndpoint:
    return PromptfooEndpoint(
        found.api, found.base_url, found.key_env, found.vendor, found.api_version
    )


class Endpoints:
    """The providers of the written evalward.yaml, named as the suite's providers are read."""

    def __init__(self) -> None:
        self.names: dict[PromptfooEndpoint, str] = {}

    def assign(self, found: list[PromptfooProvider]) -> None:
        """Name the endpoint of each provider in `found` (once per endpoint) and rewrite its
        model id to `<name>/<model>`."""
        fresh = [e for e in dict.fromkeys(map(endpoint_of, found)) if e not in self.names]
        taken = set(self.names.values())
        for endpoint in fresh:  # OpenAI's and Anthropic's own servers: the built-in names
            if endpoint.vendor is None and endpoint.base_url is None and endpoint.api not in taken:
                self._name(endpoint, endpoint.api, taken)
        for api in DEFAULT_URLS:  # the one server of an API, wherever it is
            own = [e for e in fresh if e.api == api and e.vendor is None]
            if len(own) == 1 and own[0] not in self.names and api not in taken:
                self._name(own[0], api, taken)
        for endpoint in fresh:
            if endpoint not in self.names:
                self._name(endpoint, _derived(endpoint), taken)
        for provider in found:
            name = self.names[endpoint_of(provider)]
            provider.model = f"{name}/{provider.model.partition('/')[2]}"

    def _name(self, endpoint: PromptfooEndpoint, wanted: str, taken: set[str]) -> None:
        name = numbered(wanted, taken, NAME_LENGTH)
        taken.add(name)
        self.names[endpoint] = name

    def settings(self, used: list[PromptfooProvider]) -> tuple[dict[str, Any], list[Node]]:
        """evalward.yaml's `providers` and `pricing` for the providers the suite calls, and
        those that price a model another one prices differently (a model has one price)."""
        providers: dict[str, dict[str, str]] = {}
        pricing: dict[str, dict[str, float]] = {}
        conflicts: list[Node] = []
        for found in used:
            endpoint = endpoint_of(found)
            name = self.names[endpoint]
            providers[name] = _settings(name, endpoint)
            if found.price is not None:
                if pricing.get(found.model, found.price) != found.price:
                    conflicts.append(found.node)
                pricing[found.model] = found.price
        section: dict[str, Any] = {}
        chosen = {name: values for name, values in sorted(providers.items()) if values}
        if chosen:
            section["providers"] = chosen
        if pricing:
            section["pricing"] = pricing
        return section, conflicts


def _settings(name: str, endpoint: PromptfooEndpoint) -> dict[str, str]:
    """A provider's entry in evalward.yaml: a built-in one's changes, else everything."""
    values: dict[str, str] = {}
    if name != endpoint.api:
        values["api"] = endpoint.api
        values["baseUrl"] = endpoint.base_url or DEFAULT_URLS[endpoint.api]
    elif endpoint.base_url is not None:
        values["baseUrl"] = endpoint.base_url
    if endpoint.key_env is not None:  # promptfoo reads it instead of the API's default
        values["apiKeyEnv"] = endpoint.key_env
    elif name != endpoint.api and endpoint.vendor is None and endpoint.api_version is None:
        values["apiKeyEnv"] = DEFAULT_KEYS[endpoint.api]  # promptfoo sends it to any apiBaseUrl
    if endpoint.api_version is not None:
        values["apiVersion"] = endpoint.api_version
    return values


def _derived(endpoint: PromptfooEndpoint) -> str:
    """A provider name for an endpoint: its vendor's, else its API's and its host's."""
    if endpoint.vendor is not None:
        return endpoint.vendor
    parts = urlsplit(endpoint.base_url or DEFAULT_URLS[endpoint.api])
    where = f"{parts.hostname or 'server'}-{parts.port or ''}"
    return slug(f"{endpoint.api}-{where}", NAME_LENGTH)
