"""The tests' fork server (`support/forkserver.py`) starts evalward as a fresh interpreter
does: the same exit code, output and error output, for the command line and the action's
entry point, in the run's own directory and environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import forkserver
from support.actionrun import image_entrypoint, under_test
from support.clirun import SOURCE

pytestmark = pytest.mark.integration


def _both(
    argv: list[str], cli: bool, args: list[str], cwd: Path, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    flags = [] if cli else image_entrypoint()[1:-2]
    forked = forkserver.run(
        argv, flags=flags, path=[SOURCE], args=args, cli=cli, cwd=cwd, env=env, timeout=120
    )
    fresh = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return forked, fresh


def test_the_command_line_forked_says_and_exits_as_a_fresh_start(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "broken.yaml").write_text("kind: Agent\nspec: [\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": SOURCE}
    for args in (["--version"], ["validate", "."], ["plan", "--base", "nowhere"]):
        argv = [sys.executable, "-m", "evalward", *args]
        forked, fresh = _both(argv, True, args, tmp_path, env)
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            fresh.returncode,
            fresh.stdout,
            fresh.stderr,
        ), args
    assert fresh.returncode == 2 and "evalward:" in fresh.stderr


def test_the_action_forked_reads_its_own_environment_as_a_fresh_start(tmp_path: Path) -> None:
    """Its environment names an event file that is not there: both say so the same way."""
    env = {
        "PATH": os.environ["PATH"],
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(tmp_path / "no-event.json"),
        "GITHUB_WORKSPACE": str(tmp_path),
    }
    forked, fresh = _both(under_test(), False, [], tmp_path, env)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )
    assert fresh.returncode != 0 and "no-event.json" in fresh.stdout + fresh.stderr
