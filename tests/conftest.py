from __future__ import annotations

import gc
import os
import shutil
import stat
import subprocess
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evalward.http.client import HttpClient
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support import head_strays
from support.gitrepo import GitRepo
from support.suite import provider_env

if TYPE_CHECKING:
    import aiohttp


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that install real packages need the registries; offline, they say so."""
    if os.environ.get("EVALWARD_OFFLINE") == "1":
        skip = pytest.mark.skip(reason="needs PyPI and the npm registry (EVALWARD_OFFLINE=1)")
        for item in items:
            if item.get_closest_marker("registries") is not None:
                item.add_marker(skip)


_OPENED: weakref.WeakSet[HttpClient] = weakref.WeakSet()
"""Every client whose connection pool a test opened (`pytest_configure`)."""


FULL_COLLECTION_EVERY = 100
"""Collections of the middle generation between two full ones in a test process, instead of
10: the process holds everything the suite imports for thousands of tests, and each full
collection walks all of it (the report's tests, one worker: 6.5 s of 26 s in 25 full
collections at 10, 2.4 s in 10 at 100). The youngest generation's threshold is left as it
is (tests/toplevel/test_startup.py checks evalward's own against it)."""


_SHIMS_PASSED: list[Path] = []
"""The folder of `_past_shims`, made by this process (removed as it ends)."""


def _past_shims() -> None:
    """Where `python3` or `python` on PATH is a version manager's shim (pyenv's is a bash
    script that runs `pyenv exec`: 80 ms of CPU at each start, against 30 ms for the
    interpreter itself), put a folder first on PATH in which each is what its shim runs.
    The suite starts them thousands of times (its repositories' agents, tools and
    services): 14 % of the action's tests' wall time went to the shim. What each name runs
    stays what it was; a process the test processes start (the xdist workers) finds it
    done."""
    runs = {}
    for name in ("python3", "python"):
        found = shutil.which(name)
        if found is None:
            continue
        ran = subprocess.run(
            [found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True
        )
        real = ran.stdout.strip()
        if ran.returncode == 0 and real and os.path.realpath(real) != os.path.realpath(found):
            runs[name] = real
    if not runs:
        return
    # not in /tmp: a virtualenv made with it links to it, and evalward refuses a link that
    # leads through a folder an agent user may write
    place = Path.home() / ".cache"
    place.mkdir(parents=True, exist_ok=True)
    if any(p.stat().st_mode & stat.S_IWOTH for p in [place, *place.parents]):
        return
    folder = Path(tempfile.mkdtemp(prefix="evalward-tests-python-", dir=place))
    for name, real in runs.items():
        (folder / name).symlink_to(real)
    os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ['PATH']}"
    _SHIMS_PASSED.append(folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the folder `_past_shims` made in this process."""
    del config
    for folder in _SHIMS_PASSED:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    """Note each client as its pool opens, for `_no_connection_pool_left_open`; collect the
    oldest generation less often (`FULL_COLLECTION_EVERY`); start `python3` past a
    version manager's shim (`_past_shims`)."""
    del config
    _past_shims()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
    opening = HttpClient._open

    def noted(client: HttpClient) -> aiohttp.ClientSession:
        _OPENED.add(client)
        return opening(client)

    HttpClient._open = noted  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _no_connection_pool_left_open() -> Iterator[None]:
    """A test that leaves a client's pool open fails itself. Left to the garbage collector,
    its sockets would be reported as unclosed in whatever test happens to run then."""
    yield
    left = [client for client in _OPENED if client._session is not None]
    _OPENED.clear()
    if left:
        pytest.fail(f"{len(left)} HTTP client(s) left open: close them (`aclose`)")


@pytest.fixture
def head_strays_made() -> Iterator[None]:
    """The test runs a head agent user's programs outside the machine's turns
    (`support/head_strays.py`)."""
    with head_strays.making():
        yield


@pytest.fixture
def head_strays_read() -> Iterator[None]:
    """The test checks a base run was kept in the result cache (`support/head_strays.py`)."""
    with head_strays.reading():
        yield


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    server = FakeGitHub()
    yield server
    server.close()
    # every request the action made must be one GitHub's OpenAPI description accepts
    assert server.contract_violations == []


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer()
    yield server
    server.close()
    # every request evalward sent, and every reply the fake rendered, is one the official
    # SDKs' types accept
    assert server.contract_violations == []


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def env(model: ScriptedModelServer) -> dict[str, str]:
    """The provider variables a run needs to reach `model` (a module may override it)."""
    return provider_env(model)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright, one per test module (report.html's tests)."""
    from support.report_pages import CHROMIUM, FLAGS

    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the `dev` extra installs playwright"
    )
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()
