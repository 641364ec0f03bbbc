"""Every broken repository of the corpus: exit code 2 and one located message per problem,
through `evalward validate`, `evalward run` and the action entry, never a traceback; and
`validate` refuses exactly what `run` refuses, in the same words."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from definitions.corpus import CORPUS, EXTRA, SIDE_EFFECTING, Case, write_repo
from evalward.__main__ import main
from resources.checks.test_error_table import EVAL, FIXTURE
from support.actionrun import forked
from support.clirun import evalward
from support.limits import subprocess_limit

pytestmark = pytest.mark.hostile

LOCATED = re.compile(r"^[\w./-]+(:\d+(:\d+)?)?: ")


def problems(stderr: str, prefix: str) -> list[str]:
    """The problem lines of the one message evalward printed (after its count line), not the
    warnings `validate` lists after them (the corpus's evalward.yaml names an agent `bot`,
    which a case may not define)."""
    lines = [line.removeprefix(prefix) for line in stderr.splitlines()]
    assert lines, "no message"
    assert re.fullmatch(r"\d+ problems? in evalward resources:", lines[0]), lines
    return [line.strip() for line in lines[1:] if not line.strip().startswith("warning: ")]


def check(case: Case, stderr: str, prefix: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    found = problems(stderr, prefix)
    assert len(found) == len(case.expected), found
    for line, expected in zip(found, case.expected, strict=True):
        assert LOCATED.match(line), line
        assert line.startswith(expected), f"{line!r} does not start with {expected!r}"


def test_the_corpus_is_large_and_covers_every_category() -> None:
    assert len(CORPUS) >= 50
    assert len({c.id for c in CORPUS}) == len(CORPUS)
    assert {c.category for c in CORPUS} >= {
        "YAML syntax",
        "types and fields",
        "references",
        "cron",
        "regex",
        "file references",
        "paths",
        "encodings",
        "empty files",
        "huge files and limits",
        "refusals",
    }


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_validate(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_repo(tmp_path / "repo", case.files)
    code = main(["validate", str(tmp_path / "repo")])
    captured = capsys.readouterr()
    assert code == 2, captured
    check(case, captured.err, "evalward: ")


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_run_refuses_what_validate_refuses_in_the_same_words(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    write_repo(repo, case.files)
    validated = main(["validate", str(repo)])
    said = capsys.readouterr().err
    code = main(["run", str(repo), "--no-history", "--no-cache"])
    captured = capsys.readouterr()
    assert (validated, code) == (2, 2), captured
    check(case, captured.err, "evalward: ")
    assert problems(captured.err, "evalward: ") == problems(said, "evalward: ")


def test_validate_lists_problems_of_every_kind_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What does not load, what a run would refuse of what does, evalward.yaml's provider
    settings and the mock script: one message, every problem, in file order."""
    repo = tmp_path / "repo"
    write_repo(
        repo,
        {
            "evalward.yaml": "defaults: {targetAgent: bot}\nproviders: {gemini: {}}\n",
            "a.yaml": SIDE_EFFECTING,
            "refund.py": "print(1)\n",
            "f.yaml": FIXTURE,
            "e.yaml": EVAL,
            "g.yaml": FIXTURE.replace("name: fx", "name: gx").replace("contains", "containz"),
            "mock.yaml": "replies:\n  - {turns: []}\n",
        },
    )
    code = main(["validate", str(repo), "--mock-script", str(repo / "mock.yaml")])
    found = problems(capsys.readouterr().err, "evalward: ")
    assert code == 2
    assert [line.split(": ")[0] for line in found] == [
        str(repo / "mock.yaml") + ":2:6",
        "evalward.yaml:2:13",
        "f.yaml:6:1",
        "g.yaml:12:7",
    ]
    assert "needs `api` and `baseUrl`" in found[1] and "side-effecting tool 'refund'" in found[2]


def action_env(workspace: Path, run_dir: Path) -> dict[str, str]:
    """The environment of a workflow_dispatch run: every Eval on the current ref."""
    run_dir.mkdir(parents=True, exist_ok=True)
    event = run_dir / "event.json"
    event.write_text(json.dumps({"inputs": {}, "repository": {"full_name": "acme/agents"}}))
    for name in ("github_output", "step_summary"):
        (run_dir / name).write_text("")
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "workflow_dispatch",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "acme/agents",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_SHA": "0" * 40,
        "GITHUB_STEP_SUMMARY": str(run_dir / "step_summary"),
        "GITHUB_OUTPUT": str(run_dir / "github_output"),
        "INPUT_OUTPUT_DIR": str(run_dir / "out"),
        "INPUT_CACHE": "off",
    }


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_action_entry(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "repo"
    write_repo(workspace, case.files)
    for name, value in action_env(workspace, tmp_path / "runner").items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(workspace)
    code = main([])
    captured = capsys.readouterr()
    assert code == 2, captured
    check(case, captured.err, "::error::")


SAMPLE = [c for c in EXTRA if c.id in {"utf16-bom", "alias-bomb", "deep-block", "huge-file"}]
SAMPLE += [c for c in CORPUS if c.id in {"bad-yaml", "dangling-target", "command-symlink"}]


@pytest.mark.parametrize("case", SAMPLE, ids=[c.id for c in SAMPLE])
def test_subprocesses(case: Case, tmp_path: Path) -> None:
    """The same through processes of their own: `python -m evalward validate` and the
    action's entry point (from the tests' fork server, as every test's run of them)."""
    workspace = tmp_path / "repo"
    write_repo(workspace, case.files)
    validate = evalward("validate", str(workspace))
    assert validate.returncode == 2, validate
    check(case, validate.stderr, "evalward: ")
    env = {"PATH": "/usr/bin:/bin", **action_env(workspace, tmp_path / "runner")}
    action = forked(workspace, env, subprocess_limit())
    assert action.returncode == 2, action
    check(case, action.stderr, "::error::")
