#!/usr/bin/env python3
"""Run a hostile pull request through the action's built image, as GitHub runs a Docker action.

    python scripts/image_check.py evalward:dev            # podman (or --engine docker)

A real git repository whose PR head's `runtime.command` agent is tests/agents/hostile_agent.py;
the workspace, the event and the runner's file-command files owned by uid 1001 (the hosted
runner's user) and mounted where GitHub mounts them; GitHub's environment with secrets in it;
the fake GitHub API and a loopback "attacker" server on the host's network. Prints the image's
size, who the agent ran as, what it managed to do, and exits 1 if anything got through or the
gate's result is not the honest one (fail).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakes.github_api import FakeGitHub, FakePull  # noqa: E402
from runtime.isolation.test_agent_sandbox import BENIGN, SUITE, Attacker, agent_yaml  # noqa: E402
from support.actionrun import parse_github_output, pull_request_event  # noqa: E402
from support.gitrepo import GitRepo  # noqa: E402

RUNNER_UID = 1001
SECRETS = {
    "OPENAI_API_KEY": "sk-image-check-0123456789",
    "DEPLOY_TOKEN": "dpl-image-check-abcdef",
    "ACTIONS_RUNTIME_TOKEN": "actions-runtime-image-check",
}
FILES = {
    "GITHUB_OUTPUT": "set_output_1",
    "GITHUB_STEP_SUMMARY": "step_summary_1",
    "GITHUB_ENV": "set_env_1",
    "GITHUB_PATH": "add_path_1",
    "GITHUB_STATE": "save_state_1",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("image")
    parser.add_argument("--engine", default="podman")
    args = parser.parse_args()
    engine = [args.engine]
    size = subprocess.run(
        [*engine, "image", "inspect", args.image, "--format", "{{.Size}}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    print(f"image {args.image}: {int(size) / 1e6:.1f} MB")
    package = subprocess.run(
        [*engine, "run", "--rm", "--entrypoint", "python", args.image, "-c",
         "import evalward, pathlib; print(pathlib.Path(evalward.__file__).parent)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip

    world = Path(tempfile.mkdtemp(prefix="evalward-image-check-"))
    world.chmod(0o755)
    github = FakeGitHub()
    attacker = Attacker()
    try:
        workspace, runner = world / "workspace", world / "runner"
        repo = GitRepo(workspace)
        base = repo.commit(
            "an agent and its eval",
            {
                "agents/pr-agent.yaml": agent_yaml("command", "agent/benign.py", ""),
                "agent/benign.py": BENIGN,
                "evals/pr-agent.yaml": SUITE,
                ".gitignore": ".evalward/\n",
            },
        )
        repo.branch("feature")
        files = {name: f"/github/file_commands/{file}" for name, file in FILES.items()}
        target = {
            "attacker": attacker.server.url + "/loot",
            "read": {
                f"read {name}": path
                for name, path in {"event": "/github/workflow/event.json", **files}.items()
            },
            "append": {**files, "event": "/github/workflow/event.json"},
            "open": {
                "evalward module": f"{package}/report/files.py",
                "evalward entry": f"{package}/__main__.py",
            },
            "create": {
                "output dir": "/github/workspace/.evalward/out/pwned.txt",
                "cache dir": "/github/workspace/.evalward/cache/pwned.json",
                "workspace": "/github/workspace/pwned.txt",
                "evalward package": f"{package}/pwned.py",
                "site-packages": f"{Path(package).parent}/zz-pwned.pth",
            },
        }
        (world / "hostile.py").write_text((ROOT / "tests/agents/hostile_agent.py").read_text())
        head = repo.commit(
            "a better agent",
            {
                "agents/pr-agent.yaml": agent_yaml("command", "agent/hostile.py", "").replace(
                    "/usr/bin/python3", "python3"
                ),
                "agent/hostile.py": (world / "hostile.py").read_text(),
                "agent/target.json": json.dumps(target),
            },
        )
        github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
        (runner / "workflow").mkdir(parents=True)
        (runner / "file_commands").mkdir()
        (runner / "home").mkdir()
        event = pull_request_event(github.repository, 7, base, head)
        (runner / "workflow" / "event.json").write_text(json.dumps(event))
        for file in FILES.values():
            (runner / "file_commands" / file).write_text("")
        for path in [workspace, *workspace.rglob("*"), runner, *runner.rglob("*")]:
            os.lchown(path, RUNNER_UID, RUNNER_UID)
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() else 0o644)

        env = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": "/github/workflow/event.json",
            "GITHUB_REPOSITORY": github.repository,
            "GITHUB_API_URL": github.url,
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_WORKSPACE": "/github/workspace",
            "GITHUB_RUN_ID": "4242",
            "GITHUB_WORKFLOW": "evals",
            "GITHUB_JOB": "gate",
            "HOME": "/github/home",
            "INPUT_GITHUB_TOKEN": github.token,
            "GITHUB_TOKEN": github.token,
            **files,
            **SECRETS,
        }
        command = [
            *engine, "run", "--rm", "--network=host", "--workdir", "/github/workspace",
            "-v", f"{workspace}:/github/workspace",
            "-v", f"{runner / 'workflow'}:/github/workflow",
            "-v", f"{runner / 'file_commands'}:/github/file_commands",
            "-v", f"{runner / 'home'}:/github/home",
            *(item for name in env for item in ("-e", name)),
            args.image,
        ]  # fmt: skip
        done = subprocess.run(
            command, env={**os.environ, **env}, capture_output=True, text=True, timeout=600
        )
        print(f"exit code {done.returncode}")
        return verdict(done, attacker, runner, workspace, github)
    finally:
        attacker.server.close()
        github.close()
        shutil.rmtree(world, ignore_errors=True)


def verdict(
    done: subprocess.CompletedProcess[str],
    attacker: Attacker,
    runner: Path,
    workspace: Path,
    github: FakeGitHub,
) -> int:
    problems: list[str] = []
    if not attacker.received:
        print(done.stdout[-3000:], done.stderr[-3000:])
        print("the hostile agent never reported")
        return 1
    report = json.loads(attacker.received[0].body)
    print(f"the agent ran as uid {report['uid']}, gid {report['gid']}, groups {report['groups']}")
    print(f"its environment: {sorted(report['own_env'])}")
    print(f"its parent's environment: {report['parent_env']}")
    for name, found in {**report["read"], **report["write"]}.items():
        print(f"  {name}: {'DONE' if found['ok'] else found['error']}")
        if found["ok"] and name in report["write"]:
            problems.append(f"it could write {name}")
    readable = [pid for pid, found in report["all_env"].items() if found["ok"]]
    print(f"environments it could read: pids {readable} (its own group's)")
    loot = attacker.everything()
    for secret in [*SECRETS.values(), github.token]:
        if secret in loot:
            problems.append(f"{secret!r} reached the attacker")
    if report["uid"] in (0, RUNNER_UID) or report["parent_env"]["ok"]:
        problems.append("the agent ran with evalward's or the runner's rights")
    output = (runner / "file_commands" / FILES["GITHUB_OUTPUT"]).read_text()
    outputs = parse_github_output(output) if "PWNED" not in output else {}
    print(f"outputs: {outputs}")
    if done.returncode != 1 or outputs.get("result") != "fail":
        problems.append(f"the gate's result is not the honest fail: {done.returncode} {outputs}")
    if not github.comments_on(7):
        problems.append("no comment")
    for path in (workspace / "pwned.txt", workspace / ".evalward" / "out" / "pwned.txt"):
        if path.exists():
            problems.append(f"{path} was written")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    print("nothing got through" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
