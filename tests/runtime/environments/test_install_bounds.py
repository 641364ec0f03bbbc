"""A pull request cannot set its own install bounds: how long its environment's install may
take, and how large and how many files what it leaves may be, come from the base branch's
definition of the agent or from the action's inputs. Each head below raises its own bound and
goes over the base's; its install fails naming the bound and the figure, and nothing of it is
kept in the cache. The installs download nothing (a package.json without dependencies, run
by npm as the agent user). Needs root (the user switch) and Node.js."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from evalward.resources.agents.agent import AgentEnvironment
from evalward.runtime.environments.environment_limits import input_limits, side_limits
from fakes.github_api import FakeGitHub
from support.actionrun import ActionRun
from support.agentenv import HONEST, errors, open_pr, run_gate, scripted_project, workspace

pytestmark = pytest.mark.hostile

__all__ = ["workspace"]  # a fixture

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="running agents as a second user needs root (as in the image)"
)
needs_node = pytest.mark.skipif(shutil.which("npm") is None, reason="no npm on PATH")

NEVER_ENDS = HONEST + "setInterval(() => {}, 1000);\n"
WRITES_TWO_MB = HONEST + 'fs.writeFileSync("node_modules/blob.bin", Buffer.alloc(2 << 20, 1));\n'
WRITES_TWO_MB_AND_WAITS = WRITES_TWO_MB + "setInterval(() => {}, 1000);\n"
WRITES_EIGHT_GIGABYTES = (
    HONEST + 'fs.writeFileSync("node_modules/blob.bin", "");\n'
    'fs.truncateSync("node_modules/blob.bin", 8 * (1 << 30));\n'
)
"""8 GiB in an instant: a file grown with truncate, all hole, which a copy writes whole."""
CACHES_MORE_THAN_IT_KEEPS = (
    HONEST + 'const path = require("node:path");\n'
    "const cache = process.env.npm_config_cache;\n"
    "fs.mkdirSync(cache, { recursive: true });\n"
    'fs.writeFileSync(path.join(cache, "download.tgz"), "");\n'
    'fs.truncateSync(path.join(cache, "download.tgz"), 3 << 19);\n'
    'fs.writeFileSync("node_modules/blob.bin", Buffer.alloc(1 << 20, 1));\n'
    "setTimeout(() => {}, 1500);\n"
)
"""1.5 MB in npm's download cache (the installer's HOME, dropped before the seal) and 1 MB
in `node_modules`, both held while the install waits: what the watch samples."""
HIDES_EIGHT_GIGABYTES_IN_ITS_CACHE_AND_WAITS = (
    HONEST + 'const path = require("node:path");\n'
    "const cache = process.env.npm_config_cache;\n"
    "fs.mkdirSync(cache, { recursive: true });\n"
    'fs.writeFileSync(path.join(cache, "download.tgz"), "");\n'
    'fs.truncateSync(path.join(cache, "download.tgz"), 8 * (1 << 30));\n'
    "setInterval(() => {}, 1000);\n"
)
"""8 GiB where npm keeps its downloads, which the seal drops, then waits for ever."""
WRITES_FILES = (
    HONEST + 'for (let i = 0; i < 60; i++) fs.writeFileSync(`node_modules/f${i}.js`, "");\n'
)


WHO = r"(the environment|the install)"
"""Whose figure a cap's message gives: the sealed environment's, or the install's so far."""


def kept(workspace: Path) -> list[Path]:
    folder = workspace / ".evalward" / "cache" / "environments"
    return list(folder.iterdir()) if folder.is_dir() else []


def head_over_the_bases_size_cap(run: ActionRun, workspace: Path, *, who: str) -> None:
    """The head's error names (`who`: a pattern) the base's 1 MB size cap and the figure it
    reached, and only the base's environment was kept."""
    message = errors(run)["head"]
    assert re.search(
        rf"{who} takes more than 1 MB \([\d.]+ MB so far\), its cap "
        r"\(environment\.maxSizeMB of the base branch's definition of dep-agent\); to allow "
        r"more, raise `environment\.maxSizeMB` in the base branch's definition of dep-agent "
        r"\(agents/dep-agent\.yaml:6\)$",
        message,
    ), message
    (only,) = kept(workspace)
    assert '"side": "base"' in (only / "environment.json").read_text()


@needs_root
@needs_node
def test_a_head_that_raises_its_install_timeout_is_held_to_the_bases(
    workspace: Path, github: FakeGitHub
) -> None:
    """The base allows 5 s; the head's install never ends and asks for 100000 s."""
    base = scripted_project(HONEST, python=False, bounds={"timeoutSeconds": 5})
    head = scripted_project(NEVER_ENDS, python=False, bounds={"timeoutSeconds": 100000})
    run = run_gate(workspace, github, open_pr(workspace, github, base, head))
    message = errors(run)["head"]
    assert message.startswith("the agent's environment could not be built"), message
    assert re.search(
        r"^the agent's environment could not be built: agents/dep-agent\.yaml:6: the install "
        r"did not finish within 5 s \(npm was still running\), its cap "
        r"\(environment\.timeoutSeconds of the base branch's definition of dep-agent\); to "
        r"allow more, raise `environment\.timeoutSeconds` in the base branch's definition of "
        r"dep-agent \(agents/dep-agent\.yaml:6\)$",
        message,
    ), message
    assert all(
        (entry / "environment.json").is_file()
        and '"head"' not in (entry / "environment.json").read_text()
        for entry in kept(workspace)
    )


@needs_root
@needs_node
def test_a_head_larger_than_the_bases_size_cap_is_refused_and_not_kept(
    workspace: Path, github: FakeGitHub
) -> None:
    base = scripted_project(HONEST, python=False, bounds={"maxSizeMB": 1})
    head = scripted_project(WRITES_TWO_MB, python=False, bounds={"maxSizeMB": 100000})
    run = run_gate(workspace, github, open_pr(workspace, github, base, head))
    assert run.returncode == 1, run.stdout + run.stderr
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, sides
    head_over_the_bases_size_cap(run, workspace, who=WHO)


@needs_root
@needs_node
def test_a_head_that_installs_eight_gigabytes_is_refused_at_its_line_and_kept_nowhere(
    workspace: Path, github: FakeGitHub
) -> None:
    """Neither the base nor the inputs set a size: the default bound holds. The refusal
    names the environment's line, the bound and how the base allows more; nothing of the
    head's environment is written to the cache."""
    base = scripted_project(HONEST, python=False)
    head = scripted_project(WRITES_EIGHT_GIGABYTES, python=False)
    run = run_gate(workspace, github, open_pr(workspace, github, base, head))
    assert run.returncode == 1, run.stdout + run.stderr
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, sides
    message = errors(run)["head"]
    assert re.search(
        rf"^the agent's environment could not be built: agents/dep-agent\.yaml:6: {WHO} "
        r"takes more than 2,048 MB \(8,192\.\d MB so far\), its cap \(the action input "
        r"`environment-max-size-mb`\); to allow more, set `environment\.maxSizeMB` in the base "
        r"branch's definition of dep-agent \(agents/dep-agent\.yaml:6\), or the action input "
        r"`environment-max-size-mb`$",
        message,
    ), message
    (only,) = kept(workspace)
    assert '"side": "base"' in (only / "environment.json").read_text()
    assert sum(f.stat().st_size for f in only.rglob("*") if f.is_file()) < 1 << 20


@needs_root
@needs_node
def test_an_install_that_writes_past_the_size_cap_is_stopped_while_it_runs(
    workspace: Path, github: FakeGitHub
) -> None:
    """The head's install writes 2 MB where the base allows 1, then waits for ever: it is
    stopped for its size, long before its time (the base allows 300 s), and nothing of it
    is kept."""
    base = scripted_project(HONEST, python=False, bounds={"maxSizeMB": 1, "timeoutSeconds": 300})
    head = scripted_project(WRITES_TWO_MB_AND_WAITS, python=False)
    run = run_gate(workspace, github, open_pr(workspace, github, base, head))
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, run.stdout + run.stderr
    assert "did not finish within" not in errors(run)["head"]
    head_over_the_bases_size_cap(run, workspace, who="the install")


@needs_root
@needs_node
def test_an_install_whose_download_cache_is_over_the_cap_beside_what_it_keeps_is_admitted(
    workspace: Path, github: FakeGitHub
) -> None:
    """The base allows 2 MB; the head's install caches 1.5 MB and keeps 1 MB: what the
    environment keeps is within its cap, and the cache, dropped before the seal, is not the
    environment's."""
    base = scripted_project(HONEST, python=False, bounds={"maxSizeMB": 2})
    head = scripted_project(CACHES_MORE_THAN_IT_KEEPS, python=False)
    run = run_gate(workspace, github, open_pr(workspace, github, base, head))
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "pass"}, run.stdout + run.stderr
    head_kept = [
        e for e in kept(workspace) if '"side": "head"' in (e / "environment.json").read_text()
    ]
    (only,) = head_kept
    assert not list(only.rglob("download.tgz"))
    assert (only / "node_modules" / "blob.bin").stat().st_size == 1 << 20


@needs_root
@needs_node
def test_an_install_that_hides_its_bulk_in_its_download_cache_is_stopped_while_it_runs(
    workspace: Path, github: FakeGitHub
) -> None:
    """The cache is not the environment's, but it is not unbounded: 8 GiB there, where the
    base allows 1 MB, stops the install for its size long before its time (300 s), and
    nothing of it is kept."""
    base = scripted_project(HONEST, python=False, bounds={"maxSizeMB": 1, "timeoutSeconds": 300})
    head = scripted_project(HIDES_EIGHT_GIGABYTES_IN_ITS_CACHE_AND_WAITS, python=False)
    run = run_gate(workspace, github, open_pr(workspace, github, base, head))
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, run.stdout + run.stderr
    message = errors(run)["head"]
    assert re.search(
        r"agents/dep-agent\.yaml:6: the installer's caches and scratch files hold \d+ files, "
        r"folders and links and 8,192\.\d MB so far, more than the environment itself may "
        r"\(200,000, 1 MB\): its cap \(environment\.maxSizeMB of the base branch's definition "
        r"of dep-agent\)",
        message,
    ), message
    (only,) = kept(workspace)
    assert '"side": "base"' in (only / "environment.json").read_text()


@needs_root
@needs_node
def test_the_action_input_caps_the_file_count_where_the_base_sets_none(
    workspace: Path, github: FakeGitHub
) -> None:
    base = scripted_project(HONEST, python=False)
    head = scripted_project(WRITES_FILES, python=False, bounds={"maxFiles": 1000})
    event = open_pr(workspace, github, base, head)
    run = run_gate(workspace, github, event, INPUT_ENVIRONMENT_MAX_FILES="20")
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, run.stdout + run.stderr
    message = errors(run)["head"]
    assert re.search(
        rf"{WHO} holds more than 20 files, folders and links, its cap \(the action "
        r"input `environment-max-files`\)",
        message,
    ), message


def test_whose_bound_applies_to_each_side() -> None:
    """The head may lower a bound, never raise it; an agent the base lacks gets the inputs';
    a side the gate trusts is bounded by its own definition."""
    inputs = input_limits(timeout=60, size_mb=100, files=1000)
    head = AgentEnvironment.model_validate({"node": "package.json", "timeoutSeconds": 9999})
    base = AgentEnvironment.model_validate({"node": "package.json", "timeoutSeconds": 30})
    lower = AgentEnvironment.model_validate({"node": "package.json", "maxFiles": 10})

    judged = side_limits("a", head, base, judged=True, inputs=inputs)
    assert judged.timeout.value == 30 and "base branch's definition of a" in judged.timeout.source
    assert (judged.size_mb.value, judged.files.value) == (100, 1000)
    assert side_limits("a", head, None, judged=True, inputs=inputs).timeout.value == 60
    lowered = side_limits("a", lower, base, judged=True, inputs=inputs)
    assert lowered.files.value == 10 and lowered.files.source == "environment.maxFiles of a"
    assert side_limits("a", head, None, judged=False, inputs=inputs).timeout.value == 9999
