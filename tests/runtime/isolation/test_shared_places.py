"""Where any user may write is found by walking each writable mount: a folder every user may
write is a place however deep it is and whatever bytes name it, below a folder only root may
write inside another place too; one no other user may enter hides what it holds; links and
other mounts are not followed; read-only mounts and kernel interfaces are not walked."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalward.files.trees import remove_tree
from evalward.runtime.isolation import leftovers, shared_places

pytestmark = pytest.mark.unit


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A folder outside /tmp: every place found under /tmp is /tmp itself (outermost first)."""
    base = "/var/lib" if os.access("/var/lib", os.W_OK) else str(Path.home())
    folder = Path(tempfile.mkdtemp(prefix="evalward-places-", dir=base))
    try:
        yield folder
    finally:
        remove_tree(folder)


def _mountinfo(tmp_path: Path, *lines: str) -> Path:
    info = tmp_path / "mountinfo"
    info.write_text("".join(line + "\n" for line in lines))
    return info


def _folder(path: Path, mode: int) -> Path:
    path.mkdir(parents=True)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("kind", ["ext4", "btrfs"])  # a folder's links counted, or not
def test_every_folder_others_may_write_is_found_and_nothing_it_hides(
    tmp_path: Path, kind: str
) -> None:
    root = _folder(tmp_path / "mount", 0o755)
    deep = _folder(root / "a" / "b" / "c" / "open", 0o777)
    for parent in (root / "a", root / "a" / "b", root / "a" / "b" / "c"):
        parent.chmod(0o755)
    sticky = _folder(root / "scratch", 0o1777)
    _folder(sticky / "inner", 0o777)  # inside a place: swept with it
    closed = _folder(root / "private", 0o700)
    _folder(closed / "open-inside", 0o777)  # no other user reaches it
    odd = os.fsdecode(os.fsencode(str(root)) + b"/caf\xe9-\xff")
    Path(odd).mkdir(mode=0o777)
    Path(odd).chmod(0o777)
    (root / "link").symlink_to(_folder(tmp_path / "elsewhere", 0o777))
    info = _mountinfo(
        tmp_path,
        f"36 35 98:0 / {root} rw,noatime master:1 - {kind} /dev/root rw",
        f"37 35 98:0 / {tmp_path / 'elsewhere'} ro,noatime - {kind} /dev/root ro",
        "38 35 0:5 / /proc rw,nosuid - proc proc rw",
    )

    places = shared_places.find(info)

    found = {place for place in places.folders if place.is_relative_to(tmp_path)}
    assert found == {deep, sticky, Path(odd)}
    assert places.complete


@pytest.mark.parametrize("kind", ["tmpfs", "btrfs"])
def test_a_shared_folder_below_one_only_root_may_write_inside_tmp_is_a_place_of_its_own(
    tmp_path: Path, kind: str
) -> None:
    """A machine's `/tmp/tool/` (0755) holding `shared/` (1777), and one only others may
    pass (0711): the sweep of `/tmp` enters neither, so each shared folder is a place. One
    the sweep of a place reaches (through folders every user may write, as deep as it goes)
    is not; one past its depth is."""
    tmp = _folder(tmp_path / "tmp", 0o1777)
    tool = _folder(tmp / "tool", 0o755)
    shared = _folder(tool / "shared", 0o1777)
    passed = _folder(tmp / "hidden" / "cache", 0o1777)
    (tmp / "hidden").chmod(0o711)
    beside = _folder(tool / "open" / "inner", 0o777)  # (tool/open is a place, inner in it)
    (tool / "open").chmod(0o777)
    chain = tmp / "chain"
    for level in range(1, leftovers.DEPTH + 3):  # every user may write each
        chain = _folder(chain if level > 1 else tmp / "chain", 0o777) / f"d{level}"
    (tmp / "link").symlink_to(_folder(tmp_path / "elsewhere" / "open", 0o777).parent)
    info = _mountinfo(tmp_path, f"36 35 0:40 / {tmp} rw,nosuid - {kind} tmpfs rw")

    places = shared_places.find(info)

    found = {place for place in places.folders if place.is_relative_to(tmp_path)}
    sweeps_past = tmp.joinpath("chain", *(f"d{level}" for level in range(1, leftovers.DEPTH + 1)))
    assert found == {tmp, shared, passed, tool / "open", sweeps_past}
    assert beside.parent in found and beside not in found
    assert places.complete


def test_a_walk_cut_short_says_so(tmp_path: Path) -> None:
    root = _folder(tmp_path / "mount", 0o755)
    for index in range(5):
        _folder(root / f"d{index}", 0o755)
    info = _mountinfo(tmp_path, f"36 35 98:0 / {root} rw - ext4 /dev/root rw")

    assert not shared_places.find(info, bound=3).complete
    assert shared_places.find(info, bound=100).complete


def test_escaped_mount_points_are_read_as_the_kernel_writes_them(tmp_path: Path) -> None:
    root = _folder(tmp_path / "with space", 0o755)
    place = _folder(root / "open", 0o777)
    escaped = str(root).replace(" ", "\\040")
    info = _mountinfo(tmp_path, f"36 35 98:0 / {escaped} rw - tmpfs tmpfs rw")

    assert place in shared_places.find(info).folders


class _Reads:
    """The folders below `root` the walk reads (`os.scandir`), counted as it runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.folders: list[Path] = []
        scandir = os.scandir
        below = os.fsencode(root)

        def counted(path: Any) -> Any:
            if isinstance(path, bytes) and path.startswith(below):
                self.folders.append(Path(os.fsdecode(path)))
            return scandir(path)

        monkeypatch.setattr(os, "scandir", counted)

    def taken(self) -> set[Path]:
        read, self.folders = set(self.folders), []
        return read


def _settled(root: Path, margin_ns: int) -> None:
    """Wait until every folder below `root` last changed `margin_ns` before the clock: the
    walk keeps only lists whose folder has not changed for a while (`settled_ns`)."""
    newest = max(os.lstat(folder).st_ctime_ns for folder, _, _ in os.walk(root))
    while time.time_ns() < newest + margin_ns:
        time.sleep(0.02)


def test_a_walk_reads_again_only_what_changed_and_finds_every_place_made_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second job's walk reuses what the first read of the folders that did not change; a
    folder made writable by every user deep in a tree that did not, a shared folder made in
    a folder read before, and a tree moved in from where no one could enter are all found."""
    root = _folder(tmp_path / "mount", 0o755)
    deep = _folder(root / "a" / "b" / "c" / "d", 0o755)
    for parent in (root / "a", root / "a" / "b", root / "a" / "b" / "c"):
        parent.chmod(0o755)
    _folder(root / "x" / "y", 0o755)
    hidden = _folder(tmp_path / "hidden" / "moved" / "open", 0o777).parent
    (tmp_path / "hidden").chmod(0o700)
    kept = _folder(tmp_path / "kept", 0o700) / "walks"
    info = _mountinfo(tmp_path, f"36 35 98:0 / {root} rw - ext4 /dev/root rw")
    reads = _Reads(monkeypatch, root)
    _settled(root, 100_000_000)

    first = shared_places.find(info, kept=kept, settled_ns=50_000_000)
    assert reads.taken() == {root, root / "a", root / "a" / "b", root / "a" / "b" / "c", root / "x"}
    again = shared_places.find(info, kept=kept, settled_ns=50_000_000)
    assert reads.taken() == set()  # nothing changed: every list is the first walk's
    assert first.folders == again.folders == shared_places.find(info).folders
    reads.taken()

    deep.chmod(0o777)  # its parent's list is as it was
    shared_folder = _folder(root / "x" / "shared", 0o1777)
    hidden.rename(root / "a" / "moved")
    after = shared_places.find(info, kept=kept, settled_ns=50_000_000)

    found = {place for place in after.folders if place.is_relative_to(tmp_path)}
    assert found == {deep, shared_folder, root / "a" / "moved" / "open"}
    assert after.folders == shared_places.find(info).folders
    assert reads.taken() >= {root / "a", root / "x", root / "a" / "moved"}


@pytest.mark.parametrize(
    "spoiled", ["another owner", "others may read it", "a folder others may write"]
)
def test_what_walks_kept_is_read_only_where_no_one_else_could_have_written_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spoiled: str
) -> None:
    """The kept lists are one file only evalward's own user may write, in a folder no one
    else may write: where either is not so, the walk reads every folder itself (and writes
    nothing into a folder others may write)."""
    root = _folder(tmp_path / "mount", 0o755)
    _folder(root / "a" / "b", 0o755)
    folder = _folder(tmp_path / "kept", 0o700)
    kept = folder / "walks"
    info = _mountinfo(tmp_path, f"36 35 98:0 / {root} rw - ext4 /dev/root rw")
    _settled(root, 100_000_000)
    shared_places.find(info, kept=kept, settled_ns=50_000_000)
    assert kept.is_file()
    if spoiled == "another owner":
        os.chown(kept, 65534, 65534)
    elif spoiled == "others may read it":
        kept.chmod(0o644)
    else:
        folder.chmod(0o777)
        kept.unlink()
    reads = _Reads(monkeypatch, root)

    shared_places.find(info, kept=kept, settled_ns=50_000_000)

    assert reads.taken() == {root, root / "a"}
    assert kept.exists() == (spoiled != "a folder others may write")


def test_a_folder_changed_within_the_settling_time_is_read_again_by_the_next_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change stamped in the same tick of the clock as a read would leave the folder's
    ctime as the read saw it: a list is kept only once its folder has not changed for
    `SETTLED_NS`, so folders just made are read by every walk until then."""
    root = _folder(tmp_path / "mount", 0o755)
    _folder(root / "a" / "b", 0o755)
    kept = _folder(tmp_path / "kept", 0o700) / "walks"
    info = _mountinfo(tmp_path, f"36 35 98:0 / {root} rw - ext4 /dev/root rw")
    reads = _Reads(monkeypatch, root)

    for _ in range(2):
        shared_places.find(info, kept=kept, settled_ns=60 * 10**9)
        assert reads.taken() == {root, root / "a"}
