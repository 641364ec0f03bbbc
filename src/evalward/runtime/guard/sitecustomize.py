"""evalward's guard in a fixture run's Python processes: models only through the model proxy.

evalward puts this folder on the PYTHONPATH of every program it runs for a fixture, so Python
imports it at start-up (`site`). It wraps the resolver: a lookup of a model provider's host
(`EVALWARD_MODEL_HOSTS`, from `runtime.endpoints`) fails, and the run gets an `error` event
naming the host and the variable the SDK most likely reads, on `$EVALWARD_EVENTS` — so a call
that went past the proxy is stopped and named, never a bare "Connection error". It imports
nothing but the standard library and changes nothing else; a `sitecustomize` of the agent's
own further along the path is still imported.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
TRANSPORTS = frozenset(
    {
        "httpx",
        "httpcore",
        "anyio",
        "urllib3",
        "requests",
        "aiohttp",
        "sniffio",
        "h11",
        "sitecustomize",
    }
)


def _hosts() -> dict[str, str]:
    try:
        table = json.loads(os.environ.get("EVALWARD_MODEL_HOSTS", "{}"))
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in table.items()} if isinstance(table, dict) else {}


def _message_for(host: object, port: object, hosts: dict[str, str]) -> str | None:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return None
    name = host.strip().rstrip(".").lower()
    for known, message in hosts.items():
        if known.startswith(":"):
            if str(port) == known[1:] and name in LOOPBACK:
                return message.replace("{host}", f"{name}:{port}")
        elif name == known or (known.startswith(".") and name.endswith(known)):
            return message.replace("{host}", name)
    return None


def _callers() -> str:
    """The packages the lookup came through, outermost first (the framework, then its SDK)."""
    seen: list[str] = []
    frame = sys._getframe(2)
    while frame is not None:
        top = str(frame.f_globals.get("__name__", "")).split(".")[0]
        ours = top not in STDLIB and top not in TRANSPORTS
        if ours and top not in ("", "__main__", *seen):
            seen.append(top)
        frame = frame.f_back  # type: ignore[assignment]
    return " → ".join(reversed(seen))


def _report(message: str) -> None:
    path = os.environ.get("EVALWARD_EVENTS", "")
    line = json.dumps({"type": "error", "content": message}) + "\n"
    if path:
        with contextlib.suppress(OSError), Path(path).open("a", encoding="utf-8") as events:
            events.write(line)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"evalward: {message}\n")


def _install() -> None:
    hosts = _hosts()
    if not hosts:
        return
    resolve = socket.getaddrinfo
    reported: set[str] = set()

    def guarded(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        message = _message_for(host, port, hosts)
        if message is None:
            return resolve(host, port, *args, **kwargs)
        via = _callers()
        text = message + (f" (the call came from {via})" if via else "")
        if message not in reported:
            reported.add(message)
            _report(text)
        raise socket.gaierror(socket.EAI_NONAME, text)

    socket.getaddrinfo = guarded


def _chain() -> None:
    """Import the next `sitecustomize` on the path, as Python would have without this one."""
    here = Path(__file__).resolve().parent
    for folder in sys.path:
        candidate = Path(folder or ".").resolve() / "sitecustomize.py"
        if candidate.parent == here or not candidate.is_file():
            continue
        spec = importlib.util.spec_from_file_location("_evalward_next_sitecustomize", candidate)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        return


_install()
_chain()
