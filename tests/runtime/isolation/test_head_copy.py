"""An agent user's copy of a checkout holds what its agent's runs read (`Sandbox.limit`): the
files named, a folder whole, a link as a link with what it leads to, and never what a whole
copy leaves out."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evalward.files.committed import RepoFiles
from evalward.git import Git
from evalward.runtime.isolation.sandbox import Packages, Sandbox
from support.agentuser import agent_user
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="copies for an agent user need root")


def _files(tree: Path) -> set[str]:
    found = set()
    for folder, dirs, files in os.walk(tree):
        for name in [*files, *(d for d in dirs if (Path(folder) / d).is_symlink())]:
            found.add((Path(folder) / name).relative_to(tree).as_posix())
    return found


@needs_root
@pytest.mark.usefixtures("head_strays_made")
def test_a_limited_copy_holds_what_is_read_through_links_and_nothing_else(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "checkout"
    for path, text in {
        "agent/main.py": "main",
        "agent/lib/util.py": "util",
        "prompts/v1/bot.md": "v1",
        "prompts/v1/other.md": "other",
        "docs/readme.md": "docs",
        "secrets/persona.yaml": "hidden",
        ".git/config": "[http]",
    }.items():
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_text(text)
    (checkout / "prompts" / "current").symlink_to("v1")
    (checkout / "agent" / "run.sh").write_text("#!/bin/sh\n")
    (checkout / "agent" / "run.sh").chmod(0o700)
    os.mkfifo(checkout / "agent" / "pipe")
    sandbox = Sandbox(agent_user())
    sandbox.hide(["agent/lib/hidden.py"])
    (checkout / "agent" / "lib" / "hidden.py").write_text("hidden")
    reads = ["agent", "prompts/current/bot.md", "missing.md", ".git/config", "../outside"]
    sandbox.limit(checkout, reads)
    try:
        copy = sandbox.working_copy(checkout)
        assert _files(copy) == {
            "agent/main.py",
            "agent/lib/util.py",
            "agent/run.sh",
            "prompts/current",
            "prompts/v1/bot.md",
        }
        assert os.readlink(copy / "prompts" / "current") == "v1"
        assert (copy / "prompts" / "current" / "bot.md").read_text() == "v1"
        assert stat.S_IMODE((copy / "agent" / "run.sh").stat().st_mode) == 0o755
        assert stat.S_IMODE((copy / "agent" / "main.py").stat().st_mode) == 0o644
    finally:
        sandbox.close()


@needs_root
@pytest.mark.usefixtures("head_strays_made")
def test_each_agent_s_copy_holds_what_it_reads_and_copies_are_shared_where_they_agree(
    tmp_path: Path,
) -> None:
    """An agent's programs run in a copy of what that agent reads (`Sandbox.for_agent`), not
    the plan's: one agent does not find a file only another names. Agents that read the same
    (the whole checkout, say) share one copy; a program of no agent gets the checkout's."""
    checkout = tmp_path / "checkout"
    for path in ("agent_a/main.py", "shared/config.json", "docs/readme.md"):
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_text(path)
    sandbox = Sandbox(agent_user())
    sandbox.limit(checkout, ["agent_a", "shared"])
    sandbox.limit(checkout, ["agent_a"], "a")
    sandbox.limit(checkout, ["shared"], "b")
    sandbox.limit(checkout, ["shared"], "b-too")
    sandbox.limit(checkout, None, "everything")
    sandbox.limit(checkout, None, "everything-too")
    try:
        copies = {
            name: sandbox.for_agent(name).working_copy(checkout)
            for name in ("a", "b", "b-too", "everything", "everything-too")
        }
        assert _files(copies["a"]) == {"agent_a/main.py"}
        assert _files(copies["b"]) == {"shared/config.json"}
        assert copies["b-too"] == copies["b"] != copies["a"]
        assert _files(copies["everything"]) == {
            "agent_a/main.py",
            "shared/config.json",
            "docs/readme.md",
        }
        assert copies["everything-too"] == copies["everything"]
        assert _files(sandbox.working_copy(checkout)) == {"agent_a/main.py", "shared/config.json"}
        assert sandbox.for_agent("a").in_run(None).working_copy(checkout) == copies["a"]
    finally:
        sandbox.close()


@needs_root
@pytest.mark.usefixtures("head_strays_made")
def test_agents_copies_of_a_commit_link_the_files_they_share_from_one_written_once(
    repo: GitRepo,
) -> None:
    """Two agents that each read their own folder and a shared one: each copy holds its own,
    and the shared files are the same file in both (hard links to the copy of what they read
    together), written once, with git's bytes and modes."""
    sha = repo.commit(
        "two agents and what they share",
        {
            "agent_a/main.py": "a",
            "agent_b/main.py": "b",
            "shared/config.json": '{"v": 1}',
            "shared/sub/data.txt": "data",
            "docs/readme.md": "docs",
        },
    )
    repo.git("update-index", "--chmod=+x", "agent_a/main.py")
    repo.git("commit", "-q", "-m", "runnable")
    sha = repo.git("rev-parse", "HEAD").strip()
    checkout = repo.path
    sandbox = Sandbox(agent_user())
    sandbox.from_side(checkout, RepoFiles.at_commit(Git(checkout), sha))
    sandbox.limit(checkout, ["agent_a", "agent_b", "shared"])
    sandbox.limit(checkout, ["agent_a", "shared"], "a")
    sandbox.limit(checkout, ["agent_b", "shared"], "b")
    try:
        a = sandbox.for_agent("a").working_copy(checkout)
        b = sandbox.for_agent("b").working_copy(checkout)
        shared = {"shared/config.json", "shared/sub/data.txt"}
        assert _files(a) == {"agent_a/main.py", *shared}
        assert _files(b) == {"agent_b/main.py", *shared}
        for path in shared:
            assert (a / path).stat().st_ino == (b / path).stat().st_ino, path
            assert (a / path).stat().st_nlink == 3, "the copy of both, and each agent's"
        assert (a / "shared/config.json").read_text() == '{"v": 1}'
        assert stat.S_IMODE((a / "agent_a/main.py").stat().st_mode) == 0o755
        assert stat.S_IMODE((b / "shared/sub").stat().st_mode) == 0o755
        assert sandbox.working_copy(checkout) != a != b, "the copy of both is its own"
    finally:
        sandbox.close()


@needs_root
@pytest.mark.usefixtures("head_strays_made")
def test_a_copy_links_the_commit_s_file_never_one_of_an_environment_linked_on_its_way(
    repo: GitRepo,
) -> None:
    """Agent `a` reads both folders, so its copy holds what the agents read together; its
    environment's `node_modules` is linked in its copy over the one the commit holds. Agent
    `b` reads a file of that committed `node_modules`: its copy holds the commit's file, not
    the environment's a link in `a`'s copy leads to, which `b`'s cache key never hashed."""
    sha = repo.commit(
        "two agents, one reading a file below the other's node_modules",
        {
            "agent_a/main.js": "a",
            "agent_a/node_modules/lib/index.js": "committed",
            "agent_b/main.js": "b",
        },
    )
    checkout = repo.path
    sandbox = Sandbox(agent_user())
    sandbox.from_side(checkout, RepoFiles.at_commit(Git(checkout), sha))
    sandbox.limit(checkout, ["agent_a", "agent_b"])
    sandbox.limit(checkout, ["agent_a", "agent_b"], "a")
    sandbox.limit(checkout, ["agent_b/main.js", "agent_a/node_modules/lib/index.js"], "b")
    built = sandbox.root / "environments" / "built" / "node_modules"
    (built / "lib").mkdir(parents=True)
    (built / "lib" / "index.js").write_text("the environment's")
    try:
        packages = Packages(links=(("agent_a/node_modules", built),))
        a = sandbox.for_agent("a").with_packages(packages).working_copy(checkout)
        b = sandbox.for_agent("b").working_copy(checkout)
        assert (a / "agent_a/node_modules").readlink() == built
        assert _files(b) == {"agent_b/main.js", "agent_a/node_modules/lib/index.js"}
        assert (b / "agent_a/node_modules/lib/index.js").read_text() == "committed"
        assert not (b / "agent_a/node_modules").is_symlink()
        assert (built / "lib" / "index.js").stat().st_nlink == 1, "linked into no copy"
    finally:
        sandbox.close()
