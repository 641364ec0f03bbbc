"""The commands that write a user's files (`evalward init`, `evalward import promptfoo`) write
them whole or not at all when the disk refuses a write, and `evalward calibrate` says what its
response cache could not keep, as `evalward run` does. Each runs under `prlimit --fsize`: past
it a write fails with EFBIG, as one on a full disk fails with ENOSPC."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.model_server import ScriptedModelServer, text
from support.clirun import SOURCE
from support.gitrepo import GitRepo
from support.limits import subprocess_limit
from support.suite import provider_env

pytestmark = pytest.mark.e2e

PRLIMIT = "/usr/bin/prlimit"
LIMIT = 2_000_000
"""A file size limit every file a command writes stays well under."""


def _evalward(
    cwd: Path, *args: str, limit: int, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`evalward ARGS` in `cwd` under `prlimit --fsize=LIMIT`, with PATH and HOME only (and
    `env`)."""
    # -B: Python would write its bytecode caches under the limit too, and keep them cut short
    return subprocess.run(
        [PRLIMIT, f"--fsize={limit}", "--", sys.executable, "-B", "-m", "evalward", *args],
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd), "PYTHONPATH": SOURCE, **(env or {})},
        capture_output=True,
        text=True,
        timeout=subprocess_limit(),
        check=False,
    )


def _files(root: Path) -> list[str]:
    """The files under `root` outside .git, sorted."""
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
    )


def test_init_whose_gitignore_the_disk_refuses_leaves_it_whole_and_writes_nothing(
    repo: GitRepo,
) -> None:
    """The last of init's writes, `.evalward/` added to the user's .gitignore, was appended in
    place: a full disk cut the file short and the command called it a mistake (exit 2), the
    files before it left, so the next init refused. It is now written whole or not at all."""
    limit = 20_000  # every file init writes fits; the .gitignore, one line longer, does not
    ignore = repo.path / ".gitignore"
    before = b"node_modules/\n" + b"#" * (limit - 18) + b"\n"  # 3 bytes short of the limit
    ignore.write_bytes(before)
    ignore.chmod(0o640)
    done = _evalward(repo.path, "init", ".", limit=limit)
    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    (line,) = done.stderr.splitlines()
    assert ".gitignore" in line and "EFBIG" in line and "init` again" in line, line
    assert ignore.read_bytes() == before, "the .gitignore is as it was"
    assert _files(repo.path) == [".gitignore"], "the files written before it are taken back"
    again = _evalward(repo.path, "init", ".", limit=LIMIT)
    assert again.returncode == 0, again.stderr
    assert ignore.read_bytes() == before + b".evalward/\n"
    assert ignore.stat().st_mode & 0o777 == 0o640, "its mode is kept"


FAR_SERVER = """\
description: far
prompts:
  - 'Say hi to {{name}}'
providers:
  - id: openai:chat:gpt-4.1-mini
    config:
      apiBaseUrl: http://models.invalid/%s/v1
tests:
  - vars: { name: Ann }
    assert:
      - type: icontains
        value: hi
"""


def test_import_whose_settings_the_disk_refuses_takes_back_its_three_files(
    repo: GitRepo,
) -> None:
    """evalward.yaml, the provider settings an import writes after its three files, was
    written outside their all-or-none: a refused write left it cut short beside the three,
    and the next import refused because they were there."""
    (repo.path / "promptfooconfig.yaml").write_text(FAR_SERVER % ("v" * 3_000))
    command = ["import", "promptfoo", "promptfooconfig.yaml"]
    done = _evalward(repo.path, *command, limit=2_000)  # the three fit, the settings do not
    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    (line,) = done.stderr.splitlines()
    assert "evalward.yaml" in line and "EFBIG" in line and "import` again" in line, line
    assert _files(repo.path) == ["promptfooconfig.yaml"], "no file, nor half a file, is left"
    again = _evalward(repo.path, *command, limit=LIMIT)
    assert again.returncode == 0, again.stderr
    assert (repo.path / "evalward.yaml").read_text().endswith("/v1\n")


CALIBRATION = """\
apiVersion: evalward.dev/v1
kind: JudgeCalibration
metadata: { name: capitals }
spec:
  rubric: Does the answer name the capital of France?
  judgeModels: [openai/gpt-4.1-mini]
  examples:
    - { input: "France?", candidateOutput: "Paris", humanScore: 1.0 }
    - { input: "France?", candidateOutput: "Lyon", humanScore: 0.0 }
    - { input: "France's capital?", candidateOutput: "Paris", humanScore: 1.0 }
    - { input: "France's capital?", candidateOutput: "Lyon", humanScore: 0.0 }
"""


def _verdict(score: float) -> str:
    return json.dumps({"score": score, "confidence": 0.9, "summary": "s", "violations": []})


def test_calibrate_says_what_the_response_cache_could_not_keep(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """The judge's replies, paid for, are used though the disk refuses to keep them; the
    loss is said once, as `evalward run` says it, where calibrate said nothing and a rerun
    asked the model again with no word why."""
    model.script("Paris", text(_verdict(1.0)))
    model.script("Lyon", text(_verdict(0.0)))
    repo.write(
        {
            "evalward.yaml": "cache: { mode: read-write, dir: .evalward/responses }\n",
            "calibrations.yaml": CALIBRATION,
        }
    )
    done = _evalward(repo.path, "calibrate", "capitals", limit=200, env=provider_env(model))
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "Traceback" not in said and "bug" not in said, said
    (line,) = [line for line in done.stderr.splitlines() if "response cache" in line]
    assert ".evalward/responses" in line and "did not keep" in line and "EFBIG" in line, line
    assert _files(repo.path / ".evalward") == [], "no half entry is left"
