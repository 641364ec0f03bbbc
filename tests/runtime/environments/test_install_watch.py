"""What an install has written is counted as the seal counts it: each file once however many
hard links it has, links not followed, and no further than the cap needs; what the
installer's HOME holds (its caches) apart from what the environment keeps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalward.errors import AgentRunError
from evalward.runtime.environments.environment_limits import input_limits
from evalward.runtime.environments.install_watch import (
    measure,
    measure_apart,
    over_while_writing,
    sample,
)

pytestmark = pytest.mark.unit


def test_hard_links_count_once_and_links_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.bin").write_bytes(b"x" * 1000)
    os.link(tmp_path / "lib" / "a.bin", tmp_path / "lib" / "b.bin")  # as uv links its cache
    (tmp_path / "out").symlink_to("/usr")  # never walked
    assert measure(tmp_path) == (3, 1000)  # lib, its file (twice named), the link


def test_counting_stops_past_the_most_it_needs(tmp_path: Path) -> None:
    for number in range(50):
        (tmp_path / f"f{number}").touch()
    assert measure(tmp_path, most=10)[0] == 11
    assert measure(tmp_path)[0] == 50


def sized(path: Path, size: int) -> None:
    """A file of `size` bytes, all hole (its length is what counts)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        file.truncate(size)


MB = 1 << 20


def test_what_the_installers_home_holds_is_counted_apart_and_a_linked_file_is_the_environments(
    tmp_path: Path,
) -> None:
    sized(tmp_path / "venv" / "lib" / "torch.so", 3 * MB)
    sized(tmp_path / "home" / "uv-cache" / "wheel.whl", 2 * MB)
    os.link(tmp_path / "venv" / "lib" / "torch.so", tmp_path / "home" / "uv-cache" / "torch.so")
    kept, scratch = measure_apart(tmp_path, "home")
    assert kept == (3, 3 * MB)  # venv, lib, torch.so: home is not walked
    assert scratch == (2, 2 * MB)  # uv-cache, wheel.whl: the link is the environment's


def test_a_cache_larger_than_the_environment_is_admitted_while_what_is_kept_is_held_to_the_cap(
    tmp_path: Path,
) -> None:
    limits = input_limits(size_mb=4, files=100)
    sized(tmp_path / "home" / "npm-cache" / "download.tgz", 3 * MB)
    sized(tmp_path / "node_modules" / "blob.bin", 2 * MB)
    over_while_writing(sample(tmp_path, "home", limits), limits)  # 5 MB written, 2 kept

    sized(tmp_path / "node_modules" / "more.bin", 3 * MB)
    with pytest.raises(AgentRunError, match=r"the install takes more than 4 MB \(5\.0 MB so far\)"):
        over_while_writing(sample(tmp_path, "home", limits), limits)


def test_caches_past_the_environments_own_caps_are_stopped_too(tmp_path: Path) -> None:
    """A cache does not fill the disk: it may take as much as the environment's caps."""
    limits = input_limits(size_mb=4, files=100)
    sized(tmp_path / "home" / "npm-cache" / "download.tgz", 5 * MB)
    with pytest.raises(
        AgentRunError, match=r"caches and scratch files hold 2 files, folders and links and 5\.0 MB"
    ):
        over_while_writing(sample(tmp_path, "home", limits), limits)
