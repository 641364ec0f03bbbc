"""Calls that go past the model proxy: stopped where evalward can, named always.

Every variable an SDK reads for a model server points at the proxy (`runtime.endpoints`), but
an agent can still call a provider by an address in its code, or through a variable no table
knows. Two things catch it:

- **Python programs are stopped.** Every process of a fixture run has evalward's `guard/`
  folder on its PYTHONPATH; its `sitecustomize` makes a lookup of a provider's host fail and
  writes an `error` event naming the host and the variable to the run's events pipe.
- **Any program is named.** A run whose agent failed with a connection error to a provider's
  host on its stderr (Node.js's `getaddrinfo ENOTFOUND api.openai.com`, a refused local
  Ollama) is an error that names the host and the variable (`from_stderr`).

A network rule would stop every runtime, but needs privileges a container action does not
always have (docs/agent-protocols.md says so).
"""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import stat
import tempfile
from pathlib import Path

from evalward.runtime.environments.installers import open_to_others
from evalward.runtime.proxy import endpoints

GUARD = Path(__file__).resolve().parent / "guard"
"""The folder whose `sitecustomize.py` Python imports at start-up."""

_CONNECTION_FAILURE = re.compile(
    r"ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|getaddrinfo|Name or service not known|"
    r"Temporary failure in name resolution|nodename nor servname|Failed to resolve|"
    r"Connection refused|Could not resolve host|No address associated|Connection error",
    re.IGNORECASE,
)
_HOST = re.compile(
    r"(?<![\w.-])((?:[a-z0-9-]+\.)+[a-z]{2,}|localhost|127\.0\.0\.1)(?::(\d+))?", re.I
)


def message(provider: endpoints.ProviderHost, host: str) -> str:
    """Why the run is an error: the host it called, and what to point where."""
    if provider.variables:
        where = (
            f"The SDK that made it most likely reads its address from {provider.variables}, "
            "which evalward points at its model proxy, so it was given another address: in "
            "the agent's code, or in a variable evalward does not set. Leave the address to "
            f"the SDK's default variable, or read {provider.variables.split(' or ')[0]} for it"
        )
    else:
        where = (
            "The model proxy speaks OpenAI's, Anthropic's and Gemini's APIs: call an OpenAI-, "
            "Anthropic- or Gemini-compatible model through OPENAI_BASE_URL, ANTHROPIC_BASE_URL "
            "or GOOGLE_GEMINI_BASE_URL"
        )
    return (
        f"the agent called {host} ({provider.provider}) past evalward's model proxy; agents "
        f"reach models only through it (they hold no provider key). {where}"
    )


def guard_env() -> dict[str, str]:
    """The guard on PYTHONPATH (`process.limited_env` puts it before a path the agent is
    allowed), and the provider hosts with the message each gets."""
    hosts = (*endpoints.PROVIDER_HOSTS, endpoints.LOCAL_OLLAMA)
    lines = (f"{p.host}\t{message(p, '{host}')}" for p in hosts)
    return {"PYTHONPATH": str(guard_folder()), "EVALWARD_MODEL_HOSTS": "\n".join(lines)}


@functools.cache
def guard_folder() -> Path:
    """The guard's folder where an agent user can read it: GUARD itself, or (evalward
    installed where other users cannot go, a virtualenv under a 0700 home) a copy, made once
    per process in a folder evalward owns and others may only read. Without it the agent
    user's Python would find no guard, and a call past the proxy would go unnamed."""
    module = GUARD / "sitecustomize.py"
    if open_to_others(module, stat.S_IROTH):
        return GUARD
    copy = Path(tempfile.mkdtemp(prefix="evalward-guard-"))
    shutil.copyfile(module, copy / module.name)
    (copy / module.name).chmod(0o644)
    copy.chmod(0o755)
    atexit.register(shutil.rmtree, copy, True)
    return copy


def from_stderr(stderr: str) -> str | None:
    """The message for the first provider host a connection failure on `stderr` names."""
    for line in stderr.splitlines():
        if not _CONNECTION_FAILURE.search(line):
            continue
        for match in _HOST.finditer(line):
            port = int(match.group(2)) if match.group(2) else None
            provider = endpoints.provider_of(match.group(1), port)
            if provider is not None:
                at = f":{port}" if port == endpoints.OLLAMA_PORT else ""
                return message(provider, match.group(1).lower() + at)
    return None
