"""Where SDKs and frameworks look for a model server, all pointed at the model proxy.

Each SDK reads its own variable for the server's address and key: the official `openai` and
`anthropic` SDKs `OPENAI_BASE_URL` and `ANTHROPIC_BASE_URL`, LlamaIndex and LiteLLM (so DSPy,
CrewAI and Google ADK's `LiteLlm`) `OPENAI_API_BASE` and `ANTHROPIC_API_BASE`, Azure clients
`AZURE_OPENAI_ENDPOINT`, Ollama's `OLLAMA_HOST`, Google's `google-genai` (so Google ADK's and
Pydantic AI's Gemini models) `GOOGLE_GEMINI_BASE_URL`. A run's processes get every one, so an agent
written as its framework's documentation writes it calls the proxy whichever it reads
(docs/agent-protocols.md lists them with their readers). `PROVIDER_HOSTS` is the other side:
the hosts an agent that read none of them would call, and the variable to blame.
"""

from __future__ import annotations

from dataclasses import dataclass

BASE_URLS = {
    "OPENAI_BASE_URL": "/v1",
    "OPENAI_API_BASE": "/v1",
    "ANTHROPIC_BASE_URL": "",
    "ANTHROPIC_API_BASE": "",
    "AZURE_OPENAI_ENDPOINT": "",
    "AZURE_API_BASE": "",
    "LITELLM_PROXY_API_BASE": "/v1",
    "OLLAMA_HOST": "",
    "OLLAMA_API_BASE": "",
    "GOOGLE_GEMINI_BASE_URL": "",
}
"""The proxy's address under every name an SDK reads it from, each with the path its readers
expect after the proxy's URL (docs/agent-protocols.md names them). The proxy answers OpenAI's
and Anthropic's APIs: an Azure deployment route or Ollama's own `/api/chat` gets its 404
naming the routes it serves, so the call is refused by name instead of going elsewhere."""

KEYS = (
    "AZURE_OPENAI_API_KEY",  # openai's AzureOpenAI, LlamaIndex
    "AZURE_API_KEY",  # LiteLLM
    "LITELLM_PROXY_API_KEY",  # LiteLLM
    "OLLAMA_API_KEY",  # ollama: sent as a bearer token
    "GOOGLE_API_KEY",  # google-genai (first), Google ADK, Pydantic AI
    "GEMINI_API_KEY",  # google-genai
    "GOOGLE_GENERATIVE_AI_API_KEY",  # Vercel AI SDK's @ai-sdk/google
)
"""Key variables besides the official SDKs' (`grants.KEY_NAMES`), holding the run's key."""

API_VERSIONS = {
    "OPENAI_API_VERSION": "2024-10-21",
    "AZURE_API_VERSION": "2024-10-21",
    "GOOGLE_GENAI_USE_VERTEXAI": "false",
}
"""Azure clients refuse to start without an API version; `google-genai` told to call the
Gemini API (the proxy's route), not Vertex AI's, whatever the job's environment says."""


OFFLINE = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
}
"""What frameworks fetch or send on their own, told not to: a run calls nothing outside the
proxy on the agent's behalf. LiteLLM (so DSPy, CrewAI) fetches its price table from GitHub at
import unless told to use the copy it ships, CrewAI sends telemetry of its own, and the
OpenAI Agents SDK (to api.openai.com with whatever key it holds) and LangChain send their
traces to a vendor (OpenTelemetry exporters are pointed at the proxy instead)."""


def proxy_env(url: str, key: str) -> dict[str, str]:
    """Every base-URL and key variable of `BASE_URLS` and `KEYS`, for the proxy at `url`."""
    env = {name: f"{url}{path}" for name, path in BASE_URLS.items()}
    env |= {name: key for name in KEYS}
    return env | API_VERSIONS | OFFLINE


@dataclass(frozen=True)
class ProviderHost:
    """A model provider's host, and where an SDK that calls it takes its address from."""

    host: str
    provider: str
    variables: str
    """The variables an SDK calling it reads its address from; empty for a provider whose
    API the proxy does not speak."""


PROVIDER_HOSTS = (
    ProviderHost("api.openai.com", "OpenAI", "OPENAI_BASE_URL or OPENAI_API_BASE"),
    ProviderHost("api.anthropic.com", "Anthropic", "ANTHROPIC_BASE_URL or ANTHROPIC_API_BASE"),
    ProviderHost(".openai.azure.com", "Azure OpenAI", "AZURE_OPENAI_ENDPOINT or AZURE_API_BASE"),
    ProviderHost(".cognitiveservices.azure.com", "Azure OpenAI", "AZURE_OPENAI_ENDPOINT"),
    ProviderHost(".services.ai.azure.com", "Azure AI Foundry", "AZURE_OPENAI_ENDPOINT"),
    ProviderHost("generativelanguage.googleapis.com", "Google Gemini", "GOOGLE_GEMINI_BASE_URL"),
    ProviderHost("aiplatform.googleapis.com", "Google Vertex AI", ""),
    ProviderHost("api.mistral.ai", "Mistral", ""),
    ProviderHost("api.groq.com", "Groq", ""),
    ProviderHost("api.together.xyz", "Together", ""),
    ProviderHost("openrouter.ai", "OpenRouter", ""),
    ProviderHost("api.deepseek.com", "DeepSeek", ""),
    ProviderHost("api.x.ai", "xAI", ""),
    ProviderHost("api.cohere.com", "Cohere", ""),
    ProviderHost("api.cohere.ai", "Cohere", ""),
    ProviderHost("api.fireworks.ai", "Fireworks", ""),
    ProviderHost("api-inference.huggingface.co", "Hugging Face", ""),
    ProviderHost("router.huggingface.co", "Hugging Face", ""),
)
"""Hosts of model providers an agent must reach only through the proxy. A name starting
with a dot matches any host under it."""

OLLAMA_PORT = 11434
LOCAL_OLLAMA = ProviderHost(f":{OLLAMA_PORT}", "Ollama", "OLLAMA_HOST or OLLAMA_API_BASE")
"""An Ollama server on the agent's own machine, where the ollama clients look by default."""


def provider_of(host: str, port: int | None = None) -> ProviderHost | None:
    """The model provider `host` belongs to, if it is one (a local Ollama by its port)."""
    name = host.strip().rstrip(".").lower()
    for known in PROVIDER_HOSTS:
        if name == known.host or (known.host.startswith(".") and name.endswith(known.host)):
            return known
    if port == OLLAMA_PORT and name in ("localhost", "127.0.0.1", "::1"):
        return LOCAL_OLLAMA
    return None
