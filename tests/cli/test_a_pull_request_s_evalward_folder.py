"""A pull request that brings its own `.evalward` folder to `evalward run --base main`.

The command line keeps its result cache and history there. A pull request that commits a
result cache whose head runs it rewrote as passes, or makes `.evalward` a link out of the
repository, would have a reviewer's run (a fresh clone of the branch, a CI job) reuse its
results or write where it points. Neither is read nor written, as the action does not read
such a cache, and stderr says why once. Each runs the real command line on a real repository
made by `evalward init`, its model calls served by a mock script.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from support.clirun import evalward, initialised
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

REFUSES = "  - match: { agent: assistant, system: EVIL }\n    always: { content: I refuse. }\n"


def regressing(repo: GitRepo, tmp_path: Path) -> Path:
    """The project `evalward init` writes, on main; a branch whose prompt makes the agent
    refuse everything. Returns the mock script that says so (outside the repository)."""
    initialised(repo)
    script = (repo.path / "evals" / "mock-replies.yaml").read_text()
    mock = tmp_path / "mock.yaml"
    mock.write_text(script.replace("replies:\n", "replies:\n" + REFUSES, 1))
    repo.branch("regress")
    prompt = repo.path / "prompts" / "assistant.md"
    repo.commit("refuse", {"prompts/assistant.md": prompt.read_text() + "EVIL\n"})
    return mock


def run(repo: GitRepo, mock: Path) -> tuple[int, str, str]:
    done = evalward("run", ".", "--base", "main", "--mock-script", str(mock), cwd=repo.path)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def test_a_committed_cache_of_forged_passes_is_not_read(repo: GitRepo, tmp_path: Path) -> None:
    mock = regressing(repo, tmp_path)
    code, _, _ = run(repo, mock)
    assert code == 1  # the pull request's own run fails, and fills the cache
    results = repo.path / ".evalward" / "cache" / "results" / "results.sqlite"
    with sqlite3.connect(results) as db:
        for key, text in list(db.execute("select key, result from results")):
            result = json.loads(text)
            if result.get("side") == "head":
                result.update(status="pass", verdict="pass", score=1.0)
                for check in result.get("assertions", []):
                    check.update(status="pass", score=1.0)
                db.execute("update results set result=? where key=?", (json.dumps(result), key))
    db.close()
    repo.git("add", "-f", ".evalward/cache")
    repo.git("commit", "-qm", "the cache, as it passed")

    code, said, err = run(repo, mock)

    assert code == 1, said + err
    assert "Blocked" in said, said
    assert "reused" not in err, err
    assert (
        "evalward: warning: .evalward/ is neither read nor written (no result cache, no "
        "history): 1 file(s) under .evalward are committed in the repository (e.g. "
        ".evalward/cache/results/results.sqlite)"
    ) in err, err


def test_a_committed_link_of_the_folder_out_of_the_repository_is_not_written_through(
    repo: GitRepo, tmp_path: Path
) -> None:
    mock = regressing(repo, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.path / ".gitignore").write_text("")
    (repo.path / ".evalward").symlink_to(outside)
    repo.commit("keep evalward's files elsewhere")

    code, said, err = run(repo, mock)

    assert code == 1, said + err
    assert "Blocked" in said, said
    assert list(outside.iterdir()) == []
    assert ".evalward is a symbolic link in the checkout" in err, err
    assert err.count("neither read nor written") == 1, err


def test_a_committed_response_cache_is_not_used(repo: GitRepo, tmp_path: Path) -> None:
    """evalward.yaml's response cache, turned on by the pull request in a folder it commits
    replies to: the replies would decide the runs, so they are not read (nor written)."""
    mock = regressing(repo, tmp_path)
    repo.commit(
        "replies of our own",
        {
            "evalward.yaml": "cache: { mode: read-write, dir: replies }\n",
            "replies/forged.json": "{}\n",
        },
    )

    code, said, err = run(repo, mock)

    assert code == 1, said + err
    assert (
        "evalward: warning: response cache not used: 1 file(s) under replies are committed in "
        "the repository (e.g. replies/forged.json)"
    ) in err, err
