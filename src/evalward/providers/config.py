"""Typed settings for providers, prices and the response cache, from `evalward.yaml`.

The file loader hands over the raw `providers`, `pricing` and `cache` sections; this module
gives them a shape and turns every mistake into a problem naming the key and its line. API keys are
never written in the file: a provider names the environment variable that holds its key.

    providers:
      openai:    { baseUrl: http://localhost:11434/v1, apiKeyEnv: OLLAMA_KEY }
      anthropic: { timeoutSeconds: 60, maxConcurrency: 4, retry: { attempts: 5 } }
      ollama:    { api: openai, baseUrl: http://localhost:11434/v1 }   # `ollama/llama3.2`
      gemini:    { api: gemini, baseUrl: https://generativelanguage.googleapis.com,
                   apiKeyEnv: GEMINI_API_KEY }
    pricing:
      openai/my-finetune: { input: 0.3, output: 1.2 }     # USD per million tokens
    cache: { mode: read-write, dir: .evalward/cache }
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from evalward.errors import Problem, ResourceError
from evalward.resources.agents.agent_runtime import ENV_NAME
from evalward.resources.common import StrictModel
from evalward.resources.reading.problems import did_you_mean, located_messages
from evalward.resources.reading.repo_config import CONFIG_FILE, RepoConfig
from evalward.rundata.cache_mode import CacheMode

Locate = Callable[[tuple[str | int, ...]], tuple[int | None, int | None]]
"""The line and column of a key path of evalward.yaml, when known."""
BUILT_IN: tuple[str, ...] = ("openai", "anthropic")
"""The providers every run has, at their vendors' own URLs unless evalward.yaml moves them."""
MOCK = "mock"
QUERY_REFUSED = (
    "holds a query or a fragment (`?…`, `#…`; not shown): evalward adds the API's routes to a "
    "base URL, so what follows `?` would not be sent as written. Give a gateway's key through "
    "the provider's key variable (`apiKeyEnv` in evalward.yaml) and Azure OpenAI's "
    "`api-version` as the provider's `apiVersion`"
)
"""Why a provider's base URL may not carry a query: a gateway's key written there would be
in every message that names the URL, and no request would carry it."""
NAMED = re.compile(r"^[a-z][a-z0-9-]{0,39}\Z")
"""The name of a provider evalward.yaml adds (`ollama`, `azure`, `local-vllm`)."""


class RetrySettings(StrictModel):
    attempts: int = Field(default=4, ge=1, le=20)
    base_delay_seconds: float = Field(default=0.5, ge=0)
    max_delay_seconds: float = Field(default=30.0, ge=0)
    """Also the cap on a server's Retry-After."""


class ProviderSettings(StrictModel):
    api: Literal["openai", "anthropic", "gemini"] | None = None
    """The wire a provider evalward.yaml adds speaks: OpenAI's Chat Completions, Anthropic's
    Messages or Google's Gemini API (the built-in providers speak their own)."""
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    api_key_env: str | None = Field(default=None, pattern=ENV_NAME)
    timeout_seconds: float = Field(default=120.0, gt=0)
    """Per call; the Eval's `timeoutSeconds` bounds the whole run on top."""
    max_concurrency: int = Field(default=64, ge=1, le=1024)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    anthropic_version: str = "2023-06-01"
    """Only read by the anthropic provider (the `anthropic-version` header)."""
    api_version: str | None = Field(
        default=None, pattern=r"^(\d{4}-\d{2}-\d{2}(-preview)?|preview|latest)$"
    )
    """Azure OpenAI's dated API (an `openai` provider's): calls go to
    `{baseUrl}/deployments/{model}/…?api-version=…` with the key in `api-key`."""

    @field_validator("base_url")
    @classmethod
    def _no_query(cls, value: str | None) -> str | None:
        if value is not None and re.search(r"[?#]", value):
            raise ValueError(f"the base URL {QUERY_REFUSED}")
        return value


MAX_PRICE = 1_000_000.0
"""The dearest price a model may be given, USD per million tokens (today's dearest are in the
hundreds): a run's cost, its tokens at such prices, stays a number JSON can hold."""


class Price(StrictModel):
    """USD per million tokens; never infinite (`StrictModel`): an infinite price made a run's
    cost infinite, which results.json cannot hold, and the run ended without its files."""

    input: float = Field(ge=0, le=MAX_PRICE)
    output: float = Field(ge=0, le=MAX_PRICE)


class CacheSettings(StrictModel):
    mode: CacheMode = CacheMode.off
    dir: str = ".evalward/cache"


class ProvidersConfig(StrictModel):
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    pricing: dict[str, Price] = Field(default_factory=dict)
    cache: CacheSettings = Field(default_factory=CacheSettings)

    def provider(self, name: str) -> ProviderSettings:
        return self.providers.get(name) or ProviderSettings()

    @property
    def names(self) -> tuple[str, ...]:
        """Every provider a run has: the built-in ones, then those evalward.yaml adds."""
        return (*BUILT_IN, *sorted(set(self.providers) - set(BUILT_IN)))


def unservable(
    model_id: str, *, mock_script: bool, providers: tuple[str, ...] = BUILT_IN
) -> str | None:
    """Why no provider can answer `model_id` (a `provider/model` id), or None when one can:
    its provider is not among `providers` (the run's, `ProvidersConfig.names`), or it is the
    mock provider and no mock script is set."""
    name, _, model = model_id.partition("/")
    if not model.strip():
        return (
            f"model {model_id!r} names no model after its provider: write `provider/model`, "
            "e.g. `openai/gpt-4.1-mini`"
        )
    known = (*providers, MOCK)
    if name not in known:
        return (
            f"model {model_id!r}: unknown provider {name!r}; expected one of {', '.join(known)}"
            + ("" if name in providers else _ADD_ONE)
        )
    if name == MOCK and not mock_script:
        return (
            f"model {model_id!r} uses the mock provider, but no mock script is set; "
            "pass `--mock-script FILE` (or the action input `mock-script`)"
        )
    return None


def provider_config(raw: Mapping[str, Any] | None, locate: Locate | None = None) -> ProvidersConfig:
    """Validate the `providers`, `pricing` and `cache` sections of evalward.yaml.

    Other top-level keys of `raw` are ignored: they belong to other parts of the file. Every
    mistake is a problem of one ResourceError, at its line when `locate` can find it.
    """
    data = {k: raw[k] for k in ("providers", "pricing", "cache") if raw and raw.get(k) is not None}
    found: list[tuple[tuple[str | int, ...], str]] = []
    if isinstance(data.get("providers"), dict):
        for name, settings in data["providers"].items():
            found += [(("providers", name, *at), why) for at, why in _named(name, settings)]
    found += [
        (("pricing", key), "price keys are `provider/model` ids, e.g. `openai/gpt-4.1-mini`")
        for key in data.get("pricing") or {}
        if "/" not in str(key)
    ]
    found += _priced_providers(data)
    found += _second_gemini(data.get("providers"))
    if not found:
        try:
            return ProvidersConfig.model_validate(data)
        except ValidationError as exc:
            found += located_messages(exc, data, ProvidersConfig)
    problems = []
    for loc, message in found:
        line, column = locate(loc) if locate is not None else (None, None)
        where = ".".join(str(part) for part in loc)
        problems.append(Problem(CONFIG_FILE, line, column, where, message))
    raise ResourceError(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))


def _priced_providers(data: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """A price for a provider no run has: nothing is ever charged at it (a price for a
    provider of your own needs it declared under `providers`)."""
    declared = data.get("providers")
    known = (*BUILT_IN, MOCK, *(declared if isinstance(declared, dict) else {}))
    found: list[tuple[tuple[str, ...], str]] = []
    for key in data.get("pricing") or {}:
        provider = str(key).partition("/")[0]
        if "/" in str(key) and provider not in known:
            found.append(
                (
                    ("pricing", str(key)),
                    f"no provider {provider!r} is built in or declared under `providers`, so "
                    f"no model is ever charged at this price{did_you_mean(provider, known)}"
                    + _ADD_ONE,
                )
            )
    return found


_ADD_ONE = (
    "; a provider of your own (Ollama, Azure OpenAI, vLLM) is added under `providers` in "
    "evalward.yaml with `api: openai` (or `anthropic`, `gemini`) and its `baseUrl`"
)


def _named(name: object, settings: object) -> list[tuple[tuple[str, ...], str]]:
    """The mistakes in how the provider `name` of evalward.yaml is declared: a built-in one
    speaks its own API; any other needs a slug for a name, the API it speaks and its URL."""
    fields = settings if isinstance(settings, dict) else {}
    if name in BUILT_IN:
        api = fields.get("api")
        if api is not None and api != name:
            return [(("api",), f"the {name} provider speaks {name}'s API; remove `api`")]
        return []
    if name == MOCK:
        return [((), "the mock provider has no settings: it answers from `--mock-script FILE`")]
    if not isinstance(name, str) or not NAMED.match(name):
        return [
            (
                (),
                f"{name!r} is not a provider name: lower-case letters, digits and dashes, "
                "starting with a letter (it is the part before `/` in model ids)",
            )
        ]
    missing = [key for key in ("api", "baseUrl") if fields.get(key) is None]
    if not missing:
        return []
    return [
        (
            (),
            f"provider {name!r} is not built in ({', '.join(BUILT_IN)}), so it needs "
            f"{' and '.join(f'`{key}`' for key in missing)}: the API it speaks (`api: openai`, "
            "`api: anthropic` or `api: gemini`) and where it listens, e.g. "
            "`{ api: openai, baseUrl: http://localhost:11434/v1 }`",
        )
    ]


def _second_gemini(providers: object) -> list[tuple[tuple[str | int, ...], str]]:
    """A second provider of `api: gemini`: the model proxy's Gemini route forwards an agent's
    calls to one, and the path an SDK calls names no provider to choose between them."""
    if not isinstance(providers, dict):
        return []
    named = [n for n, s in providers.items() if isinstance(s, dict) and s.get("api") == "gemini"]
    return [
        (
            ("providers", name, "api"),
            f"{named[0]!r} already speaks `api: gemini`, and the model proxy forwards "
            "agents' Gemini calls to one provider; keep one of them",
        )
        for name in named[1:]
    ]


def from_repo_config(config: RepoConfig) -> ProvidersConfig:
    """The provider settings of a loaded `evalward.yaml`."""
    return provider_config(
        {"providers": config.providers, "pricing": config.pricing, "cache": config.cache},
        config.locate,
    )
