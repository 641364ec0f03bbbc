"""What a run would find, `validate` finds first, and `run` before its first model call: a
user's mistakes in playgrounds, `sql` criteria, state paths and code scorers, each through
the command line, each message at the file and line of the mistake, and not one request to
the model server. `validate --playgrounds` provisions each playground once, without a model,
and says why one cannot be made at the playground's line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass

import pytest

from fakes.model_server import ScriptedModelServer
from support.clirun import REPO_ROOT, evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL, status TEXT);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id TEXT, amount REAL, reason TEXT);
INSERT INTO orders VALUES ('A-1042', 25.0, 'delivered');
"""

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: support }
spec:
  models: [openai/gpt-4.1-mini]
  system: Refund a delivered order once the customer has said why.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: support-sqlite }
spec:
  targetAgent: support
  fixtures: [refund, refund-conversation]
  simulatedUser: { model: openai/gpt-4.1-mini }
  playground:
    name: shop
    sqlite: { seed: shop/seed.sql }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund }
spec:
  targetAgent: support
  input: { type: prompt, payload: { prompt: "Refund order A-1042, it arrived broken." } }
  assertions:
    - { type: sql, query: "SELECT order_id, amount FROM refunds", rows: [[A-1042, 25.0]] }
    - { type: stateValue, at: db.orders.A-1042.status, equals: refunded }
    - type: code
      language: python
      source: |
        said = output.lower()
        return "refund" in said
    - type: code
      language: javascript
      source: |
        const said = output.toLowerCase();
        return said.includes('refund');
    - { type: code, file: scorers/polite.py }
    - { type: code, file: scorers/kind.js }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund-conversation }
spec:
  targetAgent: support
  conversation:
    user:
      persona: Dana, who answers only what she is asked.
      goal: Get her money back for order A-1042.
    maxTurns: 3
  assertions:
    - { type: sql, query: "SELECT count(*) FROM refunds", rows: [[1]] }
"""

SERVICE = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: support-service }
spec:
  targetAgent: support
  fixtures: [crm-refund]
  playground:
    name: crm
    service:
      start: [python3, crm/server.py, --port, "{port}", --seed, "{seed}"]
      seed: crm/seed.json
      ready: /health
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: crm-refund }
spec:
  targetAgent: support
  input: { type: prompt, payload: { prompt: "Refund order A-1042." } }
  assertions:
    - { type: stateValue, at: service.refunds, contains: { order_id: A-1042 } }
"""

CRM = REPO_ROOT / "examples" / "refund-desk" / "crm"
NODE = shutil.which("node") is not None


def files() -> dict[str, str]:
    return {
        "evals/suite.yaml": SUITE,
        "evals/service.yaml": SERVICE,
        "shop/seed.sql": SEED,
        "crm/server.py": (CRM / "server.py").read_text(),
        "crm/seed.json": (CRM / "seed.json").read_text(),
        "scorers/polite.py": "def get_assert(output, context):\n    return 'sorry' in output\n",
        "scorers/kind.js": "module.exports = (output) => {\n  return output.includes('thank');\n};",
    }


def line_of(text: str, needle: str) -> int:
    """The line of `text` that holds `needle` (which must be there once)."""
    assert text.count(needle) == 1, needle
    return text[: text.index(needle)].count("\n") + 1


def problems(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The problem lines of a refusal: exit 2, one message, no traceback."""
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "Traceback" not in said and "internal error" not in said, said
    return [x.removeprefix("evalward:").strip() for x in done.stderr.splitlines()[1:]]


@dataclass(frozen=True)
class Mistake:
    id: str
    file: str
    old: str
    new: str
    at: tuple[str, str]
    """The file the message names and the text of the line it points at, once that file is
    changed."""
    said: str
    """What the message says there, after its `file:line[:column]: `."""


MISTAKES = [
    Mistake(
        "seed-syntax",
        "shop/seed.sql",
        "CREATE TABLE refunds",
        "CRATE TABLE refunds",
        ("evals/suite.yaml", "sqlite: { seed: shop/seed.sql }"),
        "spec.playground.sqlite.seed: playground 'shop': the seed 'shop/seed.sql' does not "
        'load: near "CRATE": syntax error (the statement at shop/seed.sql:2)',
    ),
    Mistake(  # the seed is the pull request's, loaded in evalward's own process
        "seed-writes-a-file",
        "shop/seed.sql",
        "INSERT INTO orders",
        "ATTACH DATABASE 'escaped.db' AS other;\nINSERT INTO orders",
        ("evals/suite.yaml", "sqlite: { seed: shop/seed.sql }"),
        "spec.playground.sqlite.seed: playground 'shop': the seed 'shop/seed.sql' may not "
        "attach another database (the statement at shop/seed.sql:3)",
    ),
    Mistake(  # a run started the service anyway: each of its runs an error that it exited
        "service-script",
        "evals/service.yaml",
        "crm/server.py, --port",
        "crm/servr.py, --port",
        ("evals/service.yaml", "crm/servr.py"),
        "`start` runs 'crm/servr.py', which is not a file of the repository (paths are from "
        "its root; an untracked or git-ignored file is never run)",
    ),
    Mistake(
        "sql-keyword",
        "evals/suite.yaml",
        '"SELECT order_id, amount FROM refunds"',
        '"SELEC order_id, amount FROM refunds"',
        ("evals/suite.yaml", "SELEC order_id"),
        "spec.assertions[0].query: the query fails on the seed 'shop/seed.sql' of playground "
        "'shop': near \"SELEC\": syntax error (did you mean 'SELECT'?)",
    ),
    Mistake(
        "sql-table",
        "evals/suite.yaml",
        "amount FROM refunds",
        "amount FROM refundz",
        ("evals/suite.yaml", "FROM refundz"),
        "spec.assertions[0].query: the query fails on the seed 'shop/seed.sql' of playground "
        "'shop': no such table: refundz (did you mean 'refunds'?)",
    ),
    Mistake(
        "sql-column",
        "evals/suite.yaml",
        "order_id, amount FROM",
        "order_id, amout FROM",
        ("evals/suite.yaml", "amout FROM"),
        "spec.assertions[0].query: the query fails on the seed 'shop/seed.sql' of playground "
        "'shop': no such column: amout (did you mean 'amount'?)",
    ),
    Mistake(
        "python-inline",
        "evals/suite.yaml",
        'return "refund" in said',
        'return "refund" in said ==',
        ("evals/suite.yaml", 'return "refund" in said =='),
        "spec.assertions[2].source: the inline Python scorer does not compile: invalid "
        'syntax: return "refund" in said ==',
    ),
    Mistake(
        "python-file",
        "scorers/polite.py",
        "return 'sorry' in output",
        "return 'sorry' in output)",
        ("scorers/polite.py", "return 'sorry' in output)"),
        "the Python scorer does not compile: unmatched ')': return 'sorry' in output)",
    ),
    Mistake(
        "javascript-inline",
        "evals/suite.yaml",
        "return said.includes('refund');",
        "return said.includes('refund') &&",
        ("evals/suite.yaml", "return said.includes('refund') &&"),
        "spec.assertions[3].source: the inline JavaScript scorer does not parse: SyntaxError: "
        "Unexpected end of input",
    ),
    Mistake(
        "javascript-file",
        "scorers/kind.js",
        "return output.includes('thank');",
        "return output.includes('thank'));",
        ("scorers/kind.js", "return output.includes('thank'));"),
        "the JavaScript scorer does not parse: SyntaxError: Unexpected token ')'",
    ),
]


@pytest.fixture
def suite(repo: GitRepo) -> GitRepo:
    repo.commit("a suite with playgrounds, criteria and scorers", files())
    return repo


def test_the_suite_as_written_validates_and_its_playgrounds_are_made(suite: GitRepo) -> None:
    """Nothing a correct suite holds is refused or warned about: every check below fails on
    a mistake, not on the suite."""
    done = evalward("validate", ".", "--playgrounds", cwd=suite.path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stdout, done.stdout
    assert "2 of 2 playgrounds provisioned and torn down" in done.stdout


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.id for m in MISTAKES])
def test_validate_and_run_find_the_mistake_before_a_model_is_called(
    suite: GitRepo, model: ScriptedModelServer, mistake: Mistake
) -> None:
    if mistake.id.startswith("javascript") and not NODE:
        pytest.skip("node is not on PATH: JavaScript scorers are checked when it is")
    path = suite.path / mistake.file
    assert mistake.old in path.read_text()
    suite.commit(mistake.id, {mistake.file: path.read_text().replace(mistake.old, mistake.new)})
    file, needle = mistake.at
    line = line_of((suite.path / file).read_text(), needle)
    for command in (["validate", "."], ["run", ".", "--no-cache", "--no-history"]):
        found = problems(evalward(*command, cwd=suite.path, **provider_env(model)))
        assert len(found) == 1, (command, found)
        assert found[0].startswith(f"{file}:{line}:"), (command, found[0])
        assert found[0].endswith(mistake.said), (command, found[0])
    assert model.requests == []
    assert not list(suite.path.rglob("escaped.db"))


# --- a fixture that does not load: its cause first, then what it makes of the Eval ---------

TALK = """\
    user:
      persona: Dana, who answers only what she is asked.
      goal: Get her money back for order A-1042.
    maxTurns: 3
"""
UNLOADABLE = {
    "persona-misspelled": (TALK.replace("persona:", "persnoa:"), "persnoa:"),
    "no-goal": (TALK.replace("      goal: Get her money back for order A-1042.\n", ""), "user:"),
    "no-turns": (TALK.replace("maxTurns: 3", "maxTurns: 0"), "maxTurns: 0"),
    "empty-turn": ('    turns:\n      - user: ""\n', 'user: ""'),
    "unknown-type-on-a-turn": (
        "    turns:\n      - user: Hi\n        assertions: [{ type: containz, value: x }]\n",
        "type: containz",
    ),
}


@pytest.mark.parametrize("case", sorted(UNLOADABLE))
def test_a_fixture_that_does_not_load_is_told_cause_first_and_the_eval_points_at_it(
    suite: GitRepo, model: ScriptedModelServer, case: str
) -> None:
    talk, needle = UNLOADABLE[case]
    text = SUITE.replace(TALK, talk)
    suite.commit(case, {"evals/suite.yaml": text})
    cause = line_of(text, needle)
    for command in (["validate", "."], ["run", ".", "--no-cache", "--no-history"]):
        found = problems(evalward(*command, cwd=suite.path, **provider_env(model)))
        *causes, last = found
        assert causes and all(c.startswith("evals/suite.yaml:") for c in causes), found
        assert any(c.startswith(f"evals/suite.yaml:{cause}:") for c in causes), found
        assert last == (
            f"evals/suite.yaml:{line_of(text, 'fixtures: [refund, ')}:22: spec.fixtures[1]: "
            f"Eval 'support-sqlite' lists fixture 'refund-conversation', which is invalid: see "
            f"evals/suite.yaml:{min(int(c.split(':')[1]) for c in causes)}"
        ), found
        assert "not defined" not in "\n".join(found) and "did you mean" not in last
    assert model.requests == []


# --- state paths: what the seeds do not have is a warning that names the nearest -----------

DESK = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: desk }
spec:
  targetAgent: support
  fixtures: [desk-notes]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: desk-notes }
spec:
  targetAgent: support
  input: { type: prompt, payload: { prompt: "Note the refund of A-1042." } }
  playground:
    name: desk
    files: { seed: desk }
    sqlite: { seed: desk/ledger.yaml }
  assertions:
    - { type: fileState, path: notes/sumary.md, contains: A-1042 }
    - { type: fileState, path: out/report.md, contains: A-1042 }
    - { type: stateUnchanged, except: [db.ledgr, files.notes/summary.md, db.ledger.*.memo] }
    - { type: stateValue, at: dbs.ledger, exists: true }
"""
"""A playground of a folder and a YAML-seeded database: a file close to one of its seed's,
a table its seed does not make and a part the state does not have are warned about; a file
the agent will write (`out/report.md`) and what the seeds have are not."""
DESK_FILES = {
    "evals/desk.yaml": DESK,
    "desk/ledger.yaml": "ledger: [{ id: 1, order_id: A-1042, memo: opened }]\n",
    "desk/notes/summary.md": "Nothing refunded yet.\n",
}


def test_a_state_path_the_seeds_do_not_have_is_a_warning_with_the_nearest(
    suite: GitRepo, model: ScriptedModelServer
) -> None:
    text = SUITE.replace("db.orders.A-1042.status", "db.order.A-1042.statuz")
    service = SERVICE.replace("at: service.refunds,", "at: service.refundz,")
    changed = {"evals/suite.yaml": text, "evals/service.yaml": service, **DESK_FILES}
    suite.commit("typos in paths", changed)
    desk = [
        f"evals/desk.yaml:{line_of(DESK, 'notes/sumary.md')}:26: spec.assertions[0].path: "
        "`fileState` in playground 'desk': the files seed 'desk' holds no file "
        "'notes/sumary.md' (did you mean 'notes/summary.md'?)",
        f"evals/desk.yaml:{line_of(DESK, 'db.ledgr')}:40: spec.assertions[2].except[0]: "
        "`stateUnchanged` in playground 'desk': the seed 'desk/ledger.yaml' makes no table "
        "'ledgr' (did you mean 'ledger'?)",
        f"evals/desk.yaml:{line_of(DESK, 'dbs.ledger')}:27: spec.assertions[3].at: "
        "`stateValue` in playground 'desk': the playground's state has no 'dbs' (did you "
        "mean 'db'?): it holds db, files",
    ]
    for options in ([], ["--playgrounds"]):
        done = evalward("validate", ".", *options, cwd=suite.path)
        assert done.returncode == 0, done.stdout + done.stderr  # the run may make a path
        warnings = [x for x in done.stdout.splitlines() if x.startswith("warning: ")]
        told = "the state its service served" if options else "the service's seed 'crm/seed.json'"
        assert warnings == [
            *(f"warning: {w}" for w in desk),
            f"warning: evals/service.yaml:{line_of(service, 'service.refundz')}:27: "
            "spec.assertions[0].at: `stateValue` in playground 'crm': "
            f"{told} has no key 'refundz' (did you mean 'refunds'?)",
            f"warning: evals/suite.yaml:{line_of(text, 'db.order.')}:27: spec.assertions[1].at: "
            "`stateValue` in playground 'shop': the seed 'shop/seed.sql' makes no table "
            "'order' (did you mean 'orders'?)",
        ], done.stdout
    assert model.requests == []

    # a run finds them before the agent is asked, goes on (it may make a path) and says them
    done = evalward(
        "run",
        ".",
        "--eval",
        "desk",
        "--no-cache",
        "--no-history",
        cwd=suite.path,
        **provider_env(model),
    )
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said
    for warning in desk:
        assert f"warning: {warning}" in said, said
    assert model.requests, said


def test_a_run_lists_a_bounded_number_of_warnings(
    suite: GitRepo, model: ScriptedModelServer
) -> None:
    """A pull request's thousand wrong paths do not crowd the comment out: a run lists the
    first ones and counts the rest."""
    paths = "".join(
        f"    - {{ type: stateValue, at: db.table{i}, exists: true }}\n" for i in range(25)
    )
    desk = DESK.split("  assertions:\n")[0] + "  assertions:\n" + paths
    suite.commit("many wrong paths", {**DESK_FILES, "evals/desk.yaml": desk})

    done = evalward(
        "run",
        ".",
        "--eval",
        "desk",
        "--no-cache",
        "--no-history",
        "--output-dir",
        "out",
        cwd=suite.path,
        **provider_env(model),
    )

    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    notes = json.loads((suite.path / "out" / "results.json").read_text())["notes"]
    warned = [n for n in notes if n.startswith("warning: ")]
    assert len(warned) == 21, notes
    assert all("makes no table 'table" in n for n in warned[:20]), warned
    assert warned[20] == "warning: 5 more such warnings (`evalward validate` lists them all)"
    assert "5 more such warnings" in done.stdout, done.stdout + done.stderr


# --- validate --playgrounds: each playground made once, without an agent or a model ---------

DEAF = "[sh, -c, \"echo 'crm: listening on 8080' >&2; exec sleep 120\"]"
"""A service that says it listens and never does: its words are on stderr at once (a shell's
echo), long before its readiness bound, however loaded the machine."""
BROKEN_SERVICES = {
    "exits-at-once": (
        '[python3, crm/server.py, --prot, "{port}", --seed, "{seed}"]',
        "",  # the default bound: it exits long before it
        "playground 'crm': the service exited with code 2 before /health answered: "
        "server.py: error: the following arguments are required: --port",
    ),
    "state-unreadable": (
        '[python3, crm/server.py, --port, "{port}", --seed, "{seed}"]',
        "\n      state: /stat",  # a typo of /state: the run could not read what it did
        "playground 'crm': its state endpoint /stat answered HTTP 404",
    ),
    "never-ready": (
        DEAF,
        "\n      readyTimeoutSeconds: 3",
        "playground 'crm': the service did not answer /health within 3 s "
        "(service.readyTimeoutSeconds): crm: listening on 8080",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN_SERVICES))
def test_validate_playgrounds_says_why_a_service_cannot_be_made_at_its_line(
    suite: GitRepo, model: ScriptedModelServer, case: str
) -> None:
    start, bound, said = BROKEN_SERVICES[case]
    service = SERVICE.replace(
        '[python3, crm/server.py, --port, "{port}", --seed, "{seed}"]', start
    ).replace("ready: /health", "ready: /health" + bound)
    suite.commit(case, {"evals/service.yaml": service})
    assert evalward("validate", ".", cwd=suite.path).returncode == 0  # it takes a run to see

    found = problems(evalward("validate", ".", "--playgrounds", cwd=suite.path))

    assert found == [  # the problem first, what was provisioned after it
        f"evals/service.yaml:{line_of(service, 'playground:')}:3: spec.playground: {said}",
        "1 of 2 playgrounds provisioned and torn down",
    ]
    assert model.requests == []


# --- docs/getting-started.md shows one of them, as validate says it ---------------------------


def test_the_mistake_getting_started_shows_is_what_validate_and_run_say(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    page = (REPO_ROOT / "docs" / "getting-started.md").read_text()
    yaml_blocks = re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)
    files = {b.split("\n", 1)[0][2:]: b for b in yaml_blocks if re.match(r"# \S+\.yaml\n", b)}
    (mistake,) = [b for b in yaml_blocks if "# the last assertion of order-status" in b]
    fixture = files["evals/support-bot.yaml"]
    files["evals/support-bot.yaml"] = fixture.replace(
        "      minScore: 0.8\n", "      minScore: 0.8\n" + mistake, 1
    )
    shown = page.split("before its first model call (exit 2):\n\n```text\n", 1)[1].split("```")[0]
    repo.commit("the page's suite, with a mistake", {**files, "prompts/support-bot.md": "Jane.\n"})
    for command in (["validate"], ["run", "--no-cache", "--no-history"]):
        done = evalward(*command, cwd=repo.path, **provider_env(model))
        assert done.returncode == 2 and done.stderr == shown, done.stdout + done.stderr
    assert model.requests == []


def test_a_seed_that_does_not_load_is_told_once_when_playgrounds_are_made(suite: GitRepo) -> None:
    """Provisioning finds it too, in the same words: the line that names its statement is
    the one told."""
    suite.commit("a typo", {"shop/seed.sql": SEED.replace("CREATE TABLE refunds", "CRATE TABLE x")})

    found = problems(evalward("validate", ".", "--playgrounds", cwd=suite.path))

    assert len(found) == 2 and found[0].endswith("(the statement at shop/seed.sql:2)"), found
    assert found[1] == "1 of 2 playgrounds provisioned and torn down"


YAML_SEED = """\
orders:
  - { id: A-1042, amount: 25.0, status: delivered }
  - { id: A-1043, amount: 12.5, status: shipped }
  - { id: A-1042, amount: 9.0, status: delivered }
refunds:
  - { id: 1, order_id: A-0001, amount: 5.0, reason: late }
"""


def test_a_row_a_yaml_seed_cannot_load_is_told_at_its_line(
    suite: GitRepo, model: ScriptedModelServer
) -> None:
    """A key given twice is the row's mistake: it was told at the seed's first line, which is
    every seed's."""
    eval_file = (suite.path / "evals/suite.yaml").read_text()
    suite.commit(
        "a YAML seed",
        {
            "evals/suite.yaml": eval_file.replace("shop/seed.sql", "shop/seed.yaml"),
            "shop/seed.yaml": YAML_SEED,
        },
    )
    line = line_of(YAML_SEED, "id: A-1042, amount: 9.0")
    for command in (["validate", "."], ["run", ".", "--no-cache", "--no-history"]):
        found = problems(evalward(*command, cwd=suite.path, **provider_env(model)))
        assert len(found) == 1, (command, found)
        assert found[0].endswith(
            "the seed 'shop/seed.yaml' does not load: UNIQUE constraint failed: orders.id "
            f"(the row at shop/seed.yaml:{line})"
        ), (command, found[0])
    assert model.requests == []


# --- validate --playgrounds: each code scorer run once on a sample of what it grades ---------

SCORER_MISTAKES = {
    # what the scorer says, the line's needle, refused (exit 2) or a warning, what is said
    "returns-a-string": (
        '        return "pass" if "refund" in said else "fail"\n',
        'return "pass" if',
        True,
        'gives no verdict: the scorer returned "fail"; expected true/false, a number, or '
        "{pass, score, reason}",
    ),
    "returns-nothing": (
        '        print("refund" in said)\n',
        'print("refund" in said)',
        True,
        "gives no verdict: the scorer returned null; expected true/false, a number, or "
        "{pass, score, reason}",
    ),
    "names-what-it-does-not-define": (
        '        return "refund" in sayd\n',
        "in sayd",
        True,
        "gives no verdict: the scorer failed: NameError: name 'sayd' is not defined "
        "(at evals/suite.yaml:{line})",
    ),
    "raises-on-the-sample": (
        '        return context["vars"]["order"] in said\n',
        '["order"]',
        False,
        "gives no verdict: the scorer failed: KeyError: 'order' (at evals/suite.yaml:{line}); "
        "a run whose output is like this sample is scored `error`",
    ),
}
GOOD_SCORER = '        return "refund" in said\n'


@pytest.mark.parametrize("case", sorted(SCORER_MISTAKES))
def test_validate_playgrounds_runs_each_code_scorer_once_and_says_what_it_gave(
    suite: GitRepo, model: ScriptedModelServer, case: str
) -> None:
    """A scorer that gives no verdict is found before a model is called, at the line of its
    assertion; only a failure no run's output could avoid is refused."""
    last, needle, refused, said = SCORER_MISTAKES[case]
    text = SUITE.replace(GOOD_SCORER, last)
    suite.commit(case, {"evals/suite.yaml": text})
    assert evalward("validate", ".", cwd=suite.path).returncode == 0  # it takes a run to see
    first = text.index("    - type: code")  # the Python scorer's, before the JavaScript one
    at = f"evals/suite.yaml:{text[:first].count(chr(10)) + 1}:7: spec.assertions[2]: "
    told = (
        f"{at}the Python scorer, run once on a sample run of fixture 'refund' (its input, the "
        f"final message {SAMPLE!r}), " + said.replace("{line}", str(line_of(text, needle)))
    )

    done = evalward("validate", ".", "--playgrounds", cwd=suite.path)

    if refused:
        assert problems(done) == [told, "2 of 2 playgrounds provisioned and torn down"]
        assert done.stdout == ""
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines() == [
            f"warning: {told}",
            "2 of 2 playgrounds provisioned and torn down",
            "1 agents, 3 fixtures, 2 evals OK",
        ]
    assert model.requests == []


SAMPLE = "Thank you for waiting. I have looked into it and done what you asked."


def test_a_file_scorer_in_either_language_that_answers_a_string_is_refused_at_its_line(
    suite: GitRepo,
) -> None:
    if not NODE:
        pytest.skip("node is not on PATH: the JavaScript scorer cannot run")
    suite.commit(
        "scorers that answer words",
        {
            "scorers/polite.py": "def get_assert(output, context):\n    return 'polite'\n",
            "scorers/kind.js": "module.exports = (output) => {\n  return 'kind';\n};",
        },
    )

    found = problems(evalward("validate", ".", "--playgrounds", cwd=suite.path))

    lines = [line_of(SUITE, "file: scorers/polite.py"), line_of(SUITE, "file: scorers/kind.js")]
    assert [f.split(": the ", 1)[0] for f in found[:2]] == [
        f"evals/suite.yaml:{lines[0]}:7: spec.assertions[4]",
        f"evals/suite.yaml:{lines[1]}:7: spec.assertions[5]",
    ], found
    assert found[0].endswith(
        'the scorer returned "polite"; expected true/false, a number, or {pass, score, reason}'
    ), found
    assert "the JavaScript scorer" in found[1] and 'returned "kind"' in found[1], found
    assert found[2:] == ["2 of 2 playgrounds provisioned and torn down"]


def test_a_scorer_that_does_not_compile_is_told_once(suite: GitRepo) -> None:
    suite.commit("a typo", {"scorers/polite.py": "def get_assert(output, context)\n    return 1\n"})

    found = problems(evalward("validate", ".", "--playgrounds", cwd=suite.path))

    assert len(found) == 2 and "does not compile" in found[0], found


# --- validate --playgrounds: paths against the state the playground was made in -------------


def test_a_path_the_provisioned_state_shows_wrong_is_a_warning_at_its_line(
    suite: GitRepo,
) -> None:
    """Below the top of the state: a record's key beside a close one, a path on through a
    text, a key of the seed's JSON file. The seeds alone do not tell them; a key with no
    near name is the run's to add."""
    service = SERVICE.replace(
        "    - { type: stateValue, at: service.refunds, contains: { order_id: A-1042 } }\n",
        "    - { type: stateValue, at: service.refunds, contains: { order_id: A-1042 } }\n"
        "    - { type: stateValue, at: service.orders.A-1042.statuz, equals: refunded }\n"
        "    - { type: stateValue, at: service.orders.A-1042.status.code, equals: 7 }\n"
        "    - { type: stateValue, at: service.orders.A-2000.status, equals: refunded }\n"
        "    - { type: stateUnchanged, except: [service.orders.*.status, service.refunds] }\n",
    )
    desk = DESK.split("  assertions:\n")[0] + (
        "  assertions:\n"
        "    - { type: stateValue, file: notes/limits.json, at: refund.maxAmout, equals: 50 }\n"
        "    - { type: stateValue, file: notes/limits.json, at: refund.maxAmount, equals: 50 }\n"
    )
    files = {
        "evals/service.yaml": service,
        **DESK_FILES,
        "evals/desk.yaml": desk,
        "desk/notes/limits.json": '{"refund": {"maxAmount": 50}}\n',
    }
    suite.commit("paths into the state", files)
    done = evalward("validate", ".", cwd=suite.path)
    assert done.returncode == 0 and "warning" not in done.stdout, done.stdout  # seeds alone

    done = evalward("validate", ".", "--playgrounds", cwd=suite.path)

    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [x for x in done.stdout.splitlines() if x.startswith("warning: ")]
    column = len(desk.split("at: refund.maxAmout")[0].rsplit("\n", 1)[1]) + 1
    assert warnings == [
        f"warning: evals/desk.yaml:{line_of(desk, 'maxAmout')}:{column}: spec.assertions[0].at: "
        "`stateValue` in playground 'desk': the file 'notes/limits.json' as the playground "
        "was provisioned has no key 'maxAmout' at 'refund' (did you mean 'maxAmount'?)",
        f"warning: evals/service.yaml:{line_of(service, 'statuz')}:27: spec.assertions[1].at: "
        "`stateValue` in playground 'crm': the provisioned state has no key 'statuz' at "
        "'service.orders.A-1042' (did you mean 'status'?)",
        f"warning: evals/service.yaml:{line_of(service, 'status.code')}:27: "
        "spec.assertions[2].at: `stateValue` in playground 'crm': the provisioned state holds "
        "\"delivered\" at 'service.orders.A-1042.status', which has no key 'code'",
    ], done.stdout
    assert done.stdout.splitlines()[-2:] == [
        "3 of 3 playgrounds provisioned and torn down",
        "1 agents, 4 fixtures, 3 evals OK",
    ]


# --- every problem leads the output; what was provisioned follows ------------------------------

LEADING = {
    "seed-missing": ("evals/suite.yaml", "sqlite: { seed: shop/seed.sql }", "shop/nope.sql"),
    "service-exits": (
        "evals/service.yaml",
        '[python3, crm/server.py, --port, "{port}", --seed, "{seed}"]',
        '[python3, crm/server.py, --prot, "{port}", --seed, "{seed}"]',
    ),
    "judge-without-model": (
        "evals/suite.yaml",
        "    - { type: code, file: scorers/polite.py }\n",
        "    - { type: code, file: scorers/polite.py }\n"
        "    - { type: judge, rubric: The reply is polite. }\n",
    ),
}


@pytest.mark.parametrize("case", sorted(LEADING))
def test_problems_lead_what_validate_playgrounds_says(suite: GitRepo, case: str) -> None:
    file, old, new = LEADING[case]
    path = suite.path / file
    if case == "seed-missing":
        new = old.replace("shop/seed.sql", new)
    suite.commit(case, {file: path.read_text().replace(old, new)})

    done = evalward("validate", ".", "--playgrounds", cwd=suite.path)

    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    said = done.stderr.splitlines()
    assert said[0] == "evalward: 1 problem in evalward resources:", said
    assert said[1].startswith(f"evalward:   {file}:"), said
    summary = r"evalward: \d of \d playgrounds provisioned and torn down"
    assert len(said) == 3 and re.fullmatch(summary, said[-1]), said
