"""Ctrl-C or SIGTERM on `evalward run`: the runs in flight stop, the runs that finished are
reported and written (results.json marked cancelled), and the exit code is 130 for both."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO
from xml.etree import ElementTree

import pytest

from fakes.model_server import ScriptedModelServer, text
from support import resultdb
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

SUITE = {
    "agent.yaml": """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: helper }
spec:
  models: [openai/gpt-test]
  system: You are a helper.
""",
    "eval.yaml": """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: helper-eval }
spec:
  targetAgent: helper
  fixtureSelector: { matchLabels: { agent: helper } }
""",
    "fixtures.yaml": "---\n".join(
        f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {speed}-{index}, labels: {{ agent: helper }} }}
spec:
  targetAgent: helper
  input: {{ type: prompt, payload: {{ prompt: "{speed} question {index}" }} }}
  assertions:
    - {{ type: contains, value: "answer" }}
"""
        for speed, index in (("fast", 0), ("fast", 1), ("slow", 2), ("slow", 3))
    ),
}


def start_run(
    repo: GitRepo, model: ScriptedModelServer, home: Path, *options: str
) -> subprocess.Popen[str]:
    """`evalward run` on `repo` as a user starts it, its model calls served by `model`."""
    return subprocess.Popen(
        [sys.executable, "-m", "evalward", "run", str(repo.path), *options],
        cwd=repo.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            "PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
            "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test",
        },
    )  # fmt: skip


class Lines:
    """A stream's lines as they arrive, read by a thread."""

    def __init__(self, stream: IO[str] | None) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            self.lines.append(line)

    def text(self) -> str:
        self._thread.join(timeout=30)
        return "".join(self.lines)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_keeps_what_finished_and_exits_130(
    signum: signal.Signals, repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    repo.commit("suite", SUITE)
    model.script("fast question", text("the answer"))
    model.script("slow question", text("the answer, late", delay=60))
    out = tmp_path / "out"
    process = start_run(repo, model, tmp_path, "--no-cache", "--output-dir", str(out))
    stdout, stderr = Lines(process.stdout), Lines(process.stderr)
    deadline = time.monotonic() + 60
    # Both fast runs are done (each result is stored in the result cache as it is recorded,
    # and progress lines are throttled), and both slow ones are waiting on the model.
    cache = repo.path / ".evalward" / "cache"
    while len(resultdb.stored(cache)) < 2 or len(model.requests) < 4:
        assert process.poll() is None and time.monotonic() < deadline, stderr.text()
        time.sleep(0.05)
    process.send_signal(signum)
    process.wait(timeout=60)

    assert process.returncode == 130, stderr.text()
    results = json.loads((out / "results.json").read_text())
    assert results["result"] == "incomplete"
    assert results["reason"] == "cancelled after 2 of 4 runs"
    assert {k: results["run"][k] for k in ("runs_planned", "runs_done", "cancelled")} == {
        "runs_planned": 4,
        "runs_done": 2,
        "cancelled": True,
    }
    assert sorted(f["fixture"] for f in results["fixtures"]) == ["fast-0", "fast-1"]
    assert all(f["trace"]["steps"] for f in results["fixtures"])  # traces kept, too
    for name in ("junit.xml", "report.html", "comment.md"):
        assert (out / name).is_file(), name
    comment = (out / "comment.md").read_text()
    assert "cancelled after 2 of 4 runs" in comment
    # what finished is scored and shown, its Eval incomplete: never passed on half its runs
    assert re.search(r"\| helper-eval \|.*\| ⏹️ Incomplete \|", comment), comment
    junit = ElementTree.parse(out / "junit.xml").getroot()
    assert sorted(case.get("name") for case in junit.iter("testcase")) == ["fast-0", "fast-1"]
    helper_eval = next(e for e in results["evals"] if e["eval"] == "helper-eval")
    assert not helper_eval["passed"]
    assert helper_eval["incomplete_reason"] == (
        "2 of its 4 runs did not finish before the run stopped"
    )
    assert "cancelled after 2 of 4 runs" in stdout.text()  # the printed summary
    assert "Traceback" not in stderr.text()
    assert "attribution" not in stderr.text()  # it was not under way: nothing of it to say
    assert not (repo.path / ".evalward" / "history").exists()  # not a point in the history


def test_a_signal_stops_a_shard_and_writes_no_part(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    repo.commit("suite", SUITE)
    model.script("question", text("the answer, late", delay=60))
    out = tmp_path / "shards"
    process = start_run(repo, model, tmp_path, "--shard", "1/1", "--output-dir", str(out))
    deadline = time.monotonic() + 60
    while not model.requests:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)

    assert process.returncode == 130, stderr
    assert "shard 1/1 cancelled; no results written" in stderr
    assert not out.exists() or not list(out.glob("*.json"))
