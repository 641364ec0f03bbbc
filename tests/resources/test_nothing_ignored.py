"""What evalward cannot interpret is refused by `evalward validate` and `evalward run` alike,
through the command line: exit 2, the file and line, what was expected and how to fix it.
Nothing of it is skipped in silence, and nothing of it is run as if it meant something else."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec:
  models: [mock/m]
  system: You answer.
"""

FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: hello, labels: { agent: bot } }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: "Hello?" } }
  assertions:
    - { type: contains, value: hi }
"""

EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec:
  targetAgent: bot
  fixtureSelector: { matchLabels: { agent: bot } }
"""

MOCK = "replies:\n  - match: { agent: bot }\n    turns:\n      - content: hi there\n"

CASES = [
    (
        "a fixture for an agent that is not defined",
        {"evals/f.yaml": FIXTURE.replace("targetAgent: bot", "targetAgent: bto")},
        "evals/f.yaml:5:3: spec.targetAgent: EvalFixture 'hello' is for agent 'bto' (its "
        "targetAgent), which is not defined (did you mean 'bot'?)",
    ),
    (
        "an evalward kind under an apiVersion that is not evalward's",
        {"evals/f.yaml": FIXTURE.replace("evalward.dev/v1", "evalward/v1")},
        "evals/f.yaml:1:1: apiVersion: unsupported apiVersion: expected evalward.dev/v1; found "
        "'evalward/v1'. A document of kind EvalFixture is read as evalward's: write "
        "`apiVersion: evalward.dev/v1`, or, if the file is not evalward's, list it under "
        "`exclude` in evalward.yaml",
    ),
    (
        "an Eval that selects no fixture",
        {"evals/f.yaml": FIXTURE.replace("labels: { agent: bot }", "labels: { agent: other }")},
        "evals/e.yaml:6:22: spec.fixtureSelector.matchLabels: Eval 'bot-eval' selects no "
        "fixture: no EvalFixture has the labels {'agent': 'bot'}, so a run would score nothing",
    ),
    (
        "a judge assertion under an Eval with no judge",
        {"evals/f.yaml": FIXTURE + "    - { type: judge, rubric: Be polite. }\n"},
        "evals/e.yaml:4:1: spec: Eval 'bot-eval' sets no spec.judge.model, and the fixtures it "
        "selects have judge assertions that nothing could score: 'hello' (evals/f.yaml:1); set "
        "spec.judge.model",
    ),
    (
        "roots that hold no resource",
        {"evalward.yaml": "roots: [evals, agent]\n", "agent/README.yaml": "title: not ours\n"},
        "evalward.yaml:1:16: roots[1]: root 'agent' holds no evalward resource: no YAML file "
        "under it has a document with `apiVersion: evalward.dev/v1` or an AgentV eval file",
    ),
]


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.mark.parametrize(("case", "files", "message"), CASES, ids=[c[0] for c in CASES])
def test_validate_and_run_refuse_what_they_cannot_interpret(
    tmp_path: Path, case: str, files: dict[str, str], message: str
) -> None:
    write(tmp_path, {"evals/a.yaml": AGENT, "evals/f.yaml": FIXTURE, "evals/e.yaml": EVAL})
    (tmp_path / "mock.yaml").write_text(MOCK)
    sound = evalward("run", str(tmp_path), "--mock-script", "mock.yaml", cwd=tmp_path)
    assert sound.returncode == 0, sound.stderr  # the suite as it was runs and passes
    write(tmp_path, files)

    checked = evalward("validate", str(tmp_path), "--mock-script", "mock.yaml", cwd=tmp_path)
    ran = evalward("run", str(tmp_path), "--mock-script", "mock.yaml", cwd=tmp_path)

    for done in (checked, ran):
        assert done.returncode == 2, (case, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        assert message in done.stderr, (case, done.stderr)
        assert "OK" not in done.stdout and "runs planned" not in done.stderr


def test_validate_of_a_tree_with_no_resource_says_where_it_looked(tmp_path: Path) -> None:
    (tmp_path / "ci.yaml").write_text("on: push\n")
    done = evalward("validate", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"evalward: {tmp_path}: no evalward resource found in the whole repository: no YAML "
        "document has `apiVersion: evalward.dev/v1` and no file is an AgentV eval file; give "
        "the repository root, or fix `roots` in evalward.yaml\n"
    )


def test_a_file_of_another_tool_is_left_out_by_exclude(tmp_path: Path) -> None:
    """The documented way out for another tool's `kind: Agent`: `exclude` in evalward.yaml."""
    write(tmp_path, {"evals/a.yaml": AGENT, "evals/f.yaml": FIXTURE, "evals/e.yaml": EVAL})
    other = "apiVersion: agents.example.com/v1alpha1\nkind: Agent\nmetadata: { name: x }\n"
    write(tmp_path, {"deploy/agent.yaml": other})
    (tmp_path / "mock.yaml").write_text(MOCK)
    check = ("validate", str(tmp_path), "--mock-script", "mock.yaml")
    refused = evalward(*check, cwd=tmp_path)
    assert refused.returncode == 2 and "deploy/agent.yaml:1:1: apiVersion:" in refused.stderr
    (tmp_path / "evalward.yaml").write_text("exclude: [deploy]\n")
    done = evalward(*check, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1 agents, 1 fixtures, 1 evals OK\n"


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_base_that_is_not_there_is_a_configuration_error(tmp_path: Path, command: str) -> None:
    write(tmp_path, {"evals/a.yaml": AGENT, "evals/f.yaml": FIXTURE, "evals/e.yaml": EVAL})
    (tmp_path / "mock.yaml").write_text(MOCK)
    args = (command, str(tmp_path), "--mock-script", "mock.yaml", "--base")

    no_repository = evalward(*args, "main", cwd=tmp_path, GIT_CEILING_DIRECTORIES=str(tmp_path))
    assert no_repository.returncode == 2, no_repository.stderr
    assert no_repository.stderr == (
        f"evalward: --base main: {tmp_path} is not in a git repository, so there is nothing "
        "to compare with; run evalward in a clone, or leave out --base to run every Eval\n"
    )

    repo = GitRepo(tmp_path)
    repo.commit("the suite", {})
    no_branch = evalward(*args, "nosuchbranch", cwd=tmp_path)
    assert no_branch.returncode == 2, no_branch.stderr
    assert no_branch.stderr == (
        f"evalward: --base nosuchbranch: no branch, tag or commit 'nosuchbranch' in {tmp_path}; "
        "give a branch, tag or commit it has (`git branch -a` lists the branches), or leave "
        "out --base to run every Eval\n"
    )
    assert "fetch-depth" not in no_repository.stderr + no_branch.stderr


UNREAD = [
    (
        "failOnRegression under adaptive reps",
        "  execution: { reps: { min: 1, max: 8 } }\n"
        "  scoring: { gate: { failOnRegression: any } }\n",
        "evals/e.yaml:8:22: spec.scoring.gate.failOnRegression: Eval 'bot-eval' has adaptive "
        "reps (execution.reps), which do not read scoring.gate.failOnRegression: a regression "
        "its per-fixture sequential test settles always blocks",
    ),
    (
        "passThreshold under adaptive reps",
        "  execution: { reps: { max: 8 } }\n  scoring: { passThreshold: 0.9 }\n",
        "evals/e.yaml:8:14: spec.scoring.passThreshold: Eval 'bot-eval' has adaptive reps "
        "(execution.reps), which do not read scoring.passThreshold: its sequential tests "
        "decide, not a score threshold",
    ),
    (
        "repsPerFixture beside adaptive reps",
        "  execution: { reps: { max: 8 }, repsPerFixture: 5 }\n",
        "spec.execution.repsPerFixture: Eval 'bot-eval' has adaptive reps (execution.reps), "
        "which do not read execution.repsPerFixture: `reps: {min, max}` replaces it",
    ),
    (
        "a sequential test's rate under fixed reps",
        "  scoring: { gate: { falseBlockRate: 0.05 } }\n",
        "evals/e.yaml:7:22: spec.scoring.gate.falseBlockRate: Eval 'bot-eval' has fixed reps "
        "(no execution.reps), which do not read scoring.gate.falseBlockRate: only adaptive "
        "reps' sequential tests do",
    ),
]


@pytest.mark.parametrize(("case", "settings", "message"), UNREAD, ids=[c[0] for c in UNREAD])
def test_validate_names_a_setting_the_policy_in_force_does_not_read(
    tmp_path: Path, case: str, settings: str, message: str
) -> None:
    """A setting that changes nothing under the Eval's way of deciding (fixed or adaptive
    reps) is a warning at its line, saying what decides instead; the suite still runs."""
    write(tmp_path, {"evals/a.yaml": AGENT, "evals/f.yaml": FIXTURE, "evals/e.yaml": EVAL})
    (tmp_path / "mock.yaml").write_text(MOCK)
    clean = evalward("validate", str(tmp_path), "--mock-script", "mock.yaml", cwd=tmp_path)
    assert "warning" not in clean.stdout + clean.stderr
    write(tmp_path, {"evals/e.yaml": EVAL + settings})

    done = evalward("validate", str(tmp_path), "--mock-script", "mock.yaml", cwd=tmp_path)

    assert done.returncode == 0, (case, done.stderr)
    (warning,) = [line for line in done.stdout.splitlines() if line.startswith("warning: ")]
    assert message in warning, (case, warning)


def test_a_default_the_eval_does_not_read_is_named_at_the_eval(tmp_path: Path) -> None:
    """evalward.yaml's defaults give every Eval a threshold; an adaptive Eval ignores it."""
    adaptive = EVAL + "  execution: { reps: { max: 8 } }\n"
    write(tmp_path, {"evals/a.yaml": AGENT, "evals/f.yaml": FIXTURE, "evals/e.yaml": adaptive})
    write(tmp_path, {"evalward.yaml": "defaults:\n  scoring: { passThreshold: 0.9 }\n"})
    (tmp_path / "mock.yaml").write_text(MOCK)
    done = evalward("validate", str(tmp_path), "--mock-script", "mock.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "warning: evals/e.yaml:4:1: spec.scoring.passThreshold: Eval 'bot-eval' has adaptive "
        "reps (execution.reps), which do not read scoring.passThreshold"
    ) in done.stdout
    assert "from evalward.yaml's defaults" in done.stdout


def test_a_default_agent_that_names_no_agent_is_a_warning_at_its_line(tmp_path: Path) -> None:
    """`defaults.targetAgent` is the agent of an AgentV test without `execution.target`; an
    Eval names its own. A misspelt one (`bto`) was read by nothing, and nothing said so:
    `validate` and every run say it at its line, and the suite runs as without it."""
    write(tmp_path, {"evals/a.yaml": AGENT, "evals/f.yaml": FIXTURE, "evals/e.yaml": EVAL})
    write(tmp_path, {"evalward.yaml": "exclude: [mock.yaml]\ndefaults:\n  targetAgent: bto\n"})
    (tmp_path / "mock.yaml").write_text(MOCK)
    warning = (
        "warning: evalward.yaml:3:3: defaults.targetAgent: names agent 'bto', which is not "
        "defined (did you mean 'bot'?); it is the agent of an AgentV test that names no "
        "`execution.target` (an Eval names its own `targetAgent`), so as it is no run reads "
        "it; name an Agent's metadata.name, or remove it"
    )

    checked = evalward("validate", str(tmp_path), "--mock-script", "mock.yaml", cwd=tmp_path)
    ran = evalward("run", str(tmp_path), "--mock-script", "mock.yaml", cwd=tmp_path)

    assert checked.returncode == 0, checked.stderr
    assert warning in checked.stdout, checked.stdout
    assert ran.returncode == 0, ran.stderr
    assert f"> {warning}" in ran.stdout, ran.stdout
    write(tmp_path, {"evalward.yaml": "exclude: [mock.yaml]\ndefaults:\n  targetAgent: bot\n"})
    named = evalward("validate", str(tmp_path), "--mock-script", "mock.yaml", cwd=tmp_path)
    assert "warning" not in named.stdout + named.stderr, named.stdout
