"""Property: whatever shape a pull request, or the base branch before it, gives the repository,
the gate never crashes (exit 4) and never passes while the agent is broken.

Each example is a real repository: the support bot and its Eval on `main`, with random
entries added there; a branch that breaks the agent (its head greets with a tool call it
must not make) and adds random entries of its own; the action's entry point run on it as the
runner runs it. Entries have names a pull request may choose — newlines, tabs, quotes,
leading dashes, bytes that are not UTF-8, look-alike letters, names of 255 bytes — and are
files (resources, garbage, binary), symbolic links (inside, outside, dangling, looping, to
folders), submodules, FIFOs in the working tree, and files where evalward expects a folder
(`.evalward`, the output directory) or folders where it expects a file (`evalward.yaml`).

An example costs one run of the action (about a second), so the budget is fixed and small;
the explicit examples cover every kind of entry on each side every time.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import (
    BASE_PROMPT,
    GREETING_FIXTURE,
    HEAD_PROMPT,
    ORDER_FIXTURE,
    SUPPORT_BOT,
    SUPPORT_EVAL,
    provider_env,
    script_model,
)

pytestmark = pytest.mark.hostile


@dataclass(frozen=True)
class Entry:
    kind: str
    """file | link | submodule | fifo | file-for-folder | folder-for-file"""
    path: bytes
    payload: bytes = b""


COMPONENTS = [
    b"a\nb",
    b"a\nHEAD:w.yaml",
    b"tab\there",
    b'say "hi"',
    b"it's",
    b"-rf",
    b"--output=x",
    b"caf\xe9",
    b"\xff\xfe",
    "f\u0456xtures".encode(),  # a Cyrillic i
    "evals\u2215x".encode(),  # a division slash, not a `/`
    "\u202egnp".encode(),
    b" lead",
    b"*",
    b"x" * 250,
    b"evals",
    b"fixtures",
    b"agents",
    b"node_modules",
    b".evalward",
]
SUFFIXES = [b"", b".yaml", b".yml", b".md"]
WATCHING_BOT = SUPPORT_BOT + '  watch: ["**"]\n'
"""The support bot, depending on every file: each entry is listed, hashed and followed."""
WEAK_GREETING = GREETING_FIXTURE.replace("    - { type: toolNotCalled, tool: lookup_order }\n", "")
AGENTV = (
    "execution: { target: support-bot }\ntests:\n  - id: greeting\n    input: Hello there!\n"
    "    criteria: greets\n    assertions:\n      - { type: contains, value: Hello }\n"
)
CONTENTS = [
    WEAK_GREETING.encode(),
    WEAK_GREETING.replace("name: greeting", "name: other").encode(),
    SUPPORT_EVAL.replace("0.9", "0.1").encode(),
    AGENTV.encode(),
    b"tests: ./cases.yaml\n",
    b"apiVersion: evalward.dev/v1\nkind: [\n",
    b"\xff\xfe\x00garbage",
    b"",
]
BASE_CONTENTS = [c for c in CONTENTS if b"support-bot" not in c]
"""What the base may hold beside its gate: nothing that adds to or lowers it, or the
agent's failing would no longer be the base's verdict (a base that does not load is fine:
then nothing gates, and the run fails)."""
GATE = [
    b"agents/support-bot.yaml",
    b"evals/support-bot.yaml",
    b"evals/fixtures/order-status.yaml",
    b"evals/fixtures/greeting.yaml",
]
LINK_TARGETS = [
    b"/etc/passwd",
    b"../../../../../../etc/passwd",
    b"evals/fixtures/greeting.yaml",
    b"../evals/fixtures/greeting.yaml",
    b"evals",
    b"..",
    b".",
    b"missing",
    b"loop",
]
DISPLACED = [
    Entry("file-for-folder", b"evals/fixtures"),
    Entry("file-for-folder", b"evals/fixtures/greeting.yaml"),
    Entry("folder-for-file", b"evalward.yaml"),
    Entry("folder-for-file", b"agents/support-bot.yaml"),
    Entry("folder-for-file", b"evals/support-bot.yaml"),
]
"""Where evalward reads a file, a folder; where it reads a folder, a file."""
BLOCKERS = [
    Entry("file-for-folder", b".evalward"),
    Entry("file-for-folder", b".evalward/out"),
    Entry("folder-for-file", b".evalward/out/results.json"),
]
"""Where evalward writes: these end the run at once (exit 2), so they are drawn rarely."""


names = st.builds(
    lambda parts, suffix: b"/".join(parts) + suffix,
    st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=3),
    st.sampled_from(SUFFIXES),
)


def entries(contents: list[bytes]) -> st.SearchStrategy[Entry]:
    kinds: dict[str, st.SearchStrategy[Entry]] = {
        "file": st.builds(Entry, st.just("file"), names, st.sampled_from(contents)),
        "link": st.builds(Entry, st.just("link"), names, st.sampled_from(LINK_TARGETS)),
        "submodule": st.builds(Entry, st.just("submodule"), names),
        "fifo": st.builds(Entry, st.just("fifo"), names),
        "displaced": st.sampled_from(DISPLACED),
        "blocker": st.sampled_from(BLOCKERS),
    }
    weights = ["file"] * 5 + ["link"] * 3 + ["submodule", "fifo", "displaced"] * 2 + ["blocker"]
    return st.sampled_from(weights).flatmap(kinds.__getitem__)


head_shapes = st.lists(entries(CONTENTS), max_size=5)
base_shapes = st.lists(entries(BASE_CONTENTS), max_size=5)

EVERY_KIND_ON_BASE = [
    Entry("file", b"evals/caf\xe9.yaml", b"x: 1\n"),
    Entry("file", b"evals/a\nHEAD:w.yaml/-rf.yaml", b"tests: ./cases.yaml\n"),
    Entry("link", b"evals/linked", b"../evals/fixtures"),
    Entry("link", b"evals/out.md", b"/etc/passwd"),
    Entry("submodule", b"vendor/lib"),
    Entry("file", b"x" * 250 + b".yaml", b"\xff\xfe\x00garbage"),
]
EVERY_KIND_ON_HEAD = [
    Entry("file", b"evals/a\nHEAD:node_modules/w.yaml", b"x: 1\n"),
    Entry("file", b"node_modules/w.yaml", WEAK_GREETING.encode()),
    Entry("file", b"evals/fixtures/greeting.yaml", WEAK_GREETING.encode()),
    Entry("file", "evals/f\u0456xtures/greeting.yaml".encode(), WEAK_GREETING.encode()),
    Entry("file", b"evals/\xff\xfe.yaml", AGENTV.encode()),
    Entry("link", b"evals/loop.yaml", b"loop"),
    Entry("link", b"agents/lib", b"../evals"),
    Entry("submodule", b"vendor/lib"),
    Entry("fifo", b"evals/pipe.yaml"),
    Entry("folder-for-file", b"evalward.yaml"),
]
UNLOADABLE_HEAD = [
    Entry(
        "file",
        b"evals/caf\xe9\n" + "\u202e.yaml".encode(),
        b"apiVersion: evalward.dev/v1\nkind: [\n",
    ),
    Entry("file-for-folder", b".evalward"),
]


def apply(repo: GitRepo, shape: list[Entry], *, checkout: bool, keep: list[bytes]) -> None:
    """Write the entries that fit (one whose folder is already a file is left out, and so is
    one that would replace a path of `keep` or a folder above one), stage them and the
    submodules, commit; FIFOs stay in the working tree (git cannot hold one)."""
    root = os.fsencode(repo.path)
    submodules: list[bytes] = []
    fifos: list[bytes] = []
    for entry in shape:
        if any(kept == entry.path or kept.startswith(entry.path + b"/") for kept in keep):
            continue
        path = root + b"/" + entry.path
        try:
            if entry.kind in ("file", "folder-for-file"):
                if entry.kind == "folder-for-file":
                    _remove(path)
                    path += b"/inside.yaml"
                os.makedirs(os.path.dirname(path), exist_ok=True)
                _remove(path)
                with open(path, "wb") as stream:
                    stream.write(entry.payload or b"x: 1\n")
            elif entry.kind == "link":
                os.makedirs(os.path.dirname(path), exist_ok=True)
                _remove(path)
                target = entry.path.rsplit(b"/", 1)[-1] if entry.payload == b"loop" else None
                os.symlink(target or entry.payload, path)
            elif entry.kind == "file-for-folder":
                os.makedirs(os.path.dirname(path) or root, exist_ok=True)
                _remove(path)
                with open(path, "wb") as stream:
                    stream.write(b"not a folder\n")
            elif entry.kind == "submodule":
                submodules.append(entry.path)
            elif entry.kind == "fifo":
                fifos.append(path)
        except OSError:
            continue  # a parent is a file, a name too long for its folder: not this entry
    repo.git("add", "-A")
    sha = repo.git("rev-parse", "HEAD")
    for path in submodules:
        if not os.path.lexists(root + b"/" + path):
            gitlink = ["update-index", "--add", "--cacheinfo", "160000", sha, os.fsdecode(path)]
            subprocess.run(["git", "-C", repo.path, *gitlink], check=False, capture_output=True)
            with contextlib.suppress(OSError):  # the folder of an uninitialised submodule
                os.makedirs(root + b"/" + path, exist_ok=True)
    repo.git("commit", "-q", "--allow-empty", "-m", "shapes")
    for path in fifos if checkout else []:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if not os.path.lexists(path):
                os.mkfifo(path)
        except OSError:
            continue


def _remove(path: bytes) -> None:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        subprocess.run(["rm", "-rf", "--", path], check=True)


FEW = settings(
    max_examples=8,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FEW
@example(base_shape=EVERY_KIND_ON_BASE, head_shape=[])
@example(base_shape=[], head_shape=EVERY_KIND_ON_HEAD)
@example(base_shape=[], head_shape=UNLOADABLE_HEAD[:1])
@example(base_shape=[], head_shape=UNLOADABLE_HEAD[1:])
@example(  # git warns of the loop that replaced a folder, naming the folder's Latin-1 bytes
    base_shape=[Entry("file", b'caf\xe9/say "hi"', b"x: 1\n")],
    head_shape=[Entry("link", b"caf\xe9", b"loop")],
)
@given(base_shape=base_shapes, head_shape=head_shapes)
def test_no_repository_shape_crashes_the_gate_or_passes_a_broken_agent(
    base_shape: list[Entry],
    head_shape: list[Entry],
) -> None:
    workspace = Path(os.fsdecode(subprocess.check_output(["mktemp", "-d"]).strip()))
    github, model = FakeGitHub(), ScriptedModelServer()
    try:
        repo = GitRepo(workspace / "repo")
        repo.commit(
            "agents and evals",
            {
                "agents/support-bot.yaml": WATCHING_BOT.format(prompt=BASE_PROMPT),
                "evals/support-bot.yaml": SUPPORT_EVAL,
                "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
                "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
            },
        )
        apply(repo, base_shape, checkout=False, keep=GATE)
        base = repo.head()
        repo.branch("feature")
        _remove(os.fsencode(repo.path / "agents" / "support-bot.yaml"))
        repo.write({"agents/support-bot.yaml": WATCHING_BOT.format(prompt=HEAD_PROMPT)})
        apply(repo, head_shape, checkout=True, keep=[])
        head = repo.head()
        github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
        script_model(model, head_greets_well=False)
        env = provider_env(model)

        run = run_action(
            repo.path,
            github,
            pull_request_event(github.repository, 7, base, head),
            env=env,
            inputs={"output-dir": ".evalward/out"},
            run_dir=workspace / "runner",
        )

        said = run.stdout + run.stderr
        assert run.returncode != 4 and "internal error" not in said, said
        assert run.returncode != 0 and run.outputs.get("result") != "pass", said
    finally:
        github.close()
        model.close()
        subprocess.run(["rm", "-rf", "--", workspace], check=False)
