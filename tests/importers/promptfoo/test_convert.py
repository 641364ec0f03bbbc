"""The promptfoo importer in-process: a config written here becomes resources evalward's own
loader accepts, and a part without an equivalent is refused with its file and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.errors import ConfigError
from evalward.importers.promptfoo import resources as make
from evalward.importers.promptfoo.convert import convert

pytestmark = pytest.mark.unit

CONFIG = """\
description: order desk
prompts:
  - "Answer the customer: {{question}}"
providers:
  - openai:chat:gpt-4o-mini
tests:
  - vars: { question: "Where is order 12345?" }
    assert:
      - type: icontains
        value: "shipped (late)"
      - type: not-contains
        value: sorry
"""


def write(folder: Path, text: str, name: str = "promptfooconfig.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / name
    config.write_text(text)
    return config


def test_a_config_becomes_an_agent_a_located_fixture_and_an_eval(tmp_path: Path) -> None:
    config = write(tmp_path, CONFIG)

    conversion = convert(config, root=tmp_path, shown_from=tmp_path)

    assert conversion.suite == "order-desk"
    assert [a["spec"]["models"] for a in conversion.agents] == [["openai/gpt-4o-mini"]]
    (fixture,) = conversion.fixtures
    assert fixture["metadata"]["annotations"] == {"promptfoo": "promptfooconfig.yaml:7"}
    prompt = fixture["spec"]["input"]["payload"]["prompt"]
    assert prompt == "Answer the customer: Where is order 12345?"
    icontains, not_contains = fixture["spec"]["assertions"]
    assert not_contains == {"type": "notContains", "value": "sorry"}
    # icontains is a case-blind regex of the literal text: its parentheses match themselves
    assert icontains["type"] == "regex"
    assert re.search(icontains["pattern"], "It SHIPPED (LATE) today")
    assert not re.search(icontains["pattern"], "it shipped late")
    (evaluation,) = conversion.evals
    assert evaluation["spec"]["fixtureSelector"] == {"matchLabels": {"suite": "order-desk"}}


def test_what_it_writes_is_loaded_by_evalwards_own_loader(tmp_path: Path) -> None:
    conversion = convert(write(tmp_path / "pf", CONFIG), root=tmp_path, shown_from=tmp_path)
    suite = tmp_path / "repo" / "evals"
    suite.mkdir(parents=True)
    for name, documents in {
        "agents.yaml": conversion.agents,
        "fixtures.yaml": conversion.fixtures,
        "evals.yaml": conversion.evals,
    }.items():
        (suite / name).write_text(make.render(documents, "# imported\n"))

    resources = load_resources(tmp_path / "repo")

    assert set(resources.agents) == {"order-desk"}
    (evaluation,) = resources.evals.values()
    selected = resources.fixtures_of(evaluation.resource)
    assert [f.resource.metadata.name for f in selected] == ["order-desk-test-1"]


def test_an_assertion_with_no_equivalent_is_refused_at_its_line(tmp_path: Path) -> None:
    config = write(tmp_path, CONFIG + "      - type: not-is-json\n")

    with pytest.raises(ConfigError) as refused:
        convert(config, root=tmp_path, shown_from=tmp_path)

    message = str(refused.value)
    assert "promptfooconfig.yaml:13:" in message
    assert "`not-is-json`" in message
    assert "--skip-unsupported" in message


def test_skipping_what_has_no_equivalent_lists_it_and_keeps_the_rest(tmp_path: Path) -> None:
    config = write(tmp_path, CONFIG + "      - type: not-is-json\n")

    conversion = convert(config, root=tmp_path, shown_from=tmp_path, skip_unsupported=True)

    assert len(conversion.dropped) == 1
    (fixture,) = conversion.fixtures
    assert [a["type"] for a in fixture["spec"]["assertions"]] == ["regex", "notContains"]


def test_a_file_reference_outside_the_root_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("the deploy key\n")
    config = write(
        tmp_path / "repo",
        CONFIG.replace('"Answer the customer: {{question}}"', "file://../secret.txt"),
    )

    with pytest.raises(ConfigError) as refused:
        convert(config, root=tmp_path / "repo", shown_from=tmp_path / "repo")

    assert "is outside the repository" in str(refused.value)
    assert "the deploy key" not in str(refused.value)
    assert "promptfooconfig.yaml:3:" in str(refused.value)


def test_a_test_s_transform_vars_is_refused_with_the_rewrite_that_keeps_its_verdict(
    tmp_path: Path,
) -> None:
    transformed = CONFIG.replace(
        '  - vars: { question: "Where is order 12345?" }\n',
        '  - vars: { question: "Where is order 12345?" }\n'
        "    options:\n"
        "      transformVars: '{ ...vars, question: vars.question.trim() }'\n",
    )
    config = write(tmp_path, transformed)

    with pytest.raises(ConfigError) as refused:
        convert(config, root=tmp_path, shown_from=tmp_path, skip_unsupported=True)

    message = str(refused.value)
    assert "promptfooconfig.yaml:9:7: tests[0].options.transformVars:" in message, message
    assert "write the vars it computes into the test's `vars` and remove it" in message
    assert message.startswith("1 part of the promptfoo config")  # one located message


AZURE_SUITE = """\
description: azure desk
prompts: ["Answer: {{question}}"]
providers:
  - id: azure:chat:desk-a
    config: { apiHost: 'https://res-a.openai.azure.com/' }
  - id: azure:chat:desk-b
    config: { apiHost: '{{ env.AZURE_AI_HOST }}', apiVersion: '2025-04-01-preview' }
  - id: azure:chat:desk-c
    config: { apiHost: res-ignored.openai.azure.com }
  - id: azureopenai:chat:desk-d
    config: { deploymentName: desk-other }
tests:
  - vars: { question: "Where is order 12345?" }
    assert: [{ type: contains, value: shipped }]
"""


def test_every_documented_azure_form_is_called_where_promptfoo_calls_it(tmp_path: Path) -> None:
    """promptfoo's Azure provider: a base URL (config, then AZURE_API_BASE_URL…) wins over a
    host (config, then AZURE_API_HOST before AZURE_OPENAI_API_HOST); a host may carry its
    scheme or be `{{ env.NAME }}`; the deployment is the id's whatever `deploymentName` says;
    the api-version is the config's, else 2024-12-01-preview."""
    env = {
        "AZURE_AI_HOST": "res-b.services.ai.azure.com",
        "AZURE_OPENAI_API_HOST": "res-second.openai.azure.com",
        "AZURE_API_HOST": "res-first.openai.azure.com",
    }
    config = write(tmp_path, AZURE_SUITE)

    conversion = convert(config, root=tmp_path, shown_from=tmp_path, env=env)

    providers = conversion.settings["providers"]
    urls = {name: (p["baseUrl"], p["apiVersion"]) for name, p in providers.items()}
    default = "2024-12-01-preview"
    assert urls == {
        "azure": ("https://res-a.openai.azure.com/openai", default),
        "azure-2": ("https://res-b.services.ai.azure.com/openai", "2025-04-01-preview"),
        "azure-3": ("https://res-ignored.openai.azure.com/openai", default),
        "azure-4": ("https://res-first.openai.azure.com/openai", default),  # AZURE_API_HOST
    }
    models = [a["spec"]["models"][0] for a in conversion.agents]
    assert models == ["azure/desk-a", "azure-2/desk-b", "azure-3/desk-c", "azure-4/desk-d"]
    assert any(
        "`config.deploymentName` ('desk-other') is not the deployment promptfoo calls" in note
        for note in conversion.notes
    )

    # a base URL in the environment wins over every host, the config's too
    base = {**env, "AZURE_OPENAI_BASE_URL": "https://res-base.openai.azure.com/"}
    conversion = convert(config, root=tmp_path, shown_from=tmp_path, env=base)
    urls = {(p["baseUrl"], p["apiVersion"]) for p in conversion.settings["providers"].values()}
    assert urls == {
        ("https://res-base.openai.azure.com/openai", default),
        ("https://res-base.openai.azure.com/openai", "2025-04-01-preview"),
    }


def test_an_azure_host_from_an_unset_variable_is_refused_at_its_line(tmp_path: Path) -> None:
    config = write(tmp_path, AZURE_SUITE)

    with pytest.raises(ConfigError) as refused:
        convert(config, root=tmp_path, shown_from=tmp_path, env={"AZURE_API_HOST": "r.azure.com"})

    message = str(refused.value)
    assert "promptfooconfig.yaml:7:" in message
    assert "names the environment's AZURE_AI_HOST, which is not set" in message


def test_a_test_s_postprocess_is_its_transform_unless_a_transform_comes_first(
    tmp_path: Path,
) -> None:
    """promptfoo applies `options.transform || options.postprocess` (the older name), after
    merging defaultTest's options under the test's: a defaultTest transform wins over a
    test's postprocess."""
    (tmp_path / "first_word.py").write_text(
        "def get_transform(output, context):\n    return output.split()[0]\n"
    )
    postprocessed = CONFIG.replace(
        '  - vars: { question: "Where is order 12345?" }\n',
        '  - vars: { question: "Where is order 12345?" }\n'
        "    options: { postprocess: 'file://first_word.py' }\n",
    )
    config = write(tmp_path, postprocessed)

    (fixture,) = convert(config, root=tmp_path, shown_from=tmp_path).fixtures

    assert fixture["spec"]["transform"] == {"file": "first_word.py"}
    assert fixture["spec"]["vars"] == {"question": "Where is order 12345?"}

    defaulted = postprocessed.replace(
        "tests:\n", "defaultTest: { options: { transform: output.trim() } }\ntests:\n"
    )
    (fixture,) = convert(write(tmp_path, defaulted), root=tmp_path, shown_from=tmp_path).fixtures
    assert fixture["spec"]["transform"] == {"language": "javascript", "source": "output.trim()"}


TURNS = """\
description: turns
prompts:
  - |
    system: Answer in one word.
      user: What colour is the sky?

    assistant: Blue.
    user: And {{thing}}?
    Think first.
providers: [anthropic:messages:claude-sonnet-4-5-20250929, openai:chat:gpt-4.1-mini]
tests:
  - vars: { thing: grass }
    assert: [{ type: icontains, value: green }]
"""


def test_a_text_prompt_is_sent_to_each_api_as_promptfoo_sends_it(tmp_path: Path) -> None:
    """Anthropic's Messages API gets it line by line, `system:`, `user:` and `assistant:`
    lines opening turns (the system as text parts); Chat Completions the text itself."""
    conversion = convert(write(tmp_path, TURNS), root=tmp_path, shown_from=tmp_path)

    inputs = {f["metadata"]["labels"]["provider"]: f["spec"]["input"] for f in conversion.fixtures}
    assert inputs["claude-sonnet-4-5-202509"]["messages"] == [
        {"role": "system", "content": [{"type": "text", "text": "Answer in one word."}]},
        {"role": "user", "content": "What colour is the sky?"},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "And grass?\nThink first."},
    ]
    assert inputs["gpt-4-1-mini"]["payload"]["prompt"] == (
        "system: Answer in one word.\n  user: What colour is the sky?\n\nassistant: Blue.\n"
        "user: And grass?\nThink first.\n"
    )


@pytest.mark.parametrize(
    ("prompt", "said"),
    [
        ("'[]'", "here an empty list"),
        ("'\"just a string\"'", "here a string"),
        ("'[1, 2]'", "here a list holding other than messages"),
        ('\'{"role": "user", "content": "hi {{thing}}"}\'', "here an object"),
        ('\'{"role": "user", "content": }\'', "looks like JSON but does not parse"),
    ],
)
def test_a_prompt_chat_completions_would_refuse_is_refused_at_its_line(
    tmp_path: Path, prompt: str, said: str
) -> None:
    config = write(
        tmp_path,
        "prompts:\n"
        f"  - {prompt}\n"
        "providers: [openai:chat:gpt-4.1-mini]\n"
        "tests: [{vars: {thing: grass}, assert: [{type: icontains, value: green}]}]\n",
    )

    with pytest.raises(ConfigError) as refused:
        convert(config, root=tmp_path, shown_from=tmp_path)

    message = str(refused.value)
    assert "promptfooconfig.yaml:2:5: prompts[0]: `openai:chat:gpt-4.1-mini`" in message
    assert said in message
    assert "--skip-unsupported" in message  # the column can be left out


@pytest.mark.parametrize(
    ("added", "said"),
    [
        ('      - { type: is-json, value: "**/*" }\n', "`is-json` takes a JSON Schema object"),
        (
            '      - { type: is-json, value: "file://a\\0b.json" }\n',
            "holds a NUL character; name a file",
        ),
        (f"      - {{ type: is-json, value: 'file://{'x' * 300}.json' }}\n", "is not a file"),
    ],
    ids=["not YAML", "a NUL", "a name too long"],
)
def test_a_value_no_file_or_schema_can_be_is_refused_at_its_line(
    tmp_path: Path, added: str, said: str
) -> None:
    # each ended the import with an internal error: PyYAML's ScannerError, a ValueError from
    # resolving the path, ENAMETOOLONG from is_file
    config = write(tmp_path, CONFIG + added)

    with pytest.raises(ConfigError) as refused:
        convert(config, root=tmp_path, shown_from=tmp_path)

    assert "promptfooconfig.yaml:13:" in str(refused.value)
    assert said in str(refused.value)
