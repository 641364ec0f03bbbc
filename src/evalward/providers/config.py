"""Typed settings for providers, prices and the response cache, from `evalward.yaml`.

The file loader hands over the raw `providers`, `pricing` and `cache` sections; this module
gives them a shape and turns every mistake into a problem naming the key and its line. API keys are
never written in the file: a provider names the environment variable that holds its key.

    providers:
      openai:    { baseUrl: http://localhost:11434/v1, apiKeyEnv: OLLAMA_KEY }
      anthropic: { timeoutSeconds: 60, maxConcurrency: 4, retry: { attempts: 5 } }
    pricing:
      openai/my-finetune: { input: 0.3, output: 1.2 }     # USD per million tokens
    cache: { mode: read-write, dir: .evalward/cache }
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from evalward.errors import Problem, ResourceError
from evalward.rundata.cache_mode import CacheMode

if TYPE_CHECKING:
    from evalward.resources.repo_config import RepoConfig

CONFIG_FILE = "evalward.yaml"
Locate = Callable[[tuple[str | int, ...]], tuple[int | None, int | None]]
"""The line and column of a key path of evalward.yaml, when known."""
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class _Settings(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class RetrySettings(_Settings):
    attempts: int = Field(default=4, ge=1, le=20)
    base_delay_seconds: float = Field(default=0.5, ge=0)
    max_delay_seconds: float = Field(default=30.0, ge=0)
    """Also the cap on a server's Retry-After."""


class ProviderSettings(_Settings):
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    api_key_env: str | None = Field(default=None, pattern=ENV_NAME)
    timeout_seconds: float = Field(default=120.0, gt=0)
    """Per call; the Eval's `timeoutSeconds` bounds the whole run on top."""
    max_concurrency: int = Field(default=64, ge=1, le=1024)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    anthropic_version: str = "2023-06-01"
    """Only read by the anthropic provider (the `anthropic-version` header)."""


class Price(_Settings):
    """USD per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class CacheSettings(_Settings):
    mode: CacheMode = CacheMode.off
    dir: str = ".evalward/cache"


class ProvidersConfig(_Settings):
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    pricing: dict[str, Price] = Field(default_factory=dict)
    cache: CacheSettings = Field(default_factory=CacheSettings)

    def provider(self, name: str) -> ProviderSettings:
        return self.providers.get(name) or ProviderSettings()


KNOWN_PROVIDERS = ("openai", "anthropic", "mock")


def unservable(model_id: str, *, mock_script: bool) -> str | None:
    """Why no provider can answer `model_id` (a `provider/model` id), or None when one can:
    its provider is unknown, or it is the mock provider and no mock script is set."""
    name = model_id.partition("/")[0]
    if name not in KNOWN_PROVIDERS:
        return (
            f"model {model_id!r}: unknown provider {name!r}; "
            f"expected one of {', '.join(KNOWN_PROVIDERS)}"
        )
    if name == "mock" and not mock_script:
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
        for name in sorted(set(data["providers"]) - set(KNOWN_PROVIDERS)):
            found.append(
                (
                    ("providers", name),
                    f"unknown provider; expected one of {', '.join(KNOWN_PROVIDERS)}",
                )
            )
    for model_id in data.get("pricing") or {}:
        if "/" not in str(model_id):
            found.append(
                (
                    ("pricing", model_id),
                    "price keys are `provider/model` ids, e.g. `openai/gpt-4.1-mini`",
                )
            )
    if not found:
        try:
            return ProvidersConfig.model_validate(data)
        except ValidationError as exc:
            for error in exc.errors():
                found.append((tuple(error["loc"]), f"{error['msg']} (got {error.get('input')!r})"))
    problems = []
    for loc, message in found:
        line, column = locate(loc) if locate is not None else (None, None)
        where = ".".join(str(part) for part in loc)
        problems.append(Problem(CONFIG_FILE, line, column, where, message))
    raise ResourceError(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))


def from_repo_config(config: RepoConfig) -> ProvidersConfig:
    """The provider settings of a loaded `evalward.yaml`."""
    return provider_config(
        {"providers": config.providers, "pricing": config.pricing, "cache": config.cache},
        config.locate,
    )
