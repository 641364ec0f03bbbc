"""An agent's fingerprint (what the result cache keys its runs by) lists together every path
it reads that is no plain file, where it listed each alone: what it says of each path must
be what a listing of that path alone says, git's refusal of one of them (a path that
leads out of the repository) included."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.plan.fingerprint import FileIndex, agent_fingerprint
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: reader }}
spec:
  runtime:
    command: {command}
  watch: [agent.py]
"""


def test_paths_read_together_are_what_each_read_alone_says(repo: GitRepo, tmp_path: Path) -> None:
    library = GitRepo(tmp_path / "library")
    library.commit("lib", {"answer.txt": "GOOD\n"})
    named = ["vendor/lib", "vendor/lib/none", "tools", "missing/notes.txt", "../out.txt"]
    command = json.dumps([sys.executable, *named])
    repo.write({"agents/reader.yaml": AGENT.format(command=command), "agent.py": "print(1)\n"})
    repo.write({"tools/run.sh": "echo\n"})
    repo.git(
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(library.path),
        "vendor/lib",
    )
    repo.commit("a reader of a submodule, a folder and a file")
    located = load_resources(repo.path).agents["reader"]

    files = agent_fingerprint(located, FileIndex(repo.path))["files"]

    alone = {path: FileIndex(repo.path).token(path) for path in files}
    assert files == alone
    assert set(named) <= set(files)
    assert files["vendor/lib"].startswith("submodule ")
