"""Every YAML and shell block of README.md and docs/*.md works as written.

Each page gets a git repository of its own, and its fenced blocks are taken in order:

- a YAML block whose first line is `# PATH` is written to PATH; one without is written under a
  name of its own. Resources must load without a warning (`evalward validate`, at the end of
  the page), a mock
  script must be accepted (`validate --mock-script`), `evalward.yaml` settings too; a workflow
  may give evalward's action only inputs it has;
- a shell block is run with bash (`-e -o pipefail`) in the repository, everything before it
  committed on `main`, with `evalward` on PATH and no provider key: it must exit 0;
- a comment before a block says what a block alone cannot:
  `<!-- docs-test: skip (why) -->` leaves it out (a block that needs the network, GitHub or
  minutes), `<!-- docs-test: file PATH -->` writes it to PATH, `<!-- docs-test: given
  PATH... -->` first writes placeholder files it refers to, and `<!-- docs-test: in KIND.path
  -->` says it is part of a resource (`in Agent`, `in Eval.spec`,
  `in EvalFixture.spec.assertions`): it is completed into one and must load (`in Agent
  given PATH...` writes the placeholder files it names first);
  `<!-- docs-test: install -->` runs a block that installs evalward (`pip install evalward`)
  as written, in a fresh virtualenv whose pip takes `evalward` from a wheel of this checkout
  (a constraint naming it; the session's one build, `support.distributions`) and finds its
  dependencies installed (the test environment's, `Page.install`); that virtualenv's
  evalward runs the page's later blocks.

Every fenced block names its language, so none is left out by accident.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalward.resources.reading.repo_config import RepoConfig
from support.clirun import SOURCE
from support.distributions import built, session_folder
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^( {0,4})```(\S*)[^\n]*\n(.*?)^\1```[ \t]*$", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!-- docs-test: (.+?) -->")
HEADER = re.compile(r"^# ([\w./-]+\.(?:ya?ml|md|py|sh|json))\s*$")
CONFIG_KEYS = {field.alias or name for name, field in RepoConfig.model_fields.items()}
"""The top-level keys of `evalward.yaml`, as its model reads them."""
ACTION_INPUTS = set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])
DOCS_AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: docs-agent }
spec:
  models: [openai/gpt-4.1-mini]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: docs-fixture }
spec:
  targetAgent: docs-agent
  input: { type: prompt, payload: { prompt: hello } }
  assertions: [{ type: contains, value: hello }]
"""
UNSELECTED = "selected by no Eval"
"""The warning of a fixture no Eval of the page's files selects."""
COMPLETIONS: dict[str, dict[str, Any]] = {
    "Agent": {},
    "Eval": {"targetAgent": "docs-agent", "fixtures": ["docs-fixture"]},
    "EvalFixture": {
        "targetAgent": "docs-agent",
        "input": {"type": "prompt", "payload": {"prompt": "hello"}},
        "assertions": [{"type": "contains", "value": "hello"}],
    },
}


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    text: str
    marker: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: str) -> list[Block]:
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip().splitlines()
        marker = MARKER.fullmatch(before[-1].strip()) if before else None
        body = "\n".join(line[len(match.group(1)) :] for line in match.group(3).splitlines())
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, line, match.group(2), body + "\n", marker[1] if marker else ""))
    return found


def test_every_fenced_block_names_its_language() -> None:
    unnamed = [b.where for page in PAGES for b in blocks(page) if not b.language]
    assert not unnamed, f"fenced blocks without a language (```text, ```yaml, ```sh…): {unnamed}"


def test_the_pages_hold_blocks_of_every_kind_the_test_runs() -> None:
    every = [b for page in PAGES for b in blocks(page)]
    markers = {b.marker.split()[0] for b in every if b.marker}
    assert markers == {"skip", "file", "given", "in", "install"}
    assert sum(b.language == "sh" and not b.marker for b in every) >= 3


class Page:
    """One page's repository, built block by block."""

    def __init__(self, page: str, path: Path, dists: Path) -> None:
        self.page = page
        self.dists = dists
        """The session's folder of this checkout's sdist and wheel (built on first use)."""
        self.repo = GitRepo(path / "repo")
        self.repo.write({".gitignore": ".evalward/\n"})
        self.home = path / "home"
        self.home.mkdir()
        self.mock_scripts: list[str] = []
        self.wrote_yaml = False
        self.bin = BIN
        """Where `evalward` comes from: the test's own, until a block installs it."""
        self.pip_env: dict[str, str] = {}

    def write(self, name: str, content: str) -> None:
        target = self.repo.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")

    def evalward(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.bash(" ".join(["evalward", *args]))

    def bash(self, script: str) -> subprocess.CompletedProcess[str]:
        if self.repo.git("status", "--porcelain"):
            self.repo.commit("the page's files so far")
        env = {
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(self.home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "LANG": "C.UTF-8",
            **self.pip_env,
            **({"PYTHONPATH": SOURCE} if self.bin == BIN else {}),  # the evalward under test
        }
        if self.bin == BIN:  # the test's own evalward runs this checkout's code
            env["PYTHONPATH"] = str(ROOT / "src")
        return subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=self.repo.path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def take(self, block: Block) -> None:
        command, _, argument = block.marker.partition(" ")
        if command == "skip":
            assert re.fullmatch(r"\(.+\)", argument), f"{block.where}: say why it is skipped"
            return
        if command == "install":
            self.install(block)
            return
        if command == "in" and " given " in argument:
            argument, _, given = argument.partition(" given ")
            for name in given.split():
                self.write(name, "placeholder\n")
        if command == "given":
            for name in argument.split():
                self.write(name, "placeholder\n")
        if command == "file":
            self.write(argument, block.text)
        elif block.language == "yaml":
            self.take_yaml(block, argument if command == "in" else "")
        elif block.language == "sh":
            done = self.bash(block.text)
            assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{done.stderr}"
        else:
            assert not command or command == "given", f"{block.where}: unknown marker"

    def install(self, block: Block) -> None:
        """The block, as written, in a fresh virtualenv whose `pip install evalward` gets
        this checkout (offline, the test's own evalward stands in for it).

        The virtualenv sees the test environment's site-packages (a `.pth` file naming it), so
        pip finds evalward's dependencies installed and installs only its wheel: the block's
        text runs with real pip in seconds, where resolving and downloading every dependency
        took most of this test's time. That the wheel and the sdist install with their declared
        dependencies resolved in an empty virtualenv is the release test's to prove
        (tests/toplevel/test_release.py)."""
        if os.environ.get("EVALWARD_OFFLINE") == "1":
            return
        venv = self.home / "venv"
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120)
        own = Path(sysconfig.get_path("purelib", vars={"base": str(venv)}))
        own.joinpath("dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
        constraint = self.home / "constraints.txt"
        constraint.write_text(f"evalward @ {built(self.dists).wheel.as_uri()}\n")
        cache = Path(os.environ.get("HOME", self.home)) / ".cache" / "pip"
        self.pip_env = {"PIP_CONSTRAINT": str(constraint), "PIP_CACHE_DIR": str(cache)}
        self.bin = venv / "bin"
        done = self.bash(block.text)
        assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{done.stderr}"
        assert (self.bin / "evalward").exists(), f"{block.where}: evalward was not installed"

    def take_yaml(self, block: Block, inside: str) -> None:
        first = block.text.splitlines()[0]
        header = HEADER.match(first)
        name = header[1] if header else f"docs-{block.line}.yaml"
        documents = list(yaml.safe_load_all(block.text))
        data = documents[0]
        if inside:
            self.write("docs-agent.yaml", DOCS_AGENT)
            self.write(f"fragment-{block.line}.yaml", completed(inside, data, block.line))
            self.wrote_yaml = True
        elif isinstance(data, dict) and "replies" in data:
            self.write(name, block.text)
            self.mock_scripts.append(name)
        elif is_workflow(data):
            check_workflow(block, data)
            if header:
                self.write(name, block.text)
        elif all(isinstance(d, dict) and "apiVersion" in d for d in documents):
            self.write(name, block.text)
            self.wrote_yaml = True
        elif isinstance(data, dict) and set(data) <= CONFIG_KEYS:
            self.write(header[1] if header else "evalward.yaml", block.text)
            self.wrote_yaml = True
        else:
            raise AssertionError(f"{block.where}: a YAML block of no kind this test knows")

    def finish(self) -> None:
        if not self.wrote_yaml and not self.mock_scripts:
            return
        for script in self.mock_scripts or [""]:
            done = self.evalward("validate", *(["--mock-script", script] if script else []))
            assert done.returncode == 0, f"{self.page}: evalward validate\n{done.stderr}"
            # a page shows a fixture without the Eval that selects it, which is elsewhere
            said = [line for line in done.stdout.splitlines() if UNSELECTED not in line]
            assert "warning" not in "\n".join(said), f"{self.page}: {done.stdout}"


def completed(inside: str, data: Any, line: int) -> str:
    """A resource of the kind `inside` names, with the block at its path."""
    kind, *path = inside.split(".")
    document: dict[str, Any] = {
        "apiVersion": "evalward.dev/v1",
        "kind": kind,
        "metadata": {"name": f"fragment-{line}"},
        "spec": dict(COMPLETIONS[kind]),
    }
    target = document
    for key in path[:-1]:
        target = target.setdefault(key, {})
    if not path:
        assert isinstance(data, dict)
        document = merged(document, data)
    elif isinstance(data, dict) and isinstance(target.get(path[-1]), dict):
        target[path[-1]] = merged(target[path[-1]], data)
    else:
        target[path[-1]] = data
    return yaml.safe_dump(document, sort_keys=False)


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = merged(out[key], value) if both else value
    return out


def is_workflow(data: Any) -> bool:
    if isinstance(data, dict):
        return "jobs" in data
    return isinstance(data, list) and all(isinstance(s, dict) and "uses" in s for s in data)


def check_workflow(block: Block, data: Any) -> None:
    """evalward's steps give only inputs the action has."""
    if isinstance(data, dict):
        steps = [step for job in data["jobs"].values() for step in job.get("steps", [])]
    else:
        steps = data
    for step in [s for s in steps if "evalward/evalward" in s.get("uses", "")]:
        unknown = set(step.get("with") or {}) - ACTION_INPUTS
        assert not unknown, f"{block.where}: evalward has no input {sorted(unknown)}"


@pytest.mark.parametrize("page", PAGES)
def test_the_blocks_of_a_page_work_as_written(
    page: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    made = Page(page, tmp_path, session_folder(tmp_path_factory))
    for block in blocks(page):
        made.take(block)
    made.finish()
