"""aiohttp, imported without loading the system's CA store for contexts evalward never uses.

When it is imported, aiohttp builds two default TLS contexts, each loading the system's CA
store (about 250 million instructions apiece: two thirds of aiohttp's import). evalward never
uses them: every https request of `http.client` carries a context of its own, made when the
first https request goes out (a run that only talks to `http://127.0.0.1` makes none), and
the model proxy and the OTLP receiver serve plain HTTP. So aiohttp is imported here with CA
loading turned off for the time of the import: its two default contexts trust no CA at all,
and a request that ever reached one would fail its certificate check, never pass unchecked.
"""

from __future__ import annotations

import ssl
import sys
import threading
from types import ModuleType

_LOCK = threading.Lock()


def load() -> ModuleType:
    """The `aiohttp` module, imported on first use (see the module's docstring)."""
    loaded = sys.modules.get("aiohttp")
    if loaded is not None:
        return loaded
    with _LOCK:
        if "aiohttp" not in sys.modules:
            # The class's own attribute, over the inherited C method, only while aiohttp's
            # connector builds its defaults; it is removed again whatever the import does.
            ssl.SSLContext.set_default_verify_paths = _load_no_ca  # type: ignore[method-assign,assignment]
            try:
                import aiohttp  # noqa: F401  # lazy: only a run that makes an HTTP call needs it
            finally:
                del ssl.SSLContext.set_default_verify_paths
    return sys.modules["aiohttp"]


def _load_no_ca(context: ssl.SSLContext) -> None:
    """What aiohttp's default contexts get instead of the system's CA store: nothing."""
