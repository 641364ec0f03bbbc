"""Property-based: a tree an agent shaped (folders nested past Python's recursion limit,
folders closed to everyone, FIFOs, sockets, links to `/`, to `..`, to themselves, names that
are not UTF-8) is walked, copied and removed by `files.trees` without following a link out of
it, within its bounds (a TreeError that says where, never another exception), read as a
playground's files into a state the run record writes (or refused by the playground's name),
and removed whole; what lies outside it, and what its links point to, is untouched."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalward.errors import PlaygroundError, TreeError
from evalward.files.trees import TreeBounds, copy_tree, remove_tree, walk
from evalward.resources.playground import Playground
from evalward.rundata.playground_state import PlaygroundRun, PlaygroundState
from evalward.runtime.playground.base import LivePlayground, PlaygroundSource
from evalward.runtime.playground.files import FilesRun
from evalward.runtime.playground.state import capture

pytestmark = pytest.mark.hostile

PROPERTY = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
NAMES = st.sampled_from(["a", "b", "d", "..a", " ", "x\ny", "caf\udce9", "-", "deep"])
LINK_TARGETS = ["/", "..", "../..", ".", "/etc", "self", "OUTSIDE", "nowhere/at/all"]
MODES = st.sampled_from([0o755, 0o700, 0o500, 0o000, 0o111, 0o1777])


@dataclass
class Node:
    kind: str
    name: str
    mode: int = 0o755
    children: list[Node] = field(default_factory=list)
    target: str = ""
    depth: int = 0
    """A folder: this many folders more, nested one in the other, at its bottom."""


def nodes() -> st.SearchStrategy[Node]:
    leaves = st.one_of(
        st.builds(Node, st.just("file"), NAMES, MODES),
        st.builds(Node, st.just("fifo"), NAMES),
        st.builds(Node, st.just("socket"), NAMES),
        st.builds(Node, st.just("link"), NAMES, target=st.sampled_from(LINK_TARGETS)),
    )
    return st.recursive(
        leaves,
        lambda inner: st.builds(
            Node,
            st.just("folder"),
            NAMES,
            MODES,
            st.lists(inner, max_size=4),
            depth=st.sampled_from([0, 0, 3, 70]),
        ),
        max_leaves=12,
    )


def build(top: Path, node: Node, outside: Path, sockets: list[socket.socket]) -> None:
    path = top / node.name
    if os.path.lexists(path):
        return
    if node.kind == "file":
        path.write_bytes(b"x" * 10)
        path.chmod(node.mode)
    elif node.kind == "fifo":
        os.mkfifo(path)
    elif node.kind == "socket" and len(str(path)) < 100:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        sockets.append(server)
    elif node.kind == "link":
        target = {"self": node.name, "OUTSIDE": str(outside)}.get(node.target, node.target)
        os.symlink(target, path)
    elif node.kind == "folder":
        path.mkdir()
        for child in node.children:
            build(path, child, outside, sockets)
        bottom = path
        for _ in range(node.depth):  # os.mkdir by name in the folder: no long paths
            fd = os.open(bottom, os.O_RDONLY)
            try:
                os.mkdir("n", dir_fd=fd)
            finally:
                os.close(fd)
            bottom = bottom / "n" if len(str(bottom)) < 3000 else bottom
            if bottom.name != "n":
                break
        path.chmod(node.mode)


@pytest.fixture
def place() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="evalward-trees-"))
    yield folder
    subprocess.run(["chmod", "-R", "u+rwx", str(folder)], check=False, capture_output=True)
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def hostile_tree(place: Path, top: list[Node]) -> tuple[Path, Path, list[socket.socket]]:
    """The tree under place/tree, and a folder outside it that its links may point to."""
    outside = place / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "keep.txt").write_text("untouched")
    root = place / "tree"
    root.mkdir()
    sockets: list[socket.socket] = []
    for node in top:
        build(root, node, outside, sockets)
    return root, outside, sockets


SMALL = TreeBounds(depth=100, entries=5000, seconds=60)


async def state_of(root: Path) -> str:
    """The tree as a playground's files part: read into a state the record can write, or
    refused with the playground's own error."""
    spec = Playground.model_validate({"files": {"seed": "world"}})
    assert spec.files is not None
    parts = [FilesRun(spec.files, root)]
    live = LivePlayground(PlaygroundSource("hostile", spec, root), root, None, 1.0, parts)
    try:
        state = await capture(live)
    except PlaygroundError as exc:
        assert str(exc).startswith("playground 'hostile': "), exc
        return "refused"
    record = PlaygroundRun(PlaygroundState("hostile"), state).record()
    json.loads(record.model_dump_json())
    return "read"


@PROPERTY
@given(top=st.lists(nodes(), max_size=5))
def test_any_tree_is_walked_within_its_bounds_and_never_out_of_it(
    place: Path, top: list[Node]
) -> None:
    root, outside, sockets = hostile_tree(place, top)
    try:
        seen: list[str] = []
        try:
            for entry in walk(root, SMALL, "the tree"):
                assert ".." not in entry.path.split("/")
                assert entry.depth <= SMALL.depth + 1
                if not entry.is_folder:
                    info = os.stat(entry.name, dir_fd=entry.folder_fd, follow_symlinks=False)
                    assert not stat.S_ISDIR(info.st_mode)
                seen.append(entry.path)
        except TreeError as exc:
            assert "the tree" in str(exc)
        assert len(seen) == len(set(seen))

        assert asyncio.run(state_of(root)) in ("read", "refused")

        try:
            copy_tree(root, place / "copy", SMALL)
        except TreeError:
            pass
        else:
            for entry in walk(place / "copy", SMALL):
                kind = stat.S_IFMT(entry.mode)
                assert kind in (stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK), entry.path
            remove_tree(place / "copy")

        remove_tree(root)
        assert not os.path.lexists(root)
        assert (outside / "keep.txt").read_text() == "untouched"
        assert Path("/etc/passwd").is_file()
    finally:
        for server in sockets:
            server.close()
        subprocess.run(["rm", "-rf", str(root), str(place / "copy")], check=False)


def test_a_removal_past_its_bounds_says_so_and_where(place: Path) -> None:
    root = place / "tree"
    root.mkdir()
    for index in range(50):
        (root / f"f{index}").write_text("x")
    with pytest.raises(TreeError, match=rf"{root} holds more than 20 entries"):
        remove_tree(root, TreeBounds(entries=20))
    remove_tree(root)
    assert not root.exists()


NON_ROOT = """
import os, sys
from pathlib import Path
from evalward.files.trees import remove_tree  # read as root: the checkout may be closed to nobody
os.setgid(65534)
os.setuid(65534)
root = Path(sys.argv[1])
root.mkdir()
os.chdir(root)
for _ in range(200):
    os.mkdir("d")
    os.chdir("d")
os.chdir(root)
os.makedirs("a/b")
Path("a/b/c").write_text("1")
os.chmod("a/b", 0)
os.chmod("a", 0o500)
os.chmod("d", 0o500)
os.chdir("/")
remove_tree(root)
print(os.path.lexists(root))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_a_user_without_root_removes_what_it_closed_to_itself(place: Path) -> None:
    place.chmod(0o777)
    python = "/usr/bin/python3" if Path("/usr/bin/python3").is_file() else sys.executable
    source = Path(__file__).resolve().parents[3] / "src"
    done = subprocess.run(
        [python, "-c", NON_ROOT, str(place / "tree")],
        env={"PYTHONPATH": str(source)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "False"), done.stderr
