"""evalward's guard in a fixture run's Python processes: models only through the model proxy.

evalward puts this folder on the PYTHONPATH of every program it runs for a fixture, so Python
imports it at start-up (`site`). It wraps the resolver (`_socket.getaddrinfo`, which
`socket.getaddrinfo` and so every HTTP client calls): a lookup of a model provider's host
(`EVALWARD_MODEL_HOSTS`, from `runtime.past_proxy`: one `host<TAB>message` a line) fails, and
the run gets an `error` event naming the host and the variable the SDK most likely reads, on
`$EVALWARD_EVENTS` — so a call that went past the proxy is stopped and named, never a bare
"Connection error". A `sitecustomize` of the agent's own further along the path is still
imported. It runs before every Python program of the run, so it imports only what `site` has
already loaded (`os`, `sys`) and the C module `_socket` (not `socket`, whose enums would
cost more than the rest of Python's start-up); the rest only when it has something to do.
"""

# os.path, not pathlib: importing pathlib would slow every Python start-up of the run
# ruff: noqa: PTH113, PTH118, PTH120, PTH123, SIM105

from __future__ import annotations

import _socket
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LOOPBACK = ("localhost", "127.0.0.1", "::1")
TRANSPORTS = ("httpx", "httpcore", "anyio", "urllib3", "requests", "aiohttp", "sitecustomize")
"""Packages a lookup goes through on its way from the SDK that made the call."""


def _hosts() -> list[tuple[str, str]]:
    table = os.environ.get("EVALWARD_MODEL_HOSTS", "")
    return [
        (host, message)
        for host, _, message in (line.partition("\t") for line in table.splitlines())
        if host and message
    ]


def _message_for(host: object, port: object, hosts: list[tuple[str, str]]) -> str | None:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return None
    name = host.strip().rstrip(".").lower()
    for known, message in hosts:
        if known.startswith(":"):
            if str(port) == known[1:] and name in LOOPBACK:
                return message.replace("{host}", f"{name}:{port}")
        elif name == known or (known.startswith(".") and name.endswith(known)):
            return message.replace("{host}", name)
    return None


def _callers() -> str:
    """The packages the lookup came through, outermost first (the framework, then its SDK)."""
    stdlib = getattr(sys, "stdlib_module_names", ())
    seen: list[str] = []
    frame = sys._getframe(2)
    while frame is not None:
        top = str(frame.f_globals.get("__name__", "")).split(".")[0]
        ours = top not in stdlib and top not in TRANSPORTS
        if ours and top not in ("", "__main__", *seen):
            seen.append(top)
        frame = frame.f_back  # type: ignore[assignment]
    return " → ".join(reversed(seen))


def _report(message: str) -> None:
    import json  # lazy: only a run that went past the proxy pays for it

    path = os.environ.get("EVALWARD_EVENTS", "")
    line = json.dumps({"type": "error", "content": message}) + "\n"
    if path:
        try:
            with open(path, "a", encoding="utf-8") as events:
                events.write(line)
        except OSError:
            pass
    try:
        sys.stderr.write(f"evalward: {message}\n")
    except (OSError, ValueError, AttributeError):
        pass


def _install() -> None:
    hosts = _hosts()
    if not hosts:
        return
    resolve = _socket.getaddrinfo
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
        raise _socket.gaierror(_socket.EAI_NONAME, text)

    _socket.getaddrinfo = guarded


def _chain() -> None:
    """Import the next `sitecustomize` on the path, as Python would have without this one."""
    here = os.path.dirname(os.path.realpath(__file__))
    for folder in sys.path:
        candidate = os.path.join(os.path.realpath(folder or "."), "sitecustomize.py")
        if os.path.dirname(candidate) == here or not os.path.isfile(candidate):
            continue
        module = type(sys)("_evalward_next_sitecustomize")  # not importlib: start-up time
        module.__file__ = candidate
        with open(candidate, "rb") as source:
            code = compile(source.read(), candidate, "exec")
        sys.modules[module.__name__] = module
        exec(code, module.__dict__)  # noqa: S102 (the agent's own start-up file, as `site` runs it)
        return


_install()
_chain()
