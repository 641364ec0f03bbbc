"""Run the `evalward` command line as a user does: a subprocess, with no provider key or
other secret inherited from the environment the tests run in; or one command in this process
(`in_process`, `refused`), where a test reads what its module did."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import pytest

import evalward as _imported
from evalward.__main__ import main as entry
from evalward.cli import build_parser
from evalward.errors import EXIT_CONFIG
from evalward.host import Host
from support import forkserver, head_strays
from support.gitrepo import GitRepo
from support.limits import subprocess_limit

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE = str(Path(_imported.__file__).resolve().parents[1])
"""Where the evalward these tests import lives: the subprocess runs the same code."""
DEMO_PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
"""`make demo`'s PATH, for a run of the repository's own examples: the virtualenv's `bin`
first, where the MCP example's server (`python3`) finds the MCP SDK."""


Command = Callable[[argparse.Namespace, TextIO, Host], int]
"""A command module's `main`."""


def evalward(*args: str, cwd: Path = REPO_ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    with head_strays.reading():  # no head user of another test's outside a turn meanwhile
        return forkserver.run(
            [sys.executable, "-m", "evalward", *args],
            flags=[],
            path=[SOURCE],
            args=args,
            cli=True,
            cwd=cwd,
            timeout=subprocess_limit(),
            env={
                "PATH": os.environ["PATH"],
                "HOME": str(cwd),
                "GIT_CONFIG_NOSYSTEM": "1",
                "PYTHONPATH": SOURCE,
                **env,
            },
        )


def evalward_setting(
    setting: str, value: float, *args: str, cwd: Path, limit: float
) -> subprocess.CompletedProcess[str]:
    """`evalward ARGS` in an interpreter of its own, with one module's setting (`setting`,
    `module.NAME`) at `value`: a bound a test proves holds, made short enough that proving
    it costs little. Past `limit` seconds it raises subprocess.TimeoutExpired (the bound did
    not hold)."""
    module, _, name = setting.rpartition(".")
    start = (
        f"import runpy, sys; import {module} as bounded; bounded.{name} = {value!r}; "
        "sys.argv[0] = 'evalward'; "
        "runpy.run_module('evalward', run_name='__main__', alter_sys=True)"
    )
    return subprocess.run(
        [sys.executable, "-c", start, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=subprocess_limit(limit),
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(cwd),
            "GIT_CONFIG_NOSYSTEM": "1",
            "PYTHONPATH": SOURCE,
        },
    )


def run_for_results(
    cwd: Path, *args: str, cache: bool = False, **env: str
) -> tuple[int, dict[str, Any], str]:
    """`evalward run . --no-history --no-cache --output-dir out ARGS` in `cwd` (`cache`: the
    result cache on, as by default): its exit code, its results.json and all it said, which
    never holds a traceback."""
    out = cwd / "out"
    no_cache = () if cache else ("--no-cache",)
    done = evalward(
        "run", ".", "--no-history", *no_cache, "--output-dir", str(out), *args, cwd=cwd, **env
    )
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said
    return done.returncode, json.loads((out / "results.json").read_text()), said


def quiet_host(home: Path) -> Host:
    """The host of a command run in this process: PATH and HOME only, no key or other secret."""
    return Host({"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"})


def in_process(main: Command, *argv: str, host: Host) -> tuple[int, str]:
    """`evalward ARGV` through one command's `main`, in this process, with its arguments parsed
    as the command line parses them: its exit code and what it printed."""
    out = io.StringIO()
    code = main(build_parser().parse_args(list(argv)), out, host)
    return code, out.getvalue()


def refused(capsys: pytest.CaptureFixture[str], *argv: str, host: Host) -> str:
    """`evalward ARGV` through the entry point, in this process, refused as a user's mistake:
    exit 2 and one line on stderr that is no traceback. That line, without its prefix."""
    code = entry(list(argv), host)
    captured = capsys.readouterr()
    assert code == EXIT_CONFIG, captured
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("evalward: "), line
    return line.removeprefix("evalward: ")


def initialised(repo: GitRepo) -> GitRepo:
    """`repo` with what `evalward init` writes, committed on main: an agent, its fixtures, an
    Eval with a pairwise judge and its calibration, and the mock script that passes them
    (evals/mock-replies.yaml)."""
    from evalward.cli import init

    code, _ = in_process(init.main, "init", str(repo.path), host=quiet_host(repo.path))
    assert code == 0
    repo.commit("evalward init")
    return repo
