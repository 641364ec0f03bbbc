"""Resolve `provider/model` ids to provider instances, built once per run.

Every provider handed out is wrapped with the price table and the response cache, so token
cost and cache hits are the same for the agent loop and the judge.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalward.errors import BudgetRefusal, ConfigError, ProviderUnavailable
from evalward.files.safe_files import hash_regular
from evalward.http.client import HttpClient
from evalward.providers import anthropic, gemini, openai
from evalward.providers.base import ChatRequest, ChatResponse, Provider, RunLabels
from evalward.providers.config import (
    BUILT_IN,
    QUERY_REFUSED,
    ProvidersConfig,
    ProviderSettings,
    from_repo_config,
    unservable,
)
from evalward.providers.pricing import PriceTable
from evalward.providers.response_cache import ResponseCache
from evalward.providers.retry import RetryPolicy
from evalward.providers.vendor_api import VendorApi
from evalward.resources.reading.repo_config import load_config
from evalward.rundata.cache_mode import CacheMode
from evalward.rundata.spending import GRADING, Ceiling, Spent, worst_usage
from evalward.rundata.trace import Usage
from evalward.security import without_logins

if TYPE_CHECKING:
    from evalward.providers.mock import MockScript

MAX_CONCURRENCY = 1024
"""The largest `maxConcurrency` a provider accepts: what a provider with no limit counts as."""


COMPARED_HEAD = "head of a comparison"
"""The side a head run of a comparison keeps its forwarded calls under: a pull request's
program chooses its requests and a stream it cuts is not kept, so it could keep the reply it
likes to a request a push's run of the same agent will send, were the two one side."""


class MeteredProvider:
    """A provider plus cost on every reply, the run's tally of what it spent (`spent`), the
    ceiling its calls are held to (`ceiling`, shared by every provider of the run) and, when
    enabled, the response cache."""

    def __init__(
        self,
        inner: Provider,
        prices: PriceTable,
        cache: ResponseCache | None,
        spent: Spent,
        identity: str = "",
        priced_as: str = "",
        *,
        ceiling: Ceiling,
    ) -> None:
        self.inner = inner
        self.name = priced_as or inner.name
        """Whose prices its calls cost: its own, or (the mock) the provider it stands for."""
        self.identity = identity or inner.name
        """Where replies come from (provider, endpoint, settings that change replies)."""
        self._prices = prices
        self._cache = cache
        self.spent = spent
        self.ceiling = ceiling

    @property
    def forwarding(self) -> VendorApi | None:
        """The provider itself when it can send agents' requests upstream as they are."""
        return self.inner if isinstance(self.inner, VendorApi) else None

    def cached_forward(
        self, route: str, body: Mapping[str, Any], labels: RunLabels
    ) -> dict[str, Any] | None:
        """The stored reply to this exact request body on `route`, made by a run of the same
        side and rep, when the response cache has it (a streamed call's is the whole reply
        its stream made). The head of a comparison reads what a push's run kept, then its
        own; nothing else reads what it keeps (`store_forward`)."""
        if self._cache is None:
            return None
        read_as = (labels.side, COMPARED_HEAD) if labels.compared else (labels.side,)
        for side in read_as:
            hit = self._cache.get_raw(self._raw_key(route, body, labels.rep, side))
            if hit is not None:
                return hit
        return None

    def store_forward(
        self, route: str, body: Mapping[str, Any], labels: RunLabels, reply: Mapping[str, Any]
    ) -> None:
        if self._cache is not None:
            side = COMPARED_HEAD if labels.compared else labels.side
            self._cache.put_raw(self._raw_key(route, body, labels.rep, side), reply)

    def _raw_key(self, route: str, body: Mapping[str, Any], rep: int, side: str) -> str:
        assert self._cache is not None
        return self._cache.raw_key(self.identity, route, body, rep, side)

    def meter(self, model: str, usage: Usage, purpose: str = "agent") -> Usage:
        """`usage` of a call this provider answered, priced and counted as spent (as the
        `purpose`'s: an agent's, or a grading call's, `judge`)."""
        priced = self.priced_usage(model, usage)
        self.spent.add(priced, purpose)
        return priced

    def priced_usage(self, model: str, usage: Usage) -> Usage:
        """`usage` with its cost, counted nowhere (a reply from the response cache)."""
        return self._prices.with_cost(self.name, model, usage)

    def priced(self, model: str) -> bool:
        """Whether a call to `model` of this provider gets a cost."""
        return self._prices.of(f"{self.name}/{model}") is not None

    async def complete(
        self,
        request: ChatRequest,
        *,
        before_call: Callable[[float], Awaitable[None]] | None = None,
        admitted: bool = False,
    ) -> ChatResponse:
        """The reply, from the cache or the provider; `before_call` is awaited only when the
        provider is to be called, given the call's cost at its worst (`worst_usd`: a budget
        that holds it, once the calls in flight leave room, or refuses the call by raising),
        and the call is held to the ceiling, but where its caller `admitted` it already (the
        model proxy)."""
        key = None
        if self._cache is not None:
            key = self._cache.key(self.identity, request)
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        if before_call is not None:
            await before_call(self.worst_usd(request))
        refused = None if admitted else self.ceiling.admit()
        if refused is not None:
            raise ProviderUnavailable(refused)  # like an outage, it says nothing of the agent
        held = await self._hold(request)
        try:
            response = await self.inner.complete(request)
        finally:
            if held and self.ceiling.budget is not None:
                self.ceiling.budget.release(held)
        usage = self.meter(request.model, response.usage, request.labels.purpose)
        if request.labels.tally is not None:
            request.labels.tally.calls += 1
        response = dataclasses.replace(response, usage=usage)
        if key is not None and self._cache is not None:
            self._cache.put(key, response)
        return response

    def worst_usd(self, request: ChatRequest) -> float:
        """What `request` can cost at its worst (`spending.worst_usage`): its messages' and
        tools' bytes as input tokens, and the output limit it is sent with written whole
        (Anthropic's default where it names none); on Anthropic, a request whose parts mark
        `cache_control` reads each token at most as a one-hour cache's write costs, as the
        model proxy counts it (`wire.worst_case`). 0.0 for a model with no price."""
        sent = [dataclasses.asdict(m) for m in request.messages]
        sent += [dataclasses.asdict(t) for t in request.tools]
        size = len(json.dumps(sent, ensure_ascii=False, default=str).encode())
        limit, usage = request.max_tokens, None
        if isinstance(self.inner, anthropic.AnthropicProvider):
            usage = worst_usage(size, limit or anthropic.DEFAULT_MAX_TOKENS)
            if any("cache_control" in part for m in request.messages for part in m.parts):
                read = math.ceil(usage.input_tokens * anthropic.CACHE_WRITE_1H_PRICE)
                usage = Usage(input_tokens=read, output_tokens=usage.output_tokens)
        usage = usage or worst_usage(size, limit)
        return self.priced_usage(request.model, usage).cost_usd or 0.0

    async def _hold(self, request: ChatRequest) -> float:
        """What a grading call holds of `max-cost-usd` until its reply, its cost at its worst
        (`worst_usd`): a judge reads the run it grades, whose length the agent decides. It
        waits while the calls in flight leave no room for it; BudgetRefusal when the budget
        cannot hold it even then; 0.0 for any other call, or without a budget."""
        budget = self.ceiling.budget
        if budget is None or request.labels.purpose not in GRADING:
            return 0.0
        worst = self.worst_usd(request)
        refusal = await budget.hold(worst)
        if refusal is not None:
            raise BudgetRefusal(f"a {request.labels.purpose} call was refused: {refusal}")
        return worst if budget.holds_counted else 0.0

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass(frozen=True)
class Credentials:
    """Where a provider's key comes from; the key itself is never kept here."""

    key_env: str | None
    """None: a provider evalward.yaml adds without `apiKeyEnv`, which sends no key."""
    has_key: bool
    base_url: str
    needs_key: bool
    """Whether a run must refuse to start without the key: a built-in provider at its
    vendor's URL, or one evalward.yaml adds whose `apiKeyEnv` it names."""
    empty: bool = False
    """The key's variable is set, to nothing (a fork's secret often is)."""
    flaw: str | None = None
    """Why its key or URL variable cannot be sent (`provider_variable`), said only when a run
    uses the provider (`check_variables`): an unused provider's variable is none of its
    business."""


@dataclass
class Providers:
    """The providers of one run. With `override` set, every model id is served by it."""

    by_name: dict[str, Provider]
    override: Provider | None = None
    credentials: dict[str, Credentials] = field(default_factory=dict)
    prices: PriceTable = field(default_factory=PriceTable)
    identity: str = ""
    """What besides the model ids decides replies (the mock script's hash), for result caching."""
    by_side: bool = False
    """The mock script answers the base and the head (or one commit) differently: a result is
    then reused only for the same side and commit."""
    spent: Spent = field(default_factory=Spent)
    """What every provider of the run answered: calls, tokens, cost."""
    ceiling: Ceiling = field(default_factory=Ceiling)
    """The bound every provider's calls are held to (attribution's budget, while it runs)."""
    endpoints: dict[str, str] = field(default_factory=dict)
    """Per provider name, where its replies come from: its URL and the settings that change
    replies (not the key, not timeouts or retries)."""
    concurrency: dict[str, int] = field(default_factory=dict)
    """Per provider name, its `maxConcurrency`: calls it has in flight at once."""
    stand_ins: dict[str, MeteredProvider] = field(default_factory=dict)
    """The mock as each provider it stands for (`resolve`)."""
    names: tuple[str, ...] = BUILT_IN
    """Every provider name model ids may use (the mock's aside)."""
    gemini: str = "gemini"
    """The provider of `api: gemini` (there is at most one), which serves the model proxy's
    Gemini route."""
    key_advice: str = ""
    """Where a missing key is given, in the words of the front end that runs (`key_advice`)."""
    script: MockScript | None = None
    """The mock script `override` answers from, whose names a run checks before it starts."""
    response_cache: ResponseCache | None = None
    """evalward.yaml's response cache, when it is on: what it could not keep is said after
    the run (`ResponseCache.unkept`)."""
    settings: ProvidersConfig | None = None
    """The settings they were built from, for what a run checks of the models its
    definitions name (`known_models.unknown_models`, as `validate` does)."""

    def serving(self, api: str) -> str:
        """The provider an agent's calls to `api` through the model proxy go to: the built-in
        one of OpenAI's or Anthropic's API, the one evalward.yaml declares `api: gemini`."""
        return self.gemini if api == "gemini" else api

    def concurrency_of(self, model_id: str) -> int:
        """The `maxConcurrency` of the provider serving `model_id` (no limit: a large one)."""
        if self.override is not None:
            return MAX_CONCURRENCY
        return self.concurrency.get(model_id.partition("/")[0], MAX_CONCURRENCY)

    def identity_of(self, model_ids: Iterable[str]) -> str:
        """Where the replies to these `provider/model` ids come from, for result-cache keys: a
        result computed against one server is not reused against another."""
        if self.override is not None:
            return self.identity
        names = sorted({model_id.partition("/")[0] for model_id in model_ids})
        return "\n".join(self.endpoints.get(name, name) for name in names)

    @property
    def key_envs(self) -> list[str]:
        """The environment variables the providers read their keys from: secrets to redact."""
        return sorted({c.key_env for c in self.credentials.values() if c.key_env})

    def resolve(self, model_id: str) -> tuple[Provider, str]:
        provider_name, _, model = model_id.partition("/")
        refused = unservable(model_id, mock_script=self.override is not None, providers=self.names)
        if refused is not None:
            raise ConfigError(refused)
        if self.override is not None:
            return self._standing_in(provider_name), model
        return self.by_name[provider_name], model

    def _standing_in(self, provider_name: str) -> Provider:
        """The mock, its calls priced as those of the provider the model id names: a mock
        run costs what the same calls to those models would."""
        override = self.override
        assert override is not None, "only a mock run has stand-ins"
        if not isinstance(override, MeteredProvider) or provider_name not in self.by_name:
            return override
        if provider_name not in self.stand_ins:
            self.stand_ins[provider_name] = MeteredProvider(
                override.inner,
                self.prices,
                None,
                self.spent,
                priced_as=provider_name,
                ceiling=self.ceiling,
            )
        return self.stand_ins[provider_name]

    async def aclose(self) -> None:
        for provider in {id(p): p for p in [*self.by_name.values(), self.override] if p}.values():
            await provider.aclose()


IN_A_WORKFLOW = (
    "Add it to the workflow step's `env:` from a secret (secrets are not passed to workflows "
    "from forks)"
)
IN_A_SHELL = (
    "Set it in this shell (`export {key}=…`); or run with `--mock-script FILE`, which answers "
    "every model call from a script (no key, no network; `evalward init` writes one, "
    "evals/mock-replies.yaml)"
)


def key_advice(env: Mapping[str, str], workflow: bool | None = None) -> str:
    """Where a missing key is given: a workflow step's `env:` (the action, or a command in a
    GitHub workflow, `GITHUB_ACTIONS`), else the shell the command runs in."""
    if workflow is None:
        workflow = env.get("GITHUB_ACTIONS") == "true"
    return IN_A_WORKFLOW if workflow else IN_A_SHELL


def build_providers(
    env: Mapping[str, str],
    *,
    mock_script: str | None = None,
    config: ProvidersConfig | None = None,
    cache_root: Path | None = None,
    workflow: bool | None = None,
) -> Providers:
    """Providers configured from the environment the official SDKs read and evalward.yaml.

    `cache_root` anchors a relative `cache.dir` (the repository root); `workflow` says
    whether a missing key is given in a workflow step (the action) or in a shell (None: in a
    workflow when GITHUB_ACTIONS says so).
    """
    config = config or ProvidersConfig()
    prices = PriceTable(config.pricing)
    spent = Spent()
    cache: ResponseCache | None = None
    if config.cache.mode is not CacheMode.off:
        directory = Path(config.cache.dir)
        if not directory.is_absolute():
            directory = (cache_root or Path.cwd()) / directory
        cache = ResponseCache(directory, config.cache.mode)
    built = Providers(
        by_name={},
        prices=prices,
        spent=spent,
        names=config.names,
        response_cache=cache,
        settings=config,
    )
    built.key_advice = key_advice(env, workflow)
    ceiling = built.ceiling
    for name in config.names:
        settings = config.provider(name)
        provider, credentials, endpoint = _provider(name, settings, env)
        metered = MeteredProvider(provider, prices, cache, spent, endpoint, ceiling=ceiling)
        built.by_name[name] = metered
        built.endpoints[name] = endpoint
        built.concurrency[name] = settings.max_concurrency
        built.credentials[name] = credentials
        if settings.api == "gemini":
            built.gemini = name
    if mock_script:
        # lazy: the mock provider imports PyYAML, which a run without a mock script never needs
        from evalward.providers.mock import MockProvider, load_script

        script = load_script(Path(mock_script))
        built.override = MeteredProvider(MockProvider(script), prices, None, spent, ceiling=ceiling)
        built.by_side = script.by_side
        built.script = script
        built.by_name["mock"] = built.override
        built.identity = "mock:" + hash_regular(mock_script)
    return built


_STANDARD = {
    "openai": (openai.DEFAULT_BASE_URL, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": (anthropic.DEFAULT_BASE_URL, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}
"""Per provider: its own base URL, and the variables its official SDK reads key and URL from."""


def _provider(
    name: str, settings: ProviderSettings, env: Mapping[str, str]
) -> tuple[Provider, Credentials, str]:
    """One provider from its settings and the environment: the provider, where its key comes
    from, and what identifies where its replies come from (its endpoint)."""
    credentials = _credentials(name, settings, env)
    key_env, base_url = credentials.key_env, credentials.base_url
    api_key = provider_variable(env, key_env) if key_env and credentials.flaw is None else None
    client = HttpClient(
        timeout_seconds=settings.timeout_seconds,
        connect_timeout_seconds=min(10.0, settings.timeout_seconds),
        max_connections=settings.max_concurrency,
    )
    retry = RetryPolicy(
        settings.retry.attempts, settings.retry.base_delay_seconds, settings.retry.max_delay_seconds
    )
    limit = settings.max_concurrency
    provider: VendorApi
    if (settings.api or name) == "openai":
        endpoint = f"openai {base_url.rstrip('/')}"
        if settings.api_version is not None:
            endpoint += f" api-version={settings.api_version}"
        provider = openai.OpenAIProvider(
            client,
            base_url=base_url,
            api_key=api_key,
            retry=retry,
            max_concurrency=limit,
            key_env=key_env or "",
            api_version=settings.api_version,
        )
    elif settings.api == "gemini":
        endpoint = f"gemini {base_url.rstrip('/')}"
        provider = gemini.GeminiProvider(
            client,
            base_url=base_url,
            api_key=api_key,
            retry=retry,
            max_concurrency=limit,
            key_env=key_env or "",
        )
    else:
        version = settings.anthropic_version
        endpoint = f"anthropic {base_url.rstrip('/')} anthropic-version={version}"
        provider = anthropic.AnthropicProvider(
            client,
            base_url=base_url,
            api_key=api_key,
            version=version,
            retry=retry,
            max_concurrency=limit,
            key_env=key_env or "",
        )
    return provider.named(name), credentials, endpoint


def _credentials(name: str, settings: ProviderSettings, env: Mapping[str, str]) -> Credentials:
    """Where provider `name` listens and reads its key (`_read_credentials`); with a key or URL
    variable it refuses, its `flaw`, kept for a run that uses it (`check_variables`)."""
    try:
        return _read_credentials(name, settings, env)
    except ConfigError as exc:
        default_url, standard_key_env, _ = _STANDARD.get(name, ("", None, ""))
        key_env = settings.api_key_env or standard_key_env
        base_url = settings.base_url or default_url
        return Credentials(key_env, False, base_url, needs_key=True, flaw=str(exc))


def _read_credentials(name: str, settings: ProviderSettings, env: Mapping[str, str]) -> Credentials:
    """Where provider `name` listens and reads its key: a built-in one from its settings, else
    the variables its vendor's SDK reads, else its vendor's URL; one evalward.yaml adds from
    its `baseUrl` and `apiKeyEnv` alone (no key without one)."""
    if name not in _STANDARD:
        assert settings.base_url is not None, "the config requires a named provider's baseUrl"
        key_env = settings.api_key_env
        has_key = key_env is not None and provider_variable(env, key_env) is not None
        empty = key_env is not None and key_env in env and not has_key
        return Credentials(
            key_env, has_key, settings.base_url, needs_key=key_env is not None, empty=empty
        )
    default_url, standard_key_env, url_env = _STANDARD[name]
    key_env = settings.api_key_env or standard_key_env
    base_url = settings.base_url or _env_url(env, url_env) or default_url
    has_key = provider_variable(env, key_env) is not None
    empty = key_env in env and not has_key
    return Credentials(key_env, has_key, base_url, base_url == default_url, empty=empty)


def provider_variable(env: Mapping[str, str], name: str) -> str | None:
    """A provider's key or URL from the environment, None when it is unset or blank. One with
    a control character or whitespace at an end (a secret pasted with its line break) is
    refused, naming the variable and never its value: sent as it is, no request could carry
    it, and the run would stop on every call as if the provider were down."""
    value = env.get(name, "")
    if not value.strip():
        return None
    flaw = _flaw(value)
    if flaw is not None:
        raise ConfigError(
            f"{name} {flaw}, which a key or a URL never does (its value is not shown): set "
            f"{name} again without it (a secret pasted with its line break keeps the line "
            "break)"
        )
    return value


def _flaw(value: str) -> str | None:
    """What makes a provider variable's non-blank `value` unsendable, or None."""
    if value.endswith(("\n", "\r")):
        return "ends with a line break"
    control = next((c for c in value if unicodedata.category(c) == "Cc"), None)
    if control is not None:
        return f"holds a control character (U+{ord(control):04X})"
    if value.strip() != value:
        return "begins or ends with whitespace"
    return None


def _env_url(env: Mapping[str, str], name: str) -> str | None:
    """A base URL from the environment, refused without its scheme as `baseUrl` is."""
    value = provider_variable(env, name)
    if value is None:
        return None
    shown = without_logins(re.split(r"[?#]", value, maxsplit=1)[0], name)
    if not re.match(r"^https?://", value):
        raise ConfigError(
            f"{name}={shown!r}: expected an http:// or https:// URL, e.g. "
            f"http://localhost:8080/v1; add the scheme"
        )
    if re.search(r"[?#]", value):
        hidden = ", its login not shown" if "@" in value else ""
        raise ConfigError(f"{name} {QUERY_REFUSED} ({name} up to its path{hidden}: {shown!r})")
    return value


def repo_providers(root: Path) -> ProvidersConfig:
    """Provider settings from the `evalward.yaml` at `root` (defaults when there is none)."""
    return from_repo_config(load_config(root))


def check_variables(model_ids: Iterable[str], providers: Providers) -> None:
    """Fail before any run when a provider the plan needs has a key or URL variable no request
    could carry (`Credentials.flaw`); a provider it does not use, or a mock run, is not asked."""
    if providers.override is not None:
        return
    for model_id in model_ids:
        creds = providers.credentials.get(model_id.partition("/")[0])
        if creds is not None and creds.flaw is not None:
            raise ConfigError(creds.flaw)


def check_credentials(model_ids: list[str], providers: Providers) -> None:
    """Fail before any run when a provider the plan needs has no credentials, or credentials
    it cannot send (`check_variables`)."""
    check_variables(model_ids, providers)
    if providers.override is not None:
        return
    for model_id in model_ids:
        name = model_id.partition("/")[0]
        if name == "mock" and (refused := unservable(model_id, mock_script=False)):
            raise ConfigError(refused)
        creds = providers.credentials.get(name)
        if creds is None or creds.has_key or not creds.needs_key:
            continue
        state = "is empty" if creds.empty else "is not set"
        advice = (providers.key_advice or IN_A_WORKFLOW).format(key=creds.key_env)
        if name not in _STANDARD:
            raise ConfigError(
                f"model {model_id!r} needs {creds.key_env} (the `apiKeyEnv` of provider "
                f"{name!r} in evalward.yaml), which {state}. {advice}; or remove `apiKeyEnv` "
                "if the server needs no key."
            )
        url_env = f"{name.upper()}_BASE_URL"
        raise ConfigError(
            f"model {model_id!r} needs {creds.key_env}, which {state}. {advice}; or set "
            f"{url_env} to a server that needs no key."
        )
