"""Shard parts sealed with a key that no code of the pull request can obtain.

A part travels from its job to the merge as a workflow artifact, and whatever can upload an
artifact into the run (any step of any job, a dependency's install script included) could put
a part of its own in its place: results that pass, a plan with a threshold of 0. So each part
carries an HMAC-SHA256 of its content under a key the workflow hands to evalward's steps only
(the input `shard-key`, from a secret; `EVALWARD_SHARD_KEY` on the command line), and the
merge takes no part whose seal does not check out under its own key. The pull request's
programs cannot read that key: they run as another user, in an environment built from
scratch (`runtime/isolation/sandbox.py`), and other steps never get it. See docs/github.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from evalward.errors import ConfigError

KEY_ENV = "EVALWARD_SHARD_KEY"
MIN_KEY_LENGTH = 32
"""A part is an artifact anyone who can read the repository can download: a short key could
be found by trying."""
ALGORITHM = "hmac-sha256"
_DOMAIN = b"evalward shard part\n"


def check_key(key: str, where: str) -> str:
    """The key, or a ConfigError saying what a usable one is."""
    if len(key) < MIN_KEY_LENGTH:
        raise ConfigError(
            f"{where}: the key that seals shard parts must be at least {MIN_KEY_LENGTH} "
            f"characters (got {len(key)}); generate one with `openssl rand -hex 32` and keep "
            "it as a secret"
        )
    return key


def canonical(document: Any) -> bytes:
    """One byte string per JSON value, whatever its key order or spacing."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def seal(document: Mapping[str, Any], key: str) -> dict[str, Any]:
    """`document` with its seal (`seal` must not be one of its keys)."""
    return {**document, "seal": {"alg": ALGORITHM, "mac": _mac(document, key)}}


def broken(document: Mapping[str, Any], key: str | None) -> str | None:
    """Why the document's seal does not hold under `key` (None: it holds). Without a key only
    an unsealed document holds: no seal can be checked, and none is believed."""
    found = document.get("seal")
    if key is None:
        return None if found is None else f"it is sealed, and no key was given ({KEY_ENV})"
    if not isinstance(found, dict) or found.get("alg") != ALGORITHM:
        return "it carries no seal"
    content = {k: v for k, v in document.items() if k != "seal"}
    if not hmac.compare_digest(str(found.get("mac", "")), _mac(content, key)):
        return "its seal does not match its content under this key"
    return None


def _mac(document: Mapping[str, Any], key: str) -> str:
    return hmac.new(key.encode(), _DOMAIN + canonical(document), hashlib.sha256).hexdigest()
