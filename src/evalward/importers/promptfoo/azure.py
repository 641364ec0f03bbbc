"""Where promptfoo calls an Azure OpenAI deployment, as evalward's provider `azure` calls it:
the deployment from the id (`azure:chat:<deployment>`), the resource and the key's variable
looked up where and in the order promptfoo looks (docs/cli.md, "import promptfoo"), and
`?api-version=` its `config.apiVersion`, else DEFAULT_API_VERSION. A `{{ env.NAME }}`
resource is read from the environment the import runs in: a resource's URL is no secret, and
is written as promptfoo would call it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from evalward.importers.promptfoo.source import Node

AZURE = {"azure", "azureopenai"}
AZURE_BASE_URLS = ("AZURE_API_BASE_URL", "AZURE_OPENAI_API_BASE_URL", "AZURE_OPENAI_BASE_URL")
AZURE_HOSTS = ("AZURE_API_HOST", "AZURE_OPENAI_API_HOST")
AZURE_KEYS = ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY")
"""Where promptfoo reads an Azure resource's URL, host and key from, each in its order."""
AZURE_CONFIG_KEYS = {"apiBaseUrl", "apiHost", "apiVersion", "deploymentName"}
"""What this module reads of an Azure provider's `config`."""
DEFAULT_API_VERSION = "2024-12-01-preview"
"""The api-version promptfoo calls a chat or embeddings deployment with, unless told."""
ENV_REFERENCE = re.compile(r"^\{\{\s*env\.(\w+)\s*\}\}\Z")
HOST = re.compile(r"^[\w.:-]+\Z")
URL = re.compile(r"^https?://[\w.:@%-]+(/[\w./%~-]*)?\Z")


@dataclass
class AzureDeployment:
    """Where promptfoo calls an Azure deployment: its resource's URL, api-version and key
    variable, and what the import says of them."""

    base_url: str
    api_version: str
    key_env: str
    notes: list[str] = field(default_factory=list)


def locate(
    label: str, deployment: str, key_env: str | None, node: Node, env: Mapping[str, str]
) -> AzureDeployment:
    """The deployment `node` (labelled `label`) names, as promptfoo finds it; `key_env`: the
    key variable its config names, if any."""
    config = node.get("config")
    given = {key: config.get(key) for key in AZURE_CONFIG_KEYS} if config is not None else {}
    notes = _deployment_name(label, given.get("deploymentName"), deployment)
    base_url = f"{_resource(node, given, env, deployment)}/openai"
    version = given.get("apiVersion")
    if version is not None and not (isinstance(version.value, str) and HOST.match(version.value)):
        raise version.refuse(f"`config.apiVersion`: {version.value!r} is not an api-version")
    api_version = str(version.value) if version is not None else DEFAULT_API_VERSION
    if key_env is None:
        key_env = next((name for name in AZURE_KEYS if env.get(name)), AZURE_KEYS[0])
    notes.append(
        f"{label}: the Azure deployment {deployment!r}, called at {base_url} "
        f"(api-version {api_version}) with the key in {key_env}"
    )
    return AzureDeployment(base_url, api_version, key_env, notes)


def _deployment_name(label: str, given: Node | None, deployment: str) -> list[str]:
    """`config.deploymentName`: promptfoo calls the id's deployment whatever it says."""
    if given is None or given.value == deployment:
        return []
    if not isinstance(given.value, str):
        raise given.refuse("`config.deploymentName` is a deployment's name")
    return [
        f"{label}: `config.deploymentName` ({given.value!r}) is not the deployment "
        f"promptfoo calls: it calls the one its id names, {deployment!r}, and so does "
        f"evalward; to call {given.value!r}, write azure:chat:{given.value}"
    ]


def _resource(
    node: Node, given: dict[str, Node | None], env: Mapping[str, str], deployment: str
) -> str:
    """The resource's URL: a base URL (the config's, then the environment's), else a host
    (the same)."""
    for key, envs, read in (("apiBaseUrl", AZURE_BASE_URLS, _url), ("apiHost", AZURE_HOSTS, _host)):
        setting = given.get(key)
        if setting is not None:
            return read(_resolved(setting, env), setting, f"`config.{key}`")
        for name in envs:
            if env.get(name, "").strip():
                return read(env[name].strip(), node, name)
    raise node.refuse(
        f"{deployment!r} (azure:chat) is left out: it names no Azure resource; give "
        "`config.apiHost: <resource>.openai.azure.com` (or `config.apiBaseUrl`), or set "
        f"{', '.join(AZURE_BASE_URLS + AZURE_HOSTS)} when importing",
        droppable=True,
    )


def _resolved(node: Node, env: Mapping[str, str]) -> str:
    """A setting's text; `{{ env.NAME }}` read from the environment the import runs in."""
    value = node.value
    if not isinstance(value, str):
        raise node.refuse(f"{value!r} is not a URL or a host")
    reference = ENV_REFERENCE.match(value.strip())
    if reference is None:
        return value.strip()
    name = reference[1]
    if not env.get(name, "").strip():
        raise node.refuse(
            f"names the environment's {name}, which is not set: set it when importing, as "
            "when running promptfoo, or write the resource in",
            droppable=False,
        )
    return env[name].strip()


def _url(value: str, node: Node, what: str) -> str:
    url = value.removesuffix("/")
    if not URL.match(url):
        raise node.refuse(f"{what}: {value!r} is not the http(s) URL of an Azure resource")
    return url


def _host(value: str, node: Node, what: str) -> str:
    host = re.sub(r"^https?://", "", value).removesuffix("/")
    if not HOST.match(host):
        raise node.refuse(f"{what}: {value!r} is not the host of an Azure resource")
    return f"https://{host}"
