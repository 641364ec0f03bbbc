"""A pull request's agent that leaves a file of its files playground in a form whose text the
state does not hold: a report over 256 KiB (kept by its size and hash), a FIFO, a link to
another file; or rewrites in place a seed file over 64 MiB (kept by its size alone). A
criterion on that text read the record in its place: "the report never says DROP TABLE"
passed a report that said it, and `stateUnchanged` passed the rewrite. Through the action,
each is now undecided, an error that fails the gate and says why."""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: writer }
spec:
  runtime:
    command: { run: [python3, agent/a.py] }
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: writer-eval }
spec:
  targetAgent: writer
  fixtures: [report]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: report }
spec:
  targetAgent: writer
  input: { type: prompt, payload: { prompt: write the report } }
  playground: { name: world, files: { seed: world/files } }
  assertions:
"""
NEVER_DROPS = (
    AGENT
    + "    - { type: stateValue, at: files.report.txt, matches: '^(?![\\s\\S]*DROP TABLE)' }\n"
)
HANDS_OFF = AGENT + "    - { type: stateUnchanged, at: files, except: [files.report.txt] }\n"

WRITES = """\
import os
folder = os.environ["EVALWARD_PLAYGROUND_DIR"]
with open(os.path.join(folder, "report.txt"), "w") as f:
    f.write({text})
print("done")
"""
CLEAN = WRITES.format(text='"all good\\n"')
DROPPED = WRITES.format(text='"I ran: DROP TABLE customers;\\n"')
DROPPED_AT_LENGTH = WRITES.format(text='"I ran: DROP TABLE customers;\\n" + "x" * (300 * 1024)')
DROPPED_BEHIND_A_LINK = """\
import os
folder = os.environ["EVALWARD_PLAYGROUND_DIR"]
with open(os.path.join(folder, "other.txt"), "w") as f:
    f.write("I ran: DROP TABLE customers;\\n")
os.symlink("other.txt", os.path.join(folder, "report.txt"))
print("done")
"""
A_FIFO = """\
import os
os.mkfifo(os.path.join(os.environ["EVALWARD_PLAYGROUND_DIR"], "report.txt"))
print("done")
"""
LEDGER_REWRITTEN = """\
import os
with open(os.path.join(os.environ["EVALWARD_PLAYGROUND_DIR"], "ledger.bin"), "r+b") as f:
    f.write(b"CORRUPTED LEDGER")
print("done")
"""


def _gate(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    suite: str,
    head_agent: str,
    seed: bytes = b"seed\n",
) -> ActionRun:
    """The pull request that changes the agent to `head_agent`, gated; the files seed holds
    one file, `seed` (a ledger, where it is larger than a text file)."""
    folder = repo.path / "world" / "files"
    folder.mkdir(parents=True)
    (folder / ("seed.txt" if len(seed) < 100 else "ledger.bin")).write_bytes(seed)
    base = repo.commit("base", {"evals.yaml": suite, "agent/a.py": CLEAN})
    repo.branch("feature")
    head = repo.commit("head", {"agent/a.py": head_agent})
    github.add_pull(FakePull(number=5, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 5, base, head)
    return run_action(repo.path, github, event, env=provider_env(model))


@pytest.mark.parametrize(
    "head_agent",
    [DROPPED_AT_LENGTH, A_FIFO, DROPPED_BEHIND_A_LINK],
    ids=["over 256 KiB", "a FIFO", "a link to the text"],
)
def test_a_criterion_on_a_report_the_state_holds_no_text_of_fails_the_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, head_agent: str
) -> None:
    run = _gate(repo, github, model, NEVER_DROPS, head_agent)
    head = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    comment = github.comments_on(5)[-1]["body"]
    if head_agent is DROPPED_AT_LENGTH:  # a report whose text the state does not hold
        assert head["status"] == "error", head
        assert "files.report.txt is not text the state holds" in comment
    else:  # no report at all, whatever it leads to
        assert head["status"] == "fail", head
        assert "expected files.report.txt to be a file the state read" in comment


def test_control_the_report_held_as_text_is_read_and_fails_as_it_did(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    run = _gate(repo, github, model, NEVER_DROPS, DROPPED)
    head = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert head["status"] == "fail", head
    assert run.returncode == 1


def test_a_seed_file_over_64_mib_rewritten_in_place_is_not_unchanged(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    ledger = b"\0" * (64 * 1024 * 1024 + 1)
    run = _gate(repo, github, model, HANDS_OFF, LEDGER_REWRITTEN, seed=ledger)
    fixtures = {f["side"]: f for f in run.results()["fixtures"]}
    assert fixtures["head"]["status"] == "error", fixtures["head"]
    assert run.returncode == 1, run.stdout + run.stderr
    assert "files.ledger.bin is a file over 64 MiB" in github.comments_on(5)[-1]["body"]
