"""Where promptfoo calls an Azure OpenAI deployment, found as promptfoo finds it
(`importers/promptfoo/azure.py`): a base URL before a host, the config before the environment,
`{{ env.NAME }}` read where the import runs, the id's deployment whatever `deploymentName`
says, and a deployment that names no resource left out with where to give one."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from evalward.errors import Refused
from evalward.importers.promptfoo.azure import DEFAULT_API_VERSION, AzureDeployment, locate
from evalward.importers.promptfoo.source import Node, Source
from evalward.resources.reading.yamlsource import parse_documents

pytestmark = pytest.mark.unit


def _locate(
    config: str, env: Mapping[str, str] | None = None, key_env: str | None = None
) -> AzureDeployment:
    (document,) = parse_documents(f"providers:\n  - id: azure:chat:gpt4o\n    config: {config}\n")
    node = Node(
        document.data["providers"][0], Source("promptfooconfig.yaml", document), ("providers", 0)
    )
    return locate("azure:chat:gpt4o", "gpt4o", key_env, node, env or {})


def test_a_host_in_the_config_is_the_resource_called_with_the_default_version() -> None:
    found = _locate("{apiHost: my-res.openai.azure.com}")
    assert (found.base_url, found.api_version, found.key_env) == (
        "https://my-res.openai.azure.com/openai",
        DEFAULT_API_VERSION,
        "AZURE_API_KEY",
    )
    assert found.notes == [
        "azure:chat:gpt4o: the Azure deployment 'gpt4o', called at "
        f"https://my-res.openai.azure.com/openai (api-version {DEFAULT_API_VERSION}) with the "
        "key in AZURE_API_KEY"
    ]


def test_a_base_url_wins_over_a_host_and_the_config_over_the_environment() -> None:
    env = {
        "AZURE_OPENAI_API_HOST": "env-host.openai.azure.com",
        "AZURE_OPENAI_BASE_URL": "https://env-base.openai.azure.com/",
        "AZURE_OPENAI_API_KEY": "k",
    }
    assert _locate("{}", env).base_url == "https://env-base.openai.azure.com/openai"
    assert _locate("{apiHost: cfg.openai.azure.com}", env).base_url == (
        "https://env-base.openai.azure.com/openai"
    )
    assert _locate("{apiBaseUrl: 'https://cfg.openai.azure.com'}", env).base_url == (
        "https://cfg.openai.azure.com/openai"
    )
    assert _locate("{}", env).key_env == "AZURE_OPENAI_API_KEY"  # the one that is set
    assert _locate("{}", env, key_env="MY_KEY").key_env == "MY_KEY"


def test_an_env_reference_is_read_where_the_import_runs() -> None:
    found = _locate(
        "{apiHost: '{{ env.RESOURCE }}', apiVersion: 2024-10-21}",
        {"RESOURCE": "r.openai.azure.com"},
    )
    assert (found.base_url, found.api_version) == (
        "https://r.openai.azure.com/openai",
        "2024-10-21",
    )
    with pytest.raises(Refused, match="names the environment's RESOURCE, which is not set"):
        _locate("{apiHost: '{{ env.RESOURCE }}'}")


def test_the_id_s_deployment_is_called_whatever_deployment_name_says() -> None:
    found = _locate("{apiHost: r.openai.azure.com, deploymentName: other}")
    assert found.notes[0].startswith(
        "azure:chat:gpt4o: `config.deploymentName` ('other') is not the deployment promptfoo calls"
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{}", "'gpt4o' (azure:chat) is left out: it names no Azure resource"),
        ("{apiBaseUrl: 'ftp://x'}", "is not the http(s) URL of an Azure resource"),
        ("{apiHost: 'bad host/'}", "is not the host of an Azure resource"),
        ("{apiHost: r.openai.azure.com, apiVersion: 'a b'}", "is not an api-version"),
        ("{apiHost: r.openai.azure.com, deploymentName: 3}", "is a deployment's name"),
    ],
)
def test_what_names_no_resource_or_a_broken_one_is_refused(config: str, message: str) -> None:
    with pytest.raises(Refused) as raised:
        _locate(config)
    assert message in raised.value.problem.message
