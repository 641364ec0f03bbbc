"""`evalward validate` and `evalward schema` through the real entry point, and evalward.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from evalward.definitions.loader import load_resources
from evalward.errors import ResourceError
from support.clirun import evalward

pytestmark = pytest.mark.integration

SEEDS = Path(__file__).resolve().parents[1] / "resources" / "seeds"

AGENT = (
    "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: {name: bot}\nspec:\n  models: [openai/x]\n"
)
EVAL = (
    "apiVersion: evalward.dev/v1\nkind: Eval\nmetadata: {name: ev}\nspec:\n  targetAgent: bot\n"
    "  fixtureSelector: {matchLabels: {agent: bot}}\n"
)


def test_validate_counts_seed_resources_and_ignores_foreign_yaml(tmp_path: Path) -> None:
    for name in ("quickstart.yaml", "support-bot.yaml", "support-bot-agent.yaml"):
        (tmp_path / name).write_text((SEEDS / name).read_text())
    # The seed's agent offers no tool its fixture asks for, which validate refuses
    # (plan/preflight/test_names_before_run.py): this copy offers them.
    with (tmp_path / "support-bot-agent.yaml").open("a") as agent:
        agent.write(
            "  tools:\n"
            + "".join(
                f"    - {{ name: {tool}, description: {tool}, mock: {{ output: ok }} }}\n"
                for tool in ("clarify_reason", "create_jira_ticket", "send_email")
            )
        )
    (tmp_path / "ci.yaml").write_text("on: push\njobs: {test: {runs-on: ubuntu-latest}}\n")
    (tmp_path / "k8s.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "bad.yaml").write_text("apiVersion: evalward.dev/v1\nkind: X\n")
    done = evalward("validate", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "2 agents, 2 fixtures, 2 evals OK"


def test_validate_reports_every_error_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(AGENT + "  sytem: x\n")
    (tmp_path / "e.yaml").write_text(EVAL + '  schedule: "61 * * * *"\n')
    done = evalward("validate", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "evalward: 2 problems in evalward resources:"
    assert "a.yaml:6:3: spec.sytem: unknown field 'sytem' (did you mean 'system'?)" in lines[1]
    assert "e.yaml:7:3: spec.schedule: cron minute field: 61 is out of range 0-59" in lines[2]


def test_a_selector_that_adds_nothing_to_the_listed_fixtures_is_a_warning(
    tmp_path: Path,
) -> None:
    fixture = (
        "apiVersion: evalward.dev/v1\nkind: EvalFixture\nmetadata: {name: fx}\nspec:\n"
        "  targetAgent: bot\n  input: {type: prompt, payload: {prompt: hi}}\n"
        "  assertions: [{type: contains, value: hi}]\n"
    )
    (tmp_path / "r.yaml").write_text(AGENT + "---\n" + EVAL + "  fixtures: [fx]\n---\n" + fixture)
    done = evalward("validate", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "warning: r.yaml:7:1: spec.fixtureSelector.matchLabels: Eval 'ev': the selector "
        "{'agent': 'bot'} matches no fixture; only the fixtures listed under spec.fixtures run"
        in done.stdout
    )
    assert "1 agents, 1 fixtures, 1 evals OK" in done.stdout


def test_schema_command_prints_a_schema_that_validates_the_examples(tmp_path: Path) -> None:
    done = evalward("schema", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    for document in yaml.safe_load_all((SEEDS / "support-bot.yaml").read_text()):
        jsonschema.validate(document, schema)
    one = json.loads(evalward("schema", "EvalFixture", cwd=tmp_path).stdout)
    assert one["title"] == "EvalFixture"
    assert one["properties"]["apiVersion"]["enum"] == ["evalward.dev/v1", "pai.io/v1"]
    bad = evalward("schema", "Evl", cwd=tmp_path)
    assert bad.returncode == 2
    assert "did you mean 'Eval'?" in bad.stderr


def test_config_roots_excludes_and_defaults(tmp_path: Path) -> None:
    (tmp_path / "evalward.yaml").write_text(
        "roots: [evals]\nexclude: [evals/legacy]\n"
        "defaults:\n  targetAgent: bot\n  judge: {model: openai/judge, temperature: 0.5}\n"
    )
    (tmp_path / "evals" / "legacy").mkdir(parents=True)
    (tmp_path / "evals" / "legacy" / "old.yaml").write_text(
        "apiVersion: evalward.dev/v1\nkind: ?\n"
    )
    (tmp_path / "outside.yaml").write_text("apiVersion: evalward.dev/v1\nkind: Nope\n")
    (tmp_path / "evals" / "r.yaml").write_text(
        AGENT + "---\n" + EVAL + "  judge: {temperature: 0}\n"
    )
    (tmp_path / "evals" / "cases.yaml").write_text(
        "evalcases:\n  - id: add\n    expected_outcome: says 4\n    input: 2+2?\n"
    )
    loaded = load_resources(tmp_path)
    judge = loaded.evals["ev"].resource.spec.judge
    assert (judge.model, judge.temperature) == ("openai/judge", 0)
    fixture = loaded.fixtures["add"].resource
    assert fixture.spec.target_agent == "bot"
    assert [f.resource.metadata.name for f in loaded.fixtures_of(loaded.evals["ev"].resource)] == [
        "add"
    ]


def test_config_errors_are_located(tmp_path: Path) -> None:
    (tmp_path / "evalward.yaml").write_text("roots: [../elsewhere]\nexlude: [x]\n")
    try:
        load_resources(tmp_path)
    except ResourceError as exc:
        rendered = [p.render() for p in exc.problems]
    else:  # pragma: no cover - the assertion below reports it
        rendered = []
    assert rendered == [
        "evalward.yaml:1:1: roots: root '../elsewhere' must be a folder inside the repository",
        "evalward.yaml:2:1: exlude: unknown field 'exlude' (did you mean 'exclude'?)",
    ]


def test_a_missing_root_is_a_config_problem_at_its_line(tmp_path: Path) -> None:
    # it named no line, nor the folder a misspelt root meant, nor what to do
    (tmp_path / "evalward.yaml").write_text("roots: [agents, evlas]\n")
    (tmp_path / "agents").mkdir()
    (tmp_path / "evals").mkdir()
    done = evalward("validate", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert (
        "evalward.yaml:1:17: roots[1]: root 'evlas' is not a folder of the repository (did you "
        "mean 'evals'?); list the folders that hold your resources, from the repository root"
    ) in done.stderr, done.stderr


def test_a_misspelt_root_is_told_first_and_what_it_leaves_undefined_points_at_it(
    tmp_path: Path,
) -> None:
    # the Eval's "targets agent 'bot', which is not defined" came first, as if the agent were
    # missing, and the root that left its folder unread came last
    (tmp_path / "evalward.yaml").write_text("roots: [agent, evals]\n")
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "bot.yaml").write_text(AGENT)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "ev.yaml").write_text(EVAL)
    (tmp_path / "evals" / "fixture.yaml").write_text(
        "apiVersion: evalward.dev/v1\nkind: EvalFixture\n"
        "metadata: {name: add, labels: {agent: bot}}\nspec:\n  targetAgent: bot\n"
        "  input: {type: prompt, payload: {prompt: hi}}\n"
        "  assertions: [{type: contains, value: hi}]\n"
    )
    for command in ("validate", "run"):
        done = evalward(command, str(tmp_path), cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert _problems(done.stderr) == [
            "evalward.yaml:1:9: roots[0]: root 'agent' is not a folder of the repository (did "
            "you mean 'agents'?); list the folders that hold your resources, from the "
            "repository root",
            "evals/ev.yaml:5:3: spec.targetAgent: Eval 'ev' targets agent 'bot', which is not "
            "defined: no folder of the repository is at the root evalward.yaml lists as "
            "'agent' (evalward.yaml:1:9), and the folder it meant may define it",
            "evals/fixture.yaml:5:3: spec.targetAgent: EvalFixture 'add' is for agent 'bot' "
            "(its targetAgent), which is not defined: no folder of the repository is at the "
            "root evalward.yaml lists as 'agent' (evalward.yaml:1:9), and the folder it meant "
            "may define it",
        ], done.stderr


def test_fixtures_a_misspelt_root_leaves_unread_are_not_said_to_be_missing(
    tmp_path: Path,
) -> None:
    # "selects no fixture: no EvalFixture has the labels" came first, as if none had them
    (tmp_path / "evalward.yaml").write_text("roots: [evals, fixture]\n")
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "all.yaml").write_text(f"{AGENT}---\n{EVAL}")
    done = evalward("validate", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert _problems(done.stderr) == [
        "evalward.yaml:1:16: roots[1]: root 'fixture' is not a folder of the repository; list "
        "the folders that hold your resources, from the repository root",
        "evals/all.yaml:12:21: spec.fixtureSelector.matchLabels: Eval 'ev' selects no fixture: "
        "no EvalFixture read has the labels {'agent': 'bot'}; no folder of the repository is "
        "at the root evalward.yaml lists as 'fixture' (evalward.yaml:1:16), and the folder it "
        "meant may hold them",
    ], done.stderr


def test_a_misspelt_assertions_key_is_one_problem_at_the_typo(tmp_path: Path) -> None:
    # it was two: "spec: expected at least 1 item in `assertions`; found none" at the line of
    # `spec:`, listed first, then the unknown field 'asertions' that caused it (and the Eval
    # that selects the fixture pointed at `spec:`)
    (tmp_path / "all.yaml").write_text(
        f"{AGENT}---\n{EVAL}---\n"
        "apiVersion: evalward.dev/v1\nkind: EvalFixture\n"
        "metadata: {name: add, labels: {agent: bot}}\nspec:\n  targetAgent: bot\n"
        "  input: {type: prompt, payload: {prompt: hi}}\n"
        "  asertions: [{type: contains, value: hi}]\n"
    )
    for command in ("validate", "run"):
        done = evalward(command, str(tmp_path), cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert _problems(done.stderr) == [
            "all.yaml:20:3: spec.asertions: unknown field 'asertions' (did you mean "
            "'assertions'?); 'assertions' is required, and missing",
            "all.yaml:12:21: spec.fixtureSelector.matchLabels: Eval 'ev' selects no fixture "
            "that loads: the fixtures with the labels {'agent': 'bot'} are invalid: 'add' (see "
            "all.yaml:20)",
        ], done.stderr


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        (
            # a key of `spec` indented past its siblings
            AGENT + "    system: hi\n",
            "bot.yaml:6:5: invalid YAML: did not find expected key (line 6 is indented 4 "
            "spaces, and the mapping it is in, from line 5, indents its keys 2 spaces: YAML reads "
            "a block by its indentation, so give the keys of one mapping the same, and a value "
            "under its key more)",
        ),
        (
            # a tool's second key written at its `-`
            AGENT + "  tools:\n    - name: lookup\n    mock: {output: ok}\n",
            "bot.yaml:8:5: invalid YAML: did not find expected '-' indicator (line 8 is indented "
            "as the items of the list from line 7, but does not start with `- `: indent a key of "
            "an item as its first key, after the `- `, or start a new item with `- `)",
        ),
    ],
)
def test_a_misindented_line_is_told_how_far_it_and_its_block_are_indented(
    tmp_path: Path, agent: str, said: str
) -> None:
    # the parser's words alone, "did not find expected key", said neither what was wrong with
    # the line nor what to do
    (tmp_path / "bot.yaml").write_text(agent)
    done = evalward("validate", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert _problems(done.stderr) == [said], done.stderr


def test_an_eval_with_no_selector_is_told_to_select_by_a_label(tmp_path: Path) -> None:
    # it was told to "give its fixtures those labels", naming none
    (tmp_path / "all.yaml").write_text(
        AGENT + "---\n" + EVAL.replace("  fixtureSelector: {matchLabels: {agent: bot}}\n", "")
    )
    done = evalward("validate", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert _problems(done.stderr) == [
        "all.yaml:10:1: spec: Eval 'ev' selects no fixture: it has no "
        "`fixtureSelector.matchLabels` and no `fixtures` list, so a run would score nothing; "
        "select its fixtures by a label they have (`fixtureSelector: {matchLabels: {…}}`), or "
        "list them under spec.fixtures",
    ], done.stderr


def _problems(stderr: str) -> list[str]:
    """The problems `evalward: N problems in evalward resources:` lists, in order."""
    lines = stderr.splitlines()
    assert lines[0].startswith("evalward: "), stderr
    return [line.removeprefix("evalward:").strip() for line in lines[1:]]


def test_agentv_tests_path_and_repo_root_references(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "style.md").write_text("Be brief.")
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "suite.eval.yaml").write_text(
        "name: suite\nexecution: {target: bot}\n"
        "input:\n  - role: system\n    content:\n      - {type: file, value: /docs/style.md}\n"
        "tests: ./cases.yaml\n"
    )
    (tmp_path / "evals" / "cases.yaml").write_text(
        "- id: Greets_User\n  criteria: greets\n  input: hello\n"
        "  assertions:\n    - type: equals\n  expected_output: hi\n"
    )
    loaded = load_resources(tmp_path)
    spec = loaded.fixtures["greets_user"].resource.spec
    assert [(m.role, m.content) for m in spec.input.messages] == [
        ("system", '<file path="/docs/style.md">\nBe brief.\n</file>'),
        ("user", "hello"),
    ]
    assert [a.type for a in spec.assertions] == ["judge", "equals"]
    assert spec.assertions[1].value == "hi"  # type: ignore[union-attr]
    assert spec.reference == "hi"


def test_yaml_1_1_words_stay_strings_whatever_the_file_holds(tmp_path: Path) -> None:
    """`no` is a string by YAML 1.2's core schema, in a file that holds `<<` too, with or
    without the yaml-rs wheel (a stand-in module that refuses to import takes its place)."""
    for name, description in (("plain", "plain tags"), ("tagged", "uses <<SYS>> tags")):
        (tmp_path / f"{name}.yaml").write_text(
            f"apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: {{name: {name}}}\n"
            f"spec:  # {description}\n  models: [openai/x]\n  system: no\n"
        )
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "yaml_rs.py").write_text("raise ImportError('no wheel for this platform')\n")
    source = str(Path(__file__).resolve().parents[2] / "src")
    for path in (source, f"{blocker}:{source}"):
        done = evalward("validate", str(tmp_path), cwd=tmp_path, PYTHONPATH=path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == "2 agents, 0 fixtures, 0 evals OK"
