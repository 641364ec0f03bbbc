"""Mistakes and mishaps met on a laptop, through the command line: each is said once on
stderr, naming the file or the setting, what is wrong and the fix that works there (not the
GitHub workflow's, unless the command runs in one)."""

from __future__ import annotations

import json
import subprocess

import pytest

from evalward.plan.prepare import BASE_FIRST
from support.clirun import evalward, initialised
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

MOCK = "evals/mock-replies.yaml"


@pytest.fixture
def started(repo: GitRepo) -> GitRepo:
    return initialised(repo)


def _said_once(stderr: str, words: str) -> str:
    """The one line of `stderr` that holds `words`."""
    (line,) = [line for line in stderr.splitlines() if words in line]
    return line


# --- the local run history ----------------------------------------------------------------


def test_a_history_file_that_is_not_json_is_set_aside_and_said_once(started: GitRepo) -> None:
    first = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)
    assert first.returncode == 0, first.stderr
    history = started.path / ".evalward" / "history" / "assistant-eval.json"
    history.write_text("garbage\n", encoding="utf-8")

    done = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)

    assert done.returncode == 0, done.stderr
    line = _said_once(done.stderr, ".unreadable")
    assert line == (
        f"evalward: {history}: not a history evalward can read (not JSON: Expecting value at "
        "line 1, column 1); set aside as assistant-eval.json.unreadable, and assistant-eval's "
        "history (its deltas, report.html's trend) starts again with this run"
    )
    aside = history.with_name("assistant-eval.json.unreadable")
    assert aside.read_text(encoding="utf-8") == "garbage\n"  # kept, not lost
    assert "assistant-eval (first run)" in done.stdout
    assert json.loads(history.read_text(encoding="utf-8"))["name"] == "assistant-eval"


def test_a_history_of_another_shape_is_said_to_be_one(started: GitRepo) -> None:
    history = started.path / ".evalward" / "history" / "assistant-eval.json"
    history.parent.mkdir(parents=True)
    history.write_text('{"name": "assistant-eval", "history": {}}', encoding="utf-8")

    done = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)

    assert done.returncode == 0, done.stderr
    line = _said_once(done.stderr, ".unreadable")
    assert "(JSON, but no `history` list); set aside as assistant-eval.json.unreadable" in line


@pytest.mark.parametrize("fixture", [["a"], {"a": 1}, 7], ids=["list", "object", "number"])
def test_a_history_whose_last_run_names_no_fixture_is_set_aside_and_the_run_reported(
    started: GitRepo, fixture: object
) -> None:
    """A hand-edited history whose last set's run names its fixture with no name costs the
    history alone: the run's files are written and it exits as its verdict says."""
    history = started.path / ".evalward" / "history" / "assistant-eval.json"
    history.parent.mkdir(parents=True)
    last = {"averageScores": {"score": 0.5}, "runs": [{"fixture": fixture}]}
    history.write_text(json.dumps({"name": "assistant-eval", "history": [last]}), "utf-8")

    done = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    line = _said_once(done.stderr, ".unreadable")
    assert "a run whose `fixture` is not a name); set aside as" in line
    assert (started.path / "out" / "results.json").is_file()


# --- evalward status on a status file it cannot read ----------------------------------------


@pytest.mark.parametrize(
    ("store", "fix"),
    [
        (
            ".evalward/status",
            "delete it, or let the next `evalward run` of that Eval write it anew (one without "
            "--no-history, --fixture or --reps)",
        ),
        (
            ".evalward/cache/status",
            "delete it, or restore the action's cache again after its next push to the default "
            "branch or `schedule` run, which writes it anew",
        ),
    ],
)
def test_status_says_a_status_file_is_not_json_where_and_what_to_do(
    started: GitRepo, store: str, fix: str
) -> None:
    path = started.path / store / "assistant-eval.json"
    path.parent.mkdir(parents=True)
    path.write_text("{\n", encoding="utf-8")

    done = evalward("status", cwd=started.path)

    assert done.returncode == 0, done.stderr
    assert "validation error" not in done.stderr
    assert _said_once(done.stderr, str(path)) == (
        f"evalward: {path}: ignored (not JSON: Expecting property name enclosed in double "
        f"quotes at line 2, column 1); {fix}"
    )


def test_status_of_a_cache_folder_that_is_not_there_says_so(started: GitRepo) -> None:
    """Not the local runs' status in its place, with a last line alone to tell."""
    done = evalward("status", "--cache-dir", "restored-cache", cwd=started.path)

    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "evalward: --cache-dir restored-cache: no such folder, so there is no status of the "
        "default branch to read"
    ) in done.stderr
    assert evalward("status", cwd=started.path).returncode == 0  # the default: none yet


def test_status_names_the_field_of_a_status_file_of_another_shape(started: GitRepo) -> None:
    path = started.path / ".evalward" / "status" / "assistant-eval.json"
    path.parent.mkdir(parents=True)
    document = {"schemaVersion": 1, "name": "assistant-eval", "totalFixtures": "many"}
    path.write_text(json.dumps(document), encoding="utf-8")

    done = evalward("status", cwd=started.path)

    assert done.returncode == 0, done.stderr
    line = _said_once(done.stderr, str(path))
    assert "ignored (JSON, but not an Eval status: totalFixtures: input should be a valid " in line
    assert "validation error" not in line


def test_the_next_local_run_writes_an_ignored_status_file_anew(started: GitRepo) -> None:
    path = started.path / ".evalward" / "status" / "assistant-eval.json"
    path.parent.mkdir(parents=True)
    path.write_text("{\n", encoding="utf-8")

    done = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)

    assert done.returncode == 0, done.stderr
    assert json.loads(path.read_text(encoding="utf-8"))["lastResult"] == "Pass"  # as docs say


def test_a_file_where_the_status_folder_goes_is_said_with_the_fix_a_laptop_has(
    started: GitRepo,
) -> None:
    """Not the action's: its advice was to point the cache elsewhere, a setting `evalward
    run` does not have."""
    stray = started.path / ".evalward" / "status"
    stray.parent.mkdir()
    stray.write_text("mine\n", encoding="utf-8")
    fix = "move the file away or delete it (the folder is made when missing)"

    ran = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)
    shown = evalward("status", "--local", cwd=started.path)

    assert ran.returncode == 0, ran.stderr
    assert _said_once(ran.stderr, "status was not written") == (
        "evalward: the Evals' status was not written: .evalward/status is a file, where "
        f"evalward keeps the Evals' status (.evalward/status) in a folder; {fix}"
    )
    assert _said_once(shown.stderr, "not read") == (
        "evalward: .evalward/status not read: .evalward/status is a file, where evalward keeps "
        f"local runs' status (.evalward/status) in a folder; {fix}"
    )
    assert stray.read_text(encoding="utf-8") == "mine\n"


# --- --base in a clone whose history is cut short -------------------------------------------


def _shallow_clone(started: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    """A clone of `started`'s branch `feature` (two commits past main) one commit deep, with
    main fetched one commit deep too: where they meet is not in it."""
    started.branch("feature")
    started.commit("more", {"prompts/more.md": "more\n"})
    started.commit("more still", {"prompts/more.md": "more still\n"})
    started.checkout("main")
    clone = tmp_path_factory.mktemp("shallow") / "clone"
    source = f"file://{started.path}"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--branch", "feature", source, str(clone)],
        check=True,
    )
    shallow = GitRepo(clone)  # (re-initialising a clone keeps it as it is)
    shallow.git("fetch", "-q", "--depth", "1", "origin", "main:main")
    return shallow


def test_base_in_a_shallow_clone_says_to_fetch_the_history_here(
    started: GitRepo, tmp_path_factory: pytest.TempPathFactory
) -> None:
    shallow = _shallow_clone(started, tmp_path_factory)

    done = evalward(
        "run", "--base", "main", "--mock-script", MOCK, "--output-dir", "out", cwd=shallow.path
    )

    assert done.returncode == 3, done.stderr
    line = _said_once(done.stderr, "--base main")
    assert line.startswith(
        f"evalward: --base main: no merge base between main and HEAD: {shallow.path} is a "
        "shallow clone, and the history where they meet was not fetched. Fetch it with "
        "`git fetch --unshallow`"
    )
    assert line.endswith(
        "in a GitHub workflow, check out with `actions/checkout`'s `fetch-depth: 0`"
    )

    shallow.git("fetch", "-q", "--unshallow")  # what it said to do
    assert evalward("plan", "--base", "main", cwd=shallow.path).returncode == 0


def test_base_with_no_commit_in_common_is_a_mistake_in_the_command(started: GitRepo) -> None:
    started.git("checkout", "-q", "--orphan", "lone")
    started.commit("a history of its own")

    done = evalward("plan", "--base", "main", cwd=started.path)

    assert done.returncode == 2, done.stderr
    assert _said_once(done.stderr, "--base main") == (
        "evalward: --base main: main and HEAD have no commit in common (unrelated histories), "
        "so there is no merge base to compare with; give the branch HEAD was made from, or "
        "leave out --base to run every Eval"
    )


@pytest.mark.parametrize("base", ["main", "HEAD", "refs/heads/main"])
def test_base_that_is_a_branch_with_no_commit_yet_is_said_to_be_one(
    repo: GitRepo, base: str
) -> None:
    """A new repository's `main`, named by its name as by HEAD: the branch is there, only
    empty, so "no branch named main" would send the user looking for a typo."""
    assert evalward("init", cwd=repo.path).returncode == 0

    done = evalward("run", "--base", base, "--mock-script", MOCK, cwd=repo.path)

    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert _said_once(done.stderr, f"--base {base}") == (
        f"evalward: --base {base}: the branch main has no commit yet (check out one that has, "
        "or commit first); give a branch, tag or commit it has (`git branch -a` lists the "
        "branches), or leave out --base to run every Eval"
    )


def test_a_branch_that_mends_a_broken_base_is_told_the_way_on(started: GitRepo) -> None:
    """The base branch's definitions gate, so a branch that mends them cannot be compared
    with it: said after the problems, with what works from here, and that does work."""
    evals = started.path / "evals" / "assistant.yaml"
    good = evals.read_text(encoding="utf-8")
    started.commit("A broken Eval", {"evals/assistant.yaml": good + "  oops: [\n"})
    started.branch("mend")
    started.commit("Mend the Eval", {"evals/assistant.yaml": good})

    done = evalward("run", "--base", "main", "--mock-script", MOCK, cwd=started.path)

    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("evalward: 1 problem in evalward resources of the base branch")
    assert lines[1].startswith("evalward:   evals/assistant.yaml:")
    assert lines[2:] == [
        f"evalward: {BASE_FIRST}, or leave out --base to check this branch alone (every Eval, "
        "no baseline)."
    ]
    alone = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)
    assert alone.returncode == 0, alone.stderr


def test_a_seed_the_branch_commits_for_the_base_s_playground_says_to_land_it_there_first(
    started: GitRepo,
) -> None:
    """The base branch's playground is made from its own tree, so a seed only the branch
    commits is missing there: said as that, not as a file to commit (it is committed)."""
    evals = started.path / "evals" / "assistant.yaml"
    seeded = evals.read_text(encoding="utf-8").replace(
        "  targetAgent: assistant\n  fixtureSelector",
        "  targetAgent: assistant\n  playground: { files: { seed: world/files } }\n"
        "  fixtureSelector",
        1,
    )
    started.commit("A playground", {"evals/assistant.yaml": seeded})
    started.branch("seed")
    prompt = (started.path / "prompts" / "assistant.md").read_text(encoding="utf-8")
    started.commit(
        "Its seed", {"world/files/a.txt": "a\n", "prompts/assistant.md": prompt + "Be brief.\n"}
    )

    done = evalward("run", "--base", "main", "--mock-script", MOCK, cwd=started.path)

    assert done.returncode == 2, done.stderr
    line = _said_once(done.stderr, "spec.playground.files.seed")
    assert "the seed 'world/files' is committed on this branch but not on the base branch" in line
    assert line.endswith("commit the seed to the base branch first"), line
    assert "commit it, or name a committed file" not in line


# --- a provider key that is not there -------------------------------------------------------


LOCAL_FIX = (
    "Set it in this shell (`export OPENAI_API_KEY=…`); or run with `--mock-script FILE`, which "
    "answers every model call from a script (no key, no network; `evalward init` writes one, "
    "evals/mock-replies.yaml); or set OPENAI_BASE_URL to a server that needs no key."
)
WORKFLOW_FIX = (
    "Add it to the workflow step's `env:` from a secret (secrets are not passed to workflows "
    "from forks); or set OPENAI_BASE_URL to a server that needs no key."
)


@pytest.mark.parametrize(
    ("env", "state", "fix"),
    [
        ({}, "is not set", LOCAL_FIX),
        ({"OPENAI_API_KEY": ""}, "is empty", LOCAL_FIX),
        ({"OPENAI_API_KEY": "", "GITHUB_ACTIONS": "true"}, "is empty", WORKFLOW_FIX),
    ],
    ids=["unset", "empty", "empty-in-a-workflow"],
)
def test_a_missing_key_says_how_to_give_one_where_the_command_runs(
    started: GitRepo, env: dict[str, str], state: str, fix: str
) -> None:
    done = evalward("run", "--no-cache", "--output-dir", "out", cwd=started.path, **env)

    assert done.returncode == 2, done.stderr
    line = _said_once(done.stderr, "needs OPENAI_API_KEY")
    assert line.endswith(
        f"model 'openai/gpt-4.1-mini' needs OPENAI_API_KEY, which {state}. {fix}"
    ), line
    assert "Traceback" not in done.stderr
