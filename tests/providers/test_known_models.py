"""Model names no provider knows (`providers/known_models.py`): a warning at the field, with
the closest known name, for a model of a vendor's own API that it does not price or list;
nothing of models behind another server. Where the warning stands is found again in the file
(`resources/reading/locate.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.providers.config import ProvidersConfig
from evalward.providers.known_models import model_references, unknown_models
from evalward.resources import ResourceSet
from evalward.resources.reading.locate import place_of
from support.documents import documents
from support.greeter import greeter_agent, greeter_eval, greeting_fixture

pytestmark = pytest.mark.unit


def _resources(tmp_path: Path, models: str, *settings: str) -> ResourceSet:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "greeter.yaml").write_text(
        documents(
            greeter_agent(models),
            greeter_eval(*settings),
            greeting_fixture("{ type: contains, value: Hi }"),
        ),
        encoding="utf-8",
    )
    return load_resources(tmp_path)


def test_a_misspelled_vendor_model_is_warned_about_at_its_line(tmp_path: Path) -> None:
    resources = _resources(tmp_path, "openai/gpt-4.1-mni, anthropic/claude-3-5-haiku")
    (problem,) = unknown_models(resources, ProvidersConfig())
    assert (problem.file, problem.line, problem.path) == (
        "agents/greeter.yaml",
        5,
        "spec.models[0]",
    )
    assert problem.message.startswith(
        "no provider knows the model 'openai/gpt-4.1-mni': it is not among the openai models "
        "evalward knows. Did you mean 'openai/gpt-4.1-mini'? "
    )
    located = resources.agents["greeter"]
    assert place_of(resources, located, ("spec", "models", 0)) == "agents/greeter.yaml:5"


def test_names_that_are_not_the_vendor_s_are_not_guessed_at(tmp_path: Path) -> None:
    resources = _resources(tmp_path, "openai/gemini-2.5-flash, openai/gpt-test")
    assert unknown_models(resources, ProvidersConfig()) == []


def test_a_provider_pointed_at_another_server_is_not_checked(tmp_path: Path) -> None:
    resources = _resources(tmp_path, "openai/gpt-9-turbo")
    assert len(unknown_models(resources, ProvidersConfig())) == 1
    elsewhere = ProvidersConfig.model_validate(
        {"providers": {"openai": {"baseUrl": "http://127.0.0.1:11434/v1"}}}
    )
    assert unknown_models(resources, elsewhere) == []


def test_a_provider_s_own_list_decides_when_it_was_asked(tmp_path: Path) -> None:
    resources = _resources(tmp_path, "openai/llama3")
    listed = {"openai": frozenset({"llama3.1", "qwen2"})}
    (problem,) = unknown_models(resources, ProvidersConfig(), listed)
    assert problem.message == (
        "the provider 'openai' does not serve the model openai/llama3: it is not among the 2 "
        "models its model list gave. Did you mean 'openai/llama3.1'?"
    )
    served = {"openai": frozenset({"llama3"})}
    assert unknown_models(resources, ProvidersConfig(), served) == []


def test_every_model_the_definitions_name_is_found_with_where_it_is(tmp_path: Path) -> None:
    resources = _resources(
        tmp_path,
        "openai/gpt-4.1-mini",
        "judge: { model: anthropic/claude-sonnet-4-0, crossCheck: { models: [openai/gpt-4.1] } }",
    )
    found = {(at, model) for _, at, model in model_references(resources)}
    assert found == {
        (("spec", "models", 0), "openai/gpt-4.1-mini"),
        (("spec", "judge", "model"), "anthropic/claude-sonnet-4-0"),
        (("spec", "judge", "crossCheck", "models", 0), "openai/gpt-4.1"),
    }
