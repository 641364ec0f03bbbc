"""promptfoo providers as evalward models: `openai:…` and `anthropic:…` (and Ollama, Mistral,
Groq, DeepSeek, OpenRouter, Together, Fireworks, Perplexity, Hugging Face's router and Azure
OpenAI, through their OpenAI-compatible endpoints), with the settings that change replies
carried over and the rest refused. Where a provider's replies come from (`apiBaseUrl`, the
key's variable, prices) becomes evalward.yaml's `providers` and `pricing`
(`endpoints.py`: one provider per endpoint); a key itself is never written anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalward.importers.promptfoo import azure
from evalward.importers.promptfoo.azure import AZURE, AZURE_CONFIG_KEYS
from evalward.importers.promptfoo.mcp import mcp_servers
from evalward.importers.promptfoo.source import Files, Node

PROVIDER_KEYS = ("id", "label", "config", "prompts", "delay")
"""What a provider of a promptfoo config may hold."""

OPENAI_APIS = {"chat", "responses"}
OPENAI_OTHER_APIS = {"completion", "embedding", "embeddings", "assistant", "realtime", "image"}
OLLAMA_URL = "http://localhost:11434/v1"
DEFAULT_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
OPENAI_COMPATIBLE = {
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "togetherai": ("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "fireworks": ("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "perplexity": ("https://api.perplexity.ai", "PERPLEXITY_API_KEY"),
    "huggingface": ("https://router.huggingface.co/v1", "HF_TOKEN"),
}
"""promptfoo providers whose vendors serve OpenAI's Chat Completions: their URL and key."""
MODEL = re.compile(r"^[A-Za-z0-9._:/@-]{1,200}\Z")
PER_MILLION = 1_000_000
CONFIG_KEYS = {
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "num_predict",
    "cache_control",
    "apiBaseUrl",
    "apiHost",
    "apiKeyEnvar",
    "apiKey",
    "cost",
    "inputCost",
    "outputCost",
    "tools",
    "tool_choice",
    "mcp",
}
HUGGINGFACE_KEYS = {"max_new_tokens", "apiEndpoint", "inferenceProvider", "chatCompletion"}
"""What `huggingface:chat` reads beside the OpenAI keys: promptfoo sends `max_new_tokens` as
`max_tokens`, `apiEndpoint` as `apiBaseUrl`, and `inferenceProvider` as the model's suffix."""


@dataclass
class PromptfooProvider:
    """One promptfoo provider: the evalward model that answers in its place."""

    label: str
    model: str
    """`openai/<model>` or `anthropic/<model>`, until `endpoints.py` names the provider
    of its endpoint (`ollama/<model>`, `azure/<deployment>`)."""
    node: Node
    temperature: float | None = None
    max_tokens: int | None = None
    base_url: str | None = None
    key_env: str | None = None
    price: dict[str, float] | None = None
    """USD per million tokens, `input` and `output`."""
    prompts: list[str] | None = None
    """The labels or ids of the prompts it runs (all when None)."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """`config.tools`, as the Agent's tools: name, description, parameters."""
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """`config.mcp`, as the Agent's `mcpServers` (importers/promptfoo/mcp.py)."""
    notes: list[str] = field(default_factory=list)
    vendor: str | None = None
    """Whose server it is, when not OpenAI's or Anthropic's own (`ollama`, `azure`): the name
    of its provider in evalward.yaml."""
    api: str = ""
    """The wire it speaks: `openai` or `anthropic`."""
    tool_choice: Any = None
    """`config.tool_choice`, as written (the Agent reads either vendor's spelling)."""
    api_version: str | None = None
    """An Azure deployment's `config.apiVersion`: its provider calls Azure's dated API."""

    reads: str = ""
    """How promptfoo's provider reads a rendered prompt (importers/promptfoo/messages.py):
    `chat` (Chat Completions), `anthropic` (the Messages API) or `text` (a completion's
    prompt, sent as it is)."""

    def __post_init__(self) -> None:
        self.api = self.api or self.model.partition("/")[0]
        self.reads = self.reads or ("anthropic" if self.api == "anthropic" else "chat")


def providers(node: Node, files: Files, env: Mapping[str, str]) -> list[PromptfooProvider]:
    """Every provider of `providers:` (a string, a list, a map of id to options, file://);
    `env` is the environment promptfoo would read an Azure host and key from."""
    found: list[PromptfooProvider] = []
    for item in node.elements():
        if isinstance(item.value, dict) and "id" not in item.value and len(item.value) == 1:
            ((id_, options),) = item.items()  # the `{openai:gpt-4.1: {config: ...}}` form
            found.append(provider(options, files, env, id_=id_))
        else:
            found.append(provider(item, files, env))
    return found


def provider(
    node: Node,
    files: Files,
    env: Mapping[str, str],
    *,
    id_: str | None = None,
    embedding: bool = False,
) -> PromptfooProvider:
    """One provider; `embedding`: an embedding provider (`openai:embedding:<model>`,
    `azure:embedding:<deployment>`, `ollama:embeddings:<model>`), a `similar`'s."""
    node = _in_file(node, files)
    value = node.value
    if isinstance(value, str):
        return _located(_model(node, value, None, embedding), node, env)
    if not isinstance(value, dict):
        raise node.refuse("expected a provider id such as openai:gpt-4.1-mini, or its options")
    if id_ is None:
        id_node = node.get("id")
        if id_node is None or not isinstance(id_node.value, str):
            raise node.refuse("a provider needs an `id` such as openai:gpt-4.1-mini")
        id_ = id_node.value
    for key, child in node.items():
        if key not in PROVIDER_KEYS:
            raise child.refuse_key(key, " of a provider", PROVIDER_KEYS)
    label = node.get("label")
    config = node.get("config")
    if id_.startswith("huggingface:text-generation:") and _chat_completion(config):
        id_ = "huggingface:chat:" + id_.removeprefix("huggingface:text-generation:")
    found = _model(node, id_, str(label.value) if label is not None else None, embedding)
    prompts = node.get("prompts")
    if prompts is not None:
        found.prompts = [str(p.value) for p in prompts.elements()]
    if config is not None:
        _configure(found, config, files)
    _located(found, node, env)
    if config is not None and "apiKey" in config.value:
        variable = found.key_env or (None if found.vendor else DEFAULT_KEYS[found.api])
        found.notes.append(
            f"{found.label}: its `apiKey` is not carried over; evalward reads the key from "
            + (
                f"the environment ({variable})"
                if variable
                else "the variable its provider's `apiKeyEnv` in evalward.yaml names"
            )
        )
    return found


EMBEDDING_APIS = {"embedding", "embeddings"}


def _model(node: Node, id_: str, given: str | None, embedding: bool) -> PromptfooProvider:
    """The provider an id names; its label is the one given, else its model's name."""
    parts = id_.split(":")
    vendor, rest = parts[0], parts[1:]
    api = rest[0] if len(rest) > 1 else ""
    model = ":".join(rest[1:]) if len(rest) > 1 else ":".join(rest)
    label = given or model or id_
    found: PromptfooProvider | None = None
    if embedding:
        if api not in EMBEDDING_APIS or vendor not in {"openai", "azure", "ollama"} or not model:
            raise node.refuse(
                f"{id_!r}: evalward computes `similar` with OpenAI's embeddings API: name an "
                "openai:embedding:<model>, azure:embedding:<deployment> or "
                "ollama:embeddings:<model> provider",
                droppable=False,
            )
        api = "chat"  # the same server and key as the vendor's chat models
    if vendor == "openai" and api in OPENAI_APIS | {""}:
        found = PromptfooProvider(label, f"openai/{model}", node)
        if api == "responses":
            found.notes.append(f"{id_}: evalward calls the model through Chat Completions")
    elif vendor == "anthropic" and api in {"messages", ""}:
        found = PromptfooProvider(label, f"anthropic/{model}", node)
    elif vendor in OPENAI_COMPATIBLE and api in {"chat", ""}:
        url, key_env = OPENAI_COMPATIBLE[vendor]
        found = PromptfooProvider(
            label, f"openai/{model}", node, base_url=url, key_env=key_env, vendor=vendor
        )
        found.notes.append(f"{id_}: called through {vendor}'s OpenAI-compatible API, {url}")
    elif vendor == "ollama" and api in {"chat", ""}:
        found = PromptfooProvider(
            label,
            f"openai/{model}",
            node,
            base_url=OLLAMA_URL,
            vendor="ollama",
            reads="text" if api == "" else "chat",  # `ollama:<model>`: its completion API
        )
        found.notes.append(f"{id_}: served by Ollama's OpenAI-compatible endpoint, {OLLAMA_URL}")
    elif vendor in AZURE and api == "chat":
        found = PromptfooProvider(label, f"openai/{model}", node, vendor="azure")
    if found is None or not MODEL.match(model):  # an empty model too
        raise node.refuse(_unmapped(id_, vendor, api), droppable=True)
    return found


def _chat_completion(config: Node | None) -> bool:
    """Whether promptfoo calls a `huggingface:text-generation` model through the chat API:
    `config.chatCompletion: true`, or an `apiEndpoint` of the chat API."""
    if config is None or not isinstance(config.value, dict):
        return False
    chat = config.value.get("chatCompletion")
    if chat is not None:
        return chat is True
    endpoint = config.value.get("apiEndpoint")
    return isinstance(endpoint, str) and "/v1/chat" in endpoint


def _unmapped(id_: str, vendor: str, api: str) -> str:
    """Why the provider `id_` is left out, and what evalward calls instead."""
    if vendor == "huggingface" and api == "text-generation":
        model = id_.split(":", 2)[2]
        return (
            f"{id_!r} is left out: promptfoo sends it the bare prompt on Hugging Face's "
            "text-generation API, which evalward has no equivalent of; write "
            f"`huggingface:chat:{model}` (or add `config.chatCompletion: true`), which both "
            "promptfoo and evalward call on router.huggingface.co's OpenAI-compatible API, "
            "the prompt as a chat message"
        )
    if vendor == "replicate":
        return (
            f"{id_!r} is left out: promptfoo calls Replicate's predictions API, which evalward "
            "has no equivalent of; serve the model on an OpenAI-compatible server (vLLM, "
            "Ollama, Hugging Face's router) and write it as `openai:chat:<model>` with "
            "`config: { apiBaseUrl: <its /v1 URL> }` (`max_new_tokens` is `max_tokens` "
            "there), for promptfoo and evalward alike"
        )
    if vendor in AZURE:
        return (
            f"{id_!r} is left out: evalward calls an Azure OpenAI deployment through Chat "
            "Completions (azure:chat:<deployment>, the deployment in the id), and has no "
            f"equivalent of its {api or 'default'} API"
        )
    what = "this kind of model call" if api in OPENAI_OTHER_APIS else "this provider"
    return (
        f"{id_!r} is left out: evalward has no equivalent of {what}; it calls "
        "openai:chat:<model> and anthropic:messages:<model> models, and any OpenAI-compatible "
        "server as openai:chat:<model> with `config: { apiBaseUrl: ... }`"
    )


def _located(found: PromptfooProvider, node: Node, env: Mapping[str, str]) -> PromptfooProvider:
    """`found`, with an Azure deployment's resource, api-version and key variable where
    promptfoo finds them (importers/promptfoo/azure.py)."""
    if found.vendor == "azure":
        deployment = found.model.partition("/")[2]
        located = azure.locate(found.label, deployment, found.key_env, node, env)
        found.base_url, found.api_version = located.base_url, located.api_version
        found.key_env = located.key_env
        found.notes += located.notes
    return found


# One case per promptfoo `config` key, read top to bottom as a table (C901 counts each a path).
def _configure(found: PromptfooProvider, config: Node, files: Files) -> None:  # noqa: C901
    for key, child in config.items():
        value = child.value
        if found.vendor == "azure" and key in AZURE_CONFIG_KEYS:
            continue  # read where the deployment is located (azure.py)
        if found.vendor == "huggingface" and key in HUGGINGFACE_KEYS:
            _huggingface(found, key, child)
            continue
        if key not in CONFIG_KEYS:
            raise child.refuse(
                f"`config.{key}` changes the replies and evalward's Agent has no equivalent; "
                "remove it, or drop it with --skip-unsupported"
            )
        if key == "temperature" and isinstance(value, int | float):
            found.temperature = float(value)
        elif key in ("max_tokens", "max_completion_tokens", "num_predict") and isinstance(
            value, int
        ):  # num_predict: Ollama's name for it
            found.max_tokens = value
        elif key == "apiBaseUrl" and isinstance(value, str) and re.match(r"^https?://", value):
            found.base_url = value
        elif key == "apiHost" and isinstance(value, str) and re.match(r"^[\w.:-]+$", value):
            found.base_url = f"https://{value}/v1"
        elif key == "apiKeyEnvar" and isinstance(value, str) and re.match(r"^[A-Za-z_]\w*$", value):
            found.key_env = value
        elif key == "apiKey":
            continue  # never written: said once the key's variable is known, below
        elif key == "cache_control":
            found.notes.append(
                f"{found.label}: `cache_control` asks the provider to cache the prompt; it "
                "changes no reply, and evalward's own response cache keeps replies"
            )
        elif key == "tool_choice":
            found.tool_choice = value
        elif key == "tools":
            found.tools = agent_tools(_in_file(child, files))
            found.notes.append(
                f"{found.label}: its tools are offered to the model; promptfoo stops at the "
                "model's tool call, evalward answers it (the tool has no implementation: give "
                "it a `mock` in the Agent) and checks the final answer; check the call itself "
                "with toolCalled / toolArgs"
            )
        elif key == "mcp":
            found.mcp_servers = mcp_servers(child, found.label, found.notes)
        elif key in ("cost", "inputCost", "outputCost") and isinstance(value, int | float):
            price = found.price or {}
            if key in ("cost", "inputCost"):
                price["input"] = float(value) * PER_MILLION
            if key in ("cost", "outputCost"):
                price["output"] = float(value) * PER_MILLION
            found.price = price
        else:
            raise child.refuse(f"`config.{key}`: {value!r} is not a value evalward can use")
    if found.price is not None and set(found.price) != {"input", "output"}:
        raise config.refuse("give both `inputCost` and `outputCost`, or `cost` for both")


def _huggingface(found: PromptfooProvider, key: str, child: Node) -> None:
    """A `huggingface:chat` setting, as promptfoo hands it to the OpenAI-compatible call."""
    value = child.value
    if key == "max_new_tokens" and isinstance(value, int) and not isinstance(value, bool):
        found.max_tokens = found.max_tokens if found.max_tokens is not None else value
    elif key == "apiEndpoint" and isinstance(value, str) and re.match(r"^https?://", value):
        found.base_url = re.sub(r"/chat/completions/?$", "", value)
    elif key == "inferenceProvider" and isinstance(value, str) and MODEL.match(value):
        if ":" not in found.model.partition("/")[2]:  # a suffix in the id wins, as in promptfoo
            found.model = f"{found.model}:{value}"
    elif key == "chatCompletion" and value is True:
        pass  # read with the id: the model is called through the chat API
    else:
        raise child.refuse(f"`config.{key}`: {value!r} is not a value evalward can use")


def _in_file(node: Node, files: Files) -> Node:
    """A value as written, or the file its `file://` names (a provider's, or promptfoo's tools
    file for `config.tools`)."""
    value = node.value
    if isinstance(value, str) and value.startswith("file://"):
        return files.document(node, files.path_of(node, value))
    return node


def agent_tools(node: Node) -> list[dict[str, Any]]:
    """OpenAI's `[{type: function, function: {name, description, parameters}}]` (or
    Anthropic's `[{name, description, input_schema}]`) as an Agent's tools."""
    tools = []
    for item in node.elements():
        value = item.value
        function = value.get("function") if isinstance(value, dict) else None
        spec = function if isinstance(function, dict) else value
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise item.refuse("expected a tool: `{type: function, function: {name, ...}}`")
        if not re.match(r"^[a-zA-Z0-9_-]{1,64}$", spec["name"]):
            raise item.refuse(f"{spec['name']!r} is not a tool name a model API takes")
        schema = spec.get("parameters", spec.get("input_schema", {"type": "object"}))
        if not isinstance(schema, dict):
            raise item.refuse("a tool's parameters are a JSON Schema object")
        tool: dict[str, Any] = {"name": spec["name"], "parameters": schema}
        if isinstance(spec.get("description"), str):
            tool["description"] = spec["description"]
        tools.append(tool)
    return tools


def grader(node: Node, files: Files, env: Mapping[str, str]) -> PromptfooProvider:
    """The provider `options.provider` or an assertion's `provider` names for grading (a map of
    `text:` / `embedding:` providers counts by its `text` one; `is_grader` says whether it has
    one)."""
    if isinstance(node.value, dict) and "id" not in node.value:
        text = node.get("text")
        if text is None:
            raise node.refuse("a grading provider map needs its `text` provider")
        node = text
    return provider(node, files, env)


def is_grader(node: Node) -> bool:
    """Whether a grading provider names a text model (not only an `embedding` one)."""
    value = node.value
    return not (isinstance(value, dict) and "id" not in value and "text" not in value)


def embedder(node: Node, files: Files, env: Mapping[str, str]) -> PromptfooProvider:
    """The embedding provider an assertion's `provider` (or the `embedding` of a grading
    provider map) names."""
    if isinstance(node.value, dict) and "id" not in node.value and "embedding" in node.value:
        node = node.get("embedding") or node
    return provider(node, files, env, embedding=True)
