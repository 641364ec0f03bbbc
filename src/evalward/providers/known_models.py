"""Model names no provider knows: a `validate` warning with the name it was probably meant to be.

A misspelled model (`openai/gpt-4.1-mni`) loads and validates, and fails only when its first
call comes back 404 — in the action, after the base's runs and maybe the judge's. evalward
knows the OpenAI and Anthropic models of its price list (and of `pricing` in evalward.yaml);
a model of a provider that still calls the vendor's own API (no `baseUrl` in evalward.yaml)
that is not among them, but is named as the vendor names its models (`gpt-4…`, `o3…`,
`claude-…`) or is close to one it knows, is warned about, with the closest known name. Other
names (`openai/gemini-2.5-flash` through a gateway, a test server's `gpt-test`) are not the
vendor's, and a provider pointed at another server (Ollama, a proxy) serves models evalward
cannot list: nothing is said of them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from evalward.errors import Problem
from evalward.providers.config import Locate, ProvidersConfig
from evalward.providers.pricing import PriceTable
from evalward.resources import ResourceSet
from evalward.resources.reading.locate import Locator
from evalward.resources.reading.repo_config import CONFIG_FILE
from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.resource_set import Located

VENDOR_NAMES = {
    "openai": re.compile(r"^(gpt-\d|chatgpt-|o\d)"),
    "anthropic": re.compile(r"^claude-"),
}
"""How each vendor names its own models."""


def unknown_models(
    resources: ResourceSet,
    config: ProvidersConfig,
    listed: Mapping[str, frozenset[str]] | None = None,
) -> list[Problem]:
    """A warning at each model id of the definitions that no provider knows: not in the list
    its provider gave (`listed`, from `--ask-providers`), else not in the price list."""
    prices = PriceTable(config.pricing)
    listed = listed or {}
    checked = [name for name in VENDOR_NAMES if config.provider(name).base_url is None]
    locator = Locator(resources)
    found: dict[Problem, None] = {}
    said: dict[str, str | None] = {}  # each model id once: a thousand agents name a few
    for located, at, model_id in model_references(resources):
        if model_id not in said:
            said[model_id] = _unknown(model_id, prices, listed, checked)
        message = said[model_id]
        if message is not None:
            found[locator.problem(located, at, message)] = None
    return sorted(found, key=lambda p: (p.file, p.line or 0, p.column or 0))


def _unknown(
    model_id: str,
    prices: PriceTable,
    listed: Mapping[str, frozenset[str]],
    checked: list[str],
) -> str | None:
    """What to say of `model_id` (`unknown_models`), None when it is known or not checked."""
    provider, _, model = model_id.partition("/")
    if provider in listed:
        return _not_listed(provider, model, listed[provider])
    if provider in checked and prices.of(model_id) is None:
        return _not_priced(provider, model, prices)
    return None


def _not_listed(provider: str, model: str, models: frozenset[str]) -> str | None:
    if model in models:
        return None
    close = difflib.get_close_matches(model, sorted(models), n=1, cutoff=0.6)
    hint = f" Did you mean '{provider}/{close[0]}'?" if close else ""
    return (
        f"the provider {provider!r} does not serve the model {provider}/{model}: it is not "
        f"among the {len(models)} models its model list gave.{hint}"
    )


def _not_priced(provider: str, model: str, prices: PriceTable) -> str | None:
    close = difflib.get_close_matches(model, prices.models(provider), n=1, cutoff=0.75)
    if not close and not VENDOR_NAMES[provider].match(model):
        return None
    hint = f"Did you mean '{provider}/{close[0]}'? " if close else ""
    return (
        f"no provider knows the model '{provider}/{model}': it is not among the {provider} "
        f"models evalward knows. {hint}A model newer than evalward is fine: give its price "
        "under `pricing` in evalward.yaml, so runs can cost it (or check it with "
        "`evalward validate --ask-providers`)"
    )


def model_references(resources: ResourceSet) -> list[tuple[Located[Any], PathKey, str]]:
    """Every model id the definitions name, with where it is written: the agents' models,
    the judges' (cross-checks and pairwise judges too) and the calibrations' judge models."""
    found: list[tuple[Located[Any], PathKey, str]] = []
    for located in resources.agents.values():
        for index, model in enumerate(located.resource.spec.models):
            found.append((located, ("spec", "models", index), model))
    for located_eval in resources.evals.values():
        judge = located_eval.resource.spec.judge
        if judge.model is not None:
            found.append((located_eval, ("spec", "judge", "model"), judge.model))
        if judge.cross_check is not None:
            for index, model in enumerate(judge.cross_check.models):
                at: PathKey = ("spec", "judge", "crossCheck", "models", index)
                found.append((located_eval, at, model))
        if judge.pairwise is not None and judge.pairwise.model is not None:
            at = ("spec", "judge", "pairwise", "model")
            found.append((located_eval, at, judge.pairwise.model))
    for calibration in resources.calibrations.values():
        for index, model in enumerate(calibration.resource.spec.judge_models):
            found.append((calibration, ("spec", "judgeModels", index), model))
    return found


def unused_prices(resources: ResourceSet, config: ProvidersConfig, locate: Locate) -> list[Problem]:
    """A warning at each price of evalward.yaml for a model no definition names that is
    close to one that does (`openai/gpt-4.1-mnii`): the model meant keeps its built-in price,
    and a `cost` budget is judged at a price nobody chose."""
    named = sorted({model_id for _, _, model_id in model_references(resources)})
    found = []
    for key in config.pricing:
        if key in named:
            continue
        close = difflib.get_close_matches(key, named, n=1, cutoff=0.85)
        if close:
            line, column = locate(("pricing", key))
            found.append(
                Problem(
                    CONFIG_FILE,
                    line,
                    column,
                    f"pricing.{key}",
                    f"no definition names the model {key!r}, so this price is used by "
                    f"nothing; did you mean {close[0]!r} (which keeps its built-in price)?",
                )
            )
    return found
