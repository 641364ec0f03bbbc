"""Packages for code scorers' environments, made by the test: a wheel and an npm tarball,
installed from a path outside the repository, so installing them needs no registry
(tests/scoring/code/test_code_scorer_environments_action.py)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def package_folder() -> Iterator[Path]:
    """A folder every user may read: the agent user installs from it."""
    folder = Path(tempfile.mkdtemp(prefix="evalward-scorer-packages-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def wheel(folder: Path, name: str, version: str, module: str) -> Path:
    """A pure-Python wheel of one module, `name/__init__.py` holding `module`."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": module,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: evalward-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
    }
    record = [
        f"{path},sha256={_digest(text.encode())},{len(text.encode())}"
        for path, text in files.items()
    ]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    target = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    target.chmod(0o644)
    return target


def npm_tarball(folder: Path, name: str, version: str, index: str) -> Path:
    """A package as `npm pack` writes it: `package/package.json` and `package/index.js`."""
    files = {
        "package/package.json": json.dumps({"name": name, "version": version, "main": "index.js"}),
        "package/index.js": index,
    }
    target = folder / f"{name}-{version}.tgz"
    with tarfile.open(target, "w:gz") as archive:
        for path, text in files.items():
            data = text.encode()
            entry = tarfile.TarInfo(path)
            entry.size, entry.mode = len(data), 0o644
            archive.addfile(entry, io.BytesIO(data))
    target.chmod(0o644)
    return target


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
