"""Run evalward as GitHub runs a Docker action: the image's ENTRYPOINT as a subprocess, with the
GITHUB_* environment and the workspace as the working directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from typing_extensions import Unpack

from fakes.github_api import TIMESTAMP, FakeGitHub, FakePull
from support import forkserver, head_strays
from support.agentuser import AGENT_USER_INPUT
from support.clirun import SOURCE
from support.gitrepo import GitRepo
from support.limits import subprocess_limit

DOCKERFILE = Path(__file__).resolve().parents[2] / "Dockerfile"


def image_entrypoint() -> list[str]:
    """The Dockerfile's ENTRYPOINT, with this interpreter for its `python`."""
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("ENTRYPOINT "):
            argv: list[str] = json.loads(line.removeprefix("ENTRYPOINT "))
            assert argv[0] == "python", argv
            return [sys.executable, *argv[1:]]
    raise AssertionError("the Dockerfile has no ENTRYPOINT")


def of_this_tree(argv: list[str]) -> list[str]:
    """The entry point running the evalward these tests import: `-I` ignores PYTHONPATH,
    so that one is put first on the path before the module runs as `-m` would run it."""
    assert argv[-2:] == ["-m", "evalward"], argv
    start = f"import runpy, sys; sys.path.insert(0, {SOURCE!r}); "
    start += "runpy.run_module('evalward', run_name='__main__', alter_sys=True)"
    return [*argv[:-2], "-c", start]


ENTRYPOINT = of_this_tree(image_entrypoint())


@dataclass
class ActionRun:
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    output_dir: Path

    def results(self) -> dict[str, Any]:
        return json.loads((self.output_dir / "results.json").read_text())

    def json_lines(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.stdout.splitlines():
            if line.startswith("{"):
                lines.append(json.loads(line))
        return lines


def pull_request_event(
    repository: str,
    number: int,
    base_sha: str,
    head_sha: str,
    labels: list[str] | None = None,
    *,
    action: str = "synchronize",
    label: str | None = None,
    sender: str = "octocat",
    updated_at: str = TIMESTAMP,
) -> dict[str, Any]:
    """A minimal pull_request payload; tests of the payload shape use tests/data/webhooks/.
    `sender` caused the event and `updated_at` is the pull request's last change: on
    `labeled`, who applied the label and when, as GitHub sends them (the fake's `add_label`
    applies it at TIMESTAMP too, unless told another time)."""
    event: dict[str, Any] = {
        "action": action,
        "number": number,
        "pull_request": {
            "number": number,
            "base": {"sha": base_sha, "ref": "main"},
            "head": {"sha": head_sha, "ref": "feature"},
            "labels": [{"name": name} for name in labels or []],
            "updated_at": updated_at,
        },
        "repository": {"full_name": repository, "default_branch": "main"},
        "sender": {"login": sender},
    }
    if label is not None:
        event["label"] = {"name": label}
    return event


GROUP_PAYLOAD = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "github"
    / "webhooks"
    / "merge_group.checks_requested.json"
)


def merge_group_event(
    repository: str,
    number: int,
    base_sha: str,
    head_sha: str,
    *,
    action: str = "checks_requested",
    head_ref: str | None = None,
) -> dict[str, Any]:
    """GitHub's merge_group payload (the vendored example, data/github/webhooks/) for the
    group of the main branch's queue that ends with pull request `number`: its commit
    `head_sha` and its parent `base_sha`, on the queue's branch `head_ref` (by default as
    GitHub names it). `destroyed` carries the same group and a `reason`, as GitHub documents."""
    payload: dict[str, Any] = json.loads(GROUP_PAYLOAD.read_text())
    payload["action"] = action
    if action == "destroyed":
        payload["reason"] = "merged"
    payload["repository"]["full_name"] = repository
    group = payload["merge_group"]
    group.update(
        head_sha=head_sha,
        base_sha=base_sha,
        base_ref="refs/heads/main",
        head_ref=head_ref or f"refs/heads/gh-readonly-queue/main/pr-{number}-{base_sha}",
    )
    group["head_commit"]["id"] = head_sha
    return payload


def queue_group(
    repo: GitRepo, base: str, head: str, number: int = 7, *, squash: bool = False
) -> str:
    """The commit a merge queue makes of pull request `number` on `base`: `head` merged into
    it (`squash`: as one commit whose only parent is `base`), checked out (detached) as
    actions/checkout checks out a merge_group's GITHUB_SHA."""
    tree = repo.git("merge-tree", "--write-tree", base, head)
    parents = ["-p", base] if squash else ["-p", base, "-p", head]
    group = repo.git("commit-tree", tree, *parents, "-m", f"Merge pull request #{number}")
    repo.git("checkout", "-q", "--detach", group)
    return group


def run_group(
    repo: GitRepo,
    github: FakeGitHub,
    event: dict[str, Any],
    env: dict[str, str],
    inputs: dict[str, str] | None = None,
) -> ActionRun:
    """The action on a merge_group `event`, with the variables GitHub sets for it: GITHUB_SHA
    the group's commit, GITHUB_REF its queue branch. GitHub's API has the base branch at the
    group's parent, as for the first group of a queue, unless the test put it elsewhere
    (`github.branches`: a group queued behind others)."""
    group = event["merge_group"]
    if isinstance(group, dict) and isinstance(group.get("base_ref"), str):
        branch = group["base_ref"].removeprefix("refs/heads/")
        github.branches.setdefault(branch, str(group.get("base_sha")))
    variables = {"GITHUB_SHA": group["head_sha"], "GITHUB_REF": group["head_ref"], **env}
    return run_action(
        repo.path, github, event, env=variables, inputs=inputs, event_name="merge_group"
    )


@dataclass
class Launch:
    """The runner's side of one action run: its environment and the files it reads back."""

    env: dict[str, str]
    output_file: Path
    summary_file: Path
    output_dir: Path

    def finish(self, returncode: int, stdout: str, stderr: str) -> ActionRun:
        return ActionRun(
            returncode,
            stdout,
            stderr,
            parse_github_output(self.output_file.read_text()),
            self.summary_file.read_text(),
            self.output_dir,
        )


class LaunchOptions(TypedDict, total=False):
    """How a run is launched: the step's `with:` inputs, more environment (over the
    runner's), the event's name (`pull_request`) and the runner's own folder."""

    inputs: dict[str, str] | None
    env: dict[str, str] | None
    event_name: str
    run_dir: Path | None


def prepare(
    workspace: Path, github: FakeGitHub, event: dict[str, Any], **options: Unpack[LaunchOptions]
) -> Launch:
    run_dir = options.get("run_dir") or workspace.parent / "runner"
    run_dir.mkdir(parents=True, exist_ok=True)
    event_path = run_dir / "event.json"
    event_path.write_text(json.dumps(event))
    output_file = run_dir / "github_output"
    summary_file = run_dir / "step_summary"
    output_file.write_text("")
    summary_file.write_text("")
    output_dir = run_dir / "out"
    base_env = {
        "PATH": os.environ["PATH"],
        "HOME": str(run_dir),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": options.get("event_name", "pull_request"),
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": github.repository,
        "GITHUB_API_URL": github.url,
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_STEP_SUMMARY": str(summary_file),
        "GITHUB_OUTPUT": str(output_file),
        "GITHUB_RUN_ID": "4242",
        "GITHUB_WORKFLOW": "evals",
        "GITHUB_JOB": "gate",
        "INPUT_GITHUB_TOKEN": github.token,
        "INPUT_OUTPUT_DIR": str(output_dir),
        # this test process's own agent users: tests run at once in pytest-xdist's workers
        "INPUT_AGENT_USER": AGENT_USER_INPUT,
    }
    for name, value in (options.get("inputs") or {}).items():
        base_env[f"INPUT_{name.upper().replace('-', '_')}"] = value
    base_env.update(options.get("env") or {})
    return Launch(base_env, output_file, summary_file, output_dir)


def run_action(
    workspace: Path, github: FakeGitHub, event: dict[str, Any], **options: Unpack[LaunchOptions]
) -> ActionRun:
    return execute(workspace, prepare(workspace, github, event, **options))


def gate_pull_request(
    repo: GitRepo,
    github: FakeGitHub,
    base: str,
    head: str,
    env: dict[str, str],
    inputs: dict[str, str] | None = None,
) -> ActionRun:
    """Pull request 7 from `base` to `head`, GitHub's diff of it taken from git's, gated by
    the action with `inputs` (results under .evalward/out)."""
    github.add_pull(
        FakePull(number=7, head_sha=head, base_sha=base, files=repo.pull_files(base, head))
    )
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        inputs={"output-dir": ".evalward/out", **(inputs or {})},
        env=env,
    )


SHARD_KEY = "k" * 16 + "0123456789abcdef"
"""The secret every shard step and the merge step are given (`shard-key`)."""


def run_shards(
    workspace: Path,
    github: FakeGitHub,
    event: dict[str, Any],
    folder: Path,
    *,
    env: dict[str, str],
    inputs: dict[str, str] | None = None,
    count: int = 2,
) -> None:
    """Run each part of a `count`-way matrix, as its own runner, into `folder`; each must pass."""
    for index in range(1, count + 1):
        part = run_action(
            workspace,
            github,
            event,
            inputs={
                "shard-key": SHARD_KEY,
                **(inputs or {}),
                "shard": f"{index}/{count}",
                "output-dir": str(folder),
            },
            env=env,
            run_dir=folder.parent / f"runner-{folder.name}-{index}",
        )
        assert part.returncode == 0, part.stdout + part.stderr
        assert (folder / f"shard-{index}-of-{count}.json").is_file()


def under_test() -> list[str]:
    """The ENTRYPOINT, running the evalward these tests import: with PYTHONPATH set (tests of
    a checkout's `src` beside an installed evalward), `-I` would make it the installed one."""
    path = os.environ.get("PYTHONPATH")
    if not path:
        return ENTRYPOINT
    prefix = f"import sys; sys.path[:0] = {path.split(os.pathsep)!r}; import runpy; "
    return [*ENTRYPOINT[:-2], "-c", prefix + "runpy.run_module('evalward', run_name='__main__')"]


def execute(workspace: Path, launch: Launch) -> ActionRun:
    """Run a prepared launch (its environment changed by the test, if need be) to the end."""
    with head_strays.reading():
        done = forked(workspace, launch.env, subprocess_limit())
    return launch.finish(done.returncode, done.stdout, done.stderr)


def forked(
    workspace: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """The action's entry point run in `workspace` with `env`, as `subprocess.run(under_test(),
    ...)` would run it, from the tests' fork server (`support/forkserver.py`)."""
    path = os.environ.get("PYTHONPATH")
    return forkserver.run(
        under_test(),
        flags=image_entrypoint()[1:-2],
        path=path.split(os.pathsep) if path else [SOURCE],
        args=[],
        cli=False,
        cwd=workspace,
        env=env,
        timeout=timeout,
    )


def start_action(
    workspace: Path, launch: Launch, wrapper: tuple[str, ...] = ()
) -> subprocess.Popen[str]:
    """Start the action without waiting, e.g. to signal it mid-run, or under `wrapper` (a
    command that runs the rest, `prlimit --fsize=N --`). It holds the tests' shared lock on
    head strays for as long as it runs (`head_strays.shared_for_a_child`): a test that makes
    them cannot start meanwhile, nor hold the lock while this gate waits on a turn another of
    the test's gates holds."""
    lock = head_strays.shared_for_a_child()
    try:
        return subprocess.Popen(
            [*wrapper, *under_test()],
            cwd=workspace,
            env=launch.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=() if lock is None else (lock,),
        )
    finally:
        if lock is not None:
            os.close(lock)


def parse_github_output(text: str) -> dict[str, str]:
    """Parse the `name<<DELIM` heredoc form GitHub reads from GITHUB_OUTPUT."""
    outputs: dict[str, str] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        name, _, delimiter = lines[index].partition("<<")
        index += 1
        value: list[str] = []
        while lines[index] != delimiter:
            value.append(lines[index])
            index += 1
        index += 1
        outputs[name] = "\n".join(value)
    return outputs
