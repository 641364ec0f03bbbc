"""aiohttp imported without loading the system's CA store into contexts evalward never uses
(`http/aio.py`): those contexts trust no CA at all (a request reaching one fails its check,
never passes unchecked), and every context made afterwards loads the store as before."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from evalward.http.aio import load

pytestmark = pytest.mark.unit

SOURCE = Path(__file__).resolve().parents[2] / "src"
PROBE = """
import json, ssl, sys
before = ssl.SSLContext.set_default_verify_paths
from evalward.http.aio import load
aiohttp = load()
assert load() is aiohttp
from aiohttp import connector
print(json.dumps({
    "first": "aiohttp" in sys.modules,
    "default_verified": connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
    "verifies": connector._SSL_CONTEXT_VERIFIED.verify_mode == ssl.CERT_REQUIRED,
    "restored": ssl.SSLContext.set_default_verify_paths is before
    and "set_default_verify_paths" not in ssl.SSLContext.__dict__,
    "later": ssl.create_default_context().cert_store_stats()["x509_ca"],
}))
"""


def test_aiohttp_s_unused_contexts_trust_no_ca_and_later_ones_load_the_store() -> None:
    # a fresh interpreter: this one imported aiohttp long ago
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(SOURCE)!r})\n{PROBE}"],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    assert found["first"] is True
    assert found["default_verified"] == 0
    assert found["verifies"] is True  # no CA and a check required: nothing passes
    assert found["restored"] is True
    if ssl_store_has_cas():
        assert found["later"] > 0


def ssl_store_has_cas() -> bool:
    """Whether this machine's CA store holds any CA (a bare container may have none)."""
    return ssl.create_default_context().cert_store_stats()["x509_ca"] > 0


def test_in_a_process_that_has_aiohttp_it_is_the_module_already_loaded() -> None:
    import aiohttp

    assert load() is aiohttp
    assert "set_default_verify_paths" not in ssl.SSLContext.__dict__
