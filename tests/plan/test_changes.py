"""Change detection on real git repositories: what a diff marks changed, and what it doesn't."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.errors import ConfigError
from evalward.git import Git
from evalward.plan.changes import ChangeSet, detect_changes
from evalward.plan.plan import build_plan, gate_resources
from evalward.rundata.sides import GateConfig
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: {name} }}
spec:
  models: [openai/gpt-test]
  {system}
  watch: {watch}
"""

EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: {name}-eval }}
spec:
  targetAgent: {name}
  fixtureSelector: {{ matchLabels: {{ agent: {name} }} }}
  scoring: {{ passThreshold: {threshold} }}
"""

FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {fixture}, labels: {{ agent: {name} }} }}
spec:
  targetAgent: {name}
  input: {{ type: prompt, payload: {{ prompt: hello }} }}
  assertions:
    - {{ type: contains, value: {value} }}
"""


def agent(name: str, system: str = "system: Be helpful.", watch: str = "[]") -> str:
    return AGENT.format(name=name, system=system, watch=watch)


def base_repo(repo: GitRepo) -> str:
    return repo.commit(
        "base",
        {
            "agents/alpha.yaml": agent("alpha"),
            "agents/beta.yaml": agent(
                "beta", system="systemFile: /prompts/beta.md", watch="[tools/beta/*]"
            ),
            "prompts/beta.md": "You are beta.",
            "tools/beta/lookup.py": "print('v1')",
            "evals/alpha.yaml": EVAL.format(name="alpha", threshold=0.9),
            "evals/beta.yaml": EVAL.format(name="beta", threshold=0.9),
            "evals/fixtures/alpha-1.yaml": FIXTURE.format(
                fixture="alpha-1", name="alpha", value="hi"
            ),
            "evals/fixtures/beta-1.yaml": FIXTURE.format(fixture="beta-1", name="beta", value="hi"),
        },
    )


def changes_between(repo: GitRepo, base: str) -> ChangeSet:
    git = Git(repo.path)
    head = load_resources(repo.path)
    with git.worktree(git.merge_base(base, "HEAD")) as base_root:
        base_set = load_resources(base_root)
        return detect_changes(git.changed_files(base, "HEAD"), head, base_set)


def test_reformatting_and_comments_are_no_semantic_change(repo: GitRepo) -> None:
    base = base_repo(repo)
    repo.branch("pr")
    repo.commit(
        "reformat",
        {
            "agents/alpha.yaml": "# the alpha agent\n"
            + agent("alpha").replace("[openai/gpt-test]", "\n    - openai/gpt-test")
        },
    )
    changes = changes_between(repo, base)
    assert changes.changed_agents == {}
    assert changes.cosmetic_agents == ["alpha"]
    assert changes.affected_evals == {}


def test_a_renamed_file_with_the_same_agent_is_not_a_change(repo: GitRepo) -> None:
    base = base_repo(repo)
    repo.branch("pr")
    repo.git("mv", "agents/alpha.yaml", "agents/renamed-alpha.yaml")
    repo.commit("rename")
    changes = changes_between(repo, base)
    assert changes.changed_agents == {}
    assert changes.cosmetic_agents == ["alpha"]


def test_a_deleted_agent_and_its_eval_are_reported_as_removed(repo: GitRepo) -> None:
    base = base_repo(repo)
    repo.branch("pr")
    repo.remove("agents/alpha.yaml", "evals/alpha.yaml", "evals/fixtures/alpha-1.yaml")
    repo.commit("drop alpha")
    changes = changes_between(repo, base)
    assert changes.removed_agents == ["alpha"]
    assert changes.removed_evals == ["alpha-eval"]
    assert changes.affected_evals == {"alpha-eval": ["agent alpha was removed"]}
    assert "Eval alpha-eval removed" in changes.gate_changes


def not_run_between(repo: GitRepo, base: str) -> tuple[ChangeSet, dict[str, str]]:
    """The change from `base` to HEAD, and the Evals its plan (the base's gate) cannot run."""
    git = Git(repo.path)
    head = load_resources(repo.path)
    with git.worktree(base) as base_root:
        base_set = load_resources(base_root)
        changes = detect_changes(git.changed_files(base, "HEAD"), head, base_set)
        plan = build_plan(changes, gate_resources(head, base_set, GateConfig.base), base_set)
    return changes, plan.not_run


def test_an_agent_renamed_in_its_file_is_renamed_where_its_old_name_is_kept_elsewhere(
    repo: GitRepo,
) -> None:
    base = base_repo(repo)
    repo.branch("pr")
    # git pairs agents/alpha.yaml with the file that now defines alpha-2; alpha's copy,
    # written on one line, is a new file
    repo.git("mv", "agents/alpha.yaml", "agents/alpha-2.yaml")
    repo.commit(
        "rename, keep a copy",
        {
            "agents/alpha-2.yaml": agent("alpha-2", system="system: Be brief."),
            "agents/old/alpha.yaml": "{ apiVersion: evalward.dev/v1, kind: Agent, "
            "metadata: { name: alpha }, spec: { models: [openai/gpt-test], "
            "system: Be helpful., watch: [] } }\n",
        },
    )
    changes, not_run = not_run_between(repo, base)
    assert ("agents/alpha.yaml", "agents/alpha-2.yaml") in {
        (c.old_path, c.path) for c in changes.changed_files
    }
    why = (
        "agent alpha's file agents/alpha.yaml now defines alpha-2, and alpha is defined in "
        "agents/old/alpha.yaml"
    )
    assert not_run == {"alpha-eval": why}
    assert changes.affected_evals == {"alpha-eval": [why]}
    assert changes.displaced_agents == {"alpha": why}
    assert changes.cosmetic_agents == []


def test_an_agent_the_base_had_elsewhere_taking_an_agent_s_file_is_its_rename(
    repo: GitRepo,
) -> None:
    # gamma, which no Eval targets, takes alpha's file with a new prompt; alpha's copy goes
    # where gamma was
    base = base_repo(repo)
    base = repo.commit("an agent with no Eval", {"agents/gamma.yaml": agent("gamma")})
    repo.branch("pr")
    repo.commit(
        "swap",
        {
            "agents/alpha.yaml": agent("gamma", system="system: Be brief."),
            "agents/gamma.yaml": agent("alpha"),
        },
    )
    changes, not_run = not_run_between(repo, base)
    why = (
        "agent alpha's file agents/alpha.yaml now defines gamma, and alpha is defined in "
        "agents/gamma.yaml"
    )
    assert not_run == {"alpha-eval": why}
    assert changes.displaced_agents["alpha"] == why


def test_two_agents_that_trade_files_unchanged_are_no_rename(repo: GitRepo) -> None:
    base = base_repo(repo)
    base = repo.commit("an agent with no Eval", {"agents/gamma.yaml": agent("gamma")})
    repo.branch("pr")
    repo.commit(
        "trade files", {"agents/alpha.yaml": agent("gamma"), "agents/gamma.yaml": agent("alpha")}
    )
    changes, not_run = not_run_between(repo, base)
    assert not_run == {}
    assert changes.displaced_agents == {} and changes.renamed_agents == {}


def test_a_new_agent_a_moved_agent_and_a_split_file_are_no_rename(repo: GitRepo) -> None:
    base = base_repo(repo)
    base = repo.commit(
        "two agents in one file", {"agents/pair.yaml": agent("gamma") + "---\n" + agent("delta")}
    )
    repo.branch("pr")
    repo.remove("agents/alpha.yaml")
    repo.commit(
        "add, move, split",
        {
            "agents/epsilon.yaml": agent("epsilon"),
            "agents/moved/alpha.yaml": agent("alpha"),
            "agents/pair.yaml": agent("gamma"),
            "agents/delta.yaml": agent("delta"),
        },
    )
    changes, not_run = not_run_between(repo, base)
    assert changes.displaced_agents == {} and changes.renamed_agents == {}
    assert changes.changed_agents == {"epsilon": ["new agent"]}
    assert sorted(changes.cosmetic_agents) == ["alpha", "delta", "gamma"]
    assert changes.affected_evals == {} and not_run == {}


def test_a_changed_system_file_or_watched_path_changes_the_agent(repo: GitRepo) -> None:
    base = base_repo(repo)
    repo.branch("pr")
    repo.commit("prompt", {"prompts/beta.md": "You are beta, now terse."})
    changes = changes_between(repo, base)
    assert changes.changed_agents == {"beta": ["prompts/beta.md changed"]}
    assert changes.affected_evals == {"beta-eval": ["agent beta changed"]}

    repo.commit("tool", {"tools/beta/lookup.py": "print('v2')"})
    changes = changes_between(repo, base)
    assert changes.changed_agents["beta"] == [
        "prompts/beta.md changed",
        "watched path tools/beta/lookup.py changed",
    ]


@pytest.mark.parametrize(
    "written",
    ["./tools/beta/*", "/tools/beta/*", "tools/beta/", "tools/beta", "tools//beta/*", ".", "./"],
)
def test_a_watch_written_from_the_root_or_as_a_folder_watches_the_files_it_means(
    repo: GitRepo, written: str
) -> None:
    """`./tools/**` and `/tools/**` (paths are from the root, with no `./`), and `tools/beta/`
    or `tools/beta` (a folder, which is no path of the tree), matched no path: the agent's
    code changed unseen and its Evals never ran, the plan saying no Eval was affected."""
    repo.commit(
        "base",
        {
            "agents/beta.yaml": agent("beta", watch=f"[{written!r}]".replace("'", '"')),
            "tools/beta/lookup.py": "print('v1')",
            "evals/beta.yaml": EVAL.format(name="beta", threshold=0.9),
            "evals/fixtures/beta-1.yaml": FIXTURE.format(fixture="beta-1", name="beta", value="hi"),
        },
    )
    repo.branch("pr")
    repo.commit("tool", {"tools/beta/lookup.py": "print('v2')"})

    planned = evalward("plan", ".", "--base", "main", "--json", cwd=repo.path)

    assert planned.returncode == 0, planned.stdout + planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["changedAgents"] == {"beta": ["watched path tools/beta/lookup.py changed"]}
    assert [row["name"] for row in plan["evals"]] == ["beta-eval"]


@pytest.mark.parametrize(
    ("written", "fix"),
    [
        (
            "../tools/beta/**",
            "a file outside the repository is never copied or hashed: commit what it reads "
            "inside the repository and watch it from the root",
        ),
        ("agents/../tools/beta/*", "write it from the repository root: 'tools/beta/*'"),
    ],
)
def test_a_watch_that_goes_up_a_folder_is_refused_at_its_line(
    repo: GitRepo, written: str, fix: str
) -> None:
    """A glob through `..` matches no path from the root: the tool it meant changed and the
    plan said no Eval was affected. It is refused where it is written, saying how to write it."""
    repo.commit(
        "base",
        {
            "agents/beta.yaml": agent("beta", watch=f"[{written!r}]".replace("'", '"')),
            "tools/beta/lookup.py": "print('v1')",
            "evals/beta.yaml": EVAL.format(name="beta", threshold=0.9),
            "evals/fixtures/beta-1.yaml": FIXTURE.format(fixture="beta-1", name="beta", value="hi"),
        },
    )
    repo.branch("pr")
    repo.commit("tool", {"tools/beta/lookup.py": "print('v2')"})

    planned = evalward("plan", ".", "--base", "main", "--json", cwd=repo.path)

    said = planned.stdout + planned.stderr
    assert planned.returncode == 2, said
    assert "Traceback" not in said
    assert (
        f"agents/beta.yaml:7:3: spec.watch: {written!r} goes up a folder (`..`), which no path "
        f"from the root does, so it matches no file; {fix}"
    ) in said, said


def test_a_watch_that_matches_no_file_is_warned_of_at_its_line(
    repo: GitRepo, env: dict[str, str]
) -> None:
    """A misspelt folder watched nothing: the tool it meant changed and the plan said no Eval
    was affected (exit 0), with no word of why. `validate` and every run of the agent's Evals
    say so at its line; it is not refused, as a glob may be meant for files to come."""
    repo.commit(
        "base",
        {
            "agents/beta.yaml": agent("beta", watch="[tols/beta/*]"),
            "tools/beta/lookup.py": "print('v1')",
            "evals/beta.yaml": EVAL.format(name="beta", threshold=0.9),
            "evals/fixtures/beta-1.yaml": FIXTURE.format(fixture="beta-1", name="beta", value="hi"),
        },
    )
    warning = (
        "warning: agents/beta.yaml:7:3: spec.watch: 'tols/beta/*' matches no file of the "
        "repository (paths are from its root), so a change to the files it means runs no "
        "Eval; fix the glob, or remove it"
    )

    validated = evalward("validate", ".", cwd=repo.path)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert warning in validated.stdout + validated.stderr, validated.stdout + validated.stderr

    ran = evalward("run", ".", "--no-cache", "--no-history", cwd=repo.path, **env)
    assert "Traceback" not in ran.stderr
    assert f"> {warning}" in ran.stdout, ran.stdout + ran.stderr

    # a file named as written is itself and every file below it: said once, as written
    named = agent("beta", watch="[tools/beta/lookup.py, tols]")
    repo.commit("a file and a folder", {"agents/beta.yaml": named})
    validated = evalward("validate", ".", cwd=repo.path)
    said = validated.stdout + validated.stderr
    assert said.count("matches no file") == 1, said
    assert "spec.watch: 'tols' matches no file" in said, said


def test_a_run_against_a_base_lists_the_head_s_watched_folder_once(
    repo: GitRepo, env: dict[str, str], tmp_path: Path
) -> None:
    """Change detection lists the folders an agent's `watch` names; the warning of a glob
    that matches nothing reads that listing rather than asking git again (two processes a
    side, at every gate and every attribution variant)."""
    base_repo(repo)
    repo.branch("change")
    repo.commit(
        "watch a misspelt folder too",
        {
            "agents/beta.yaml": agent(
                "beta", system="systemFile: /prompts/beta.md", watch="[tools/beta/*, tols/*]"
            ),
            "tools/beta/lookup.py": "print('v2')",
        },
    )
    real = shutil.which("git")
    assert real is not None
    folder, log = tmp_path / "bin", tmp_path / "git.log"
    folder.mkdir()
    (folder / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (folder / "git").chmod(0o755)

    ran = evalward(
        "run", ".", "--base", "main", "--no-cache", "--no-history",
        cwd=repo.path, PATH=f"{folder}{os.pathsep}{os.environ['PATH']}", **env,
    )  # fmt: skip

    assert "Traceback" not in ran.stderr, ran.stderr
    assert "spec.watch: 'tols/*' matches no file of the repository" in ran.stdout, ran.stdout
    asked = log.read_text().splitlines()
    head = f"-C {repo.path} ls-files -z --stage -- tols tools/beta"
    assert sum(line.endswith(head) for line in asked) == 1, asked


def test_a_gitattributes_above_the_files_an_agent_reads_changes_it(repo: GitRepo) -> None:
    """`.gitattributes` decides how files below it are checked out; alpha reads no file."""
    base = base_repo(repo)
    repo.branch("pr")
    repo.commit("docs only", {"docs/.gitattributes": "*.md eol=crlf\n"})
    assert changes_between(repo, base).changed_agents == {}

    repo.commit("tools", {"tools/.gitattributes": "*.py eol=crlf\n"})
    why = "tools/.gitattributes changed: it decides how the agent's files are checked out"
    assert changes_between(repo, base).changed_agents == {"beta": [why]}

    repo.commit("everything", {".gitattributes": "* ident\n"})
    assert list(changes_between(repo, base).changed_agents) == ["beta"]


def test_a_gitattributes_under_a_folder_a_watch_glob_reaches_through_a_wildcard(
    repo: GitRepo,
) -> None:
    base = repo.commit(
        "a monorepo agent",
        {
            "agents/gamma.yaml": agent("gamma", watch="[packages/*/src/**]"),
            "packages/core/src/app.py": "print('v1')",
            "evals/gamma.yaml": EVAL.format(name="gamma", threshold=0.9),
            "evals/fixtures/gamma-1.yaml": FIXTURE.format(
                fixture="gamma-1", name="gamma", value="hi"
            ),
        },
    )
    repo.branch("pr")
    repo.commit("attributes", {"packages/core/.gitattributes": "*.py ident\n"})
    why = "packages/core/.gitattributes changed: it decides how the agent's files are checked out"
    assert changes_between(repo, base).changed_agents == {"gamma": [why]}


def test_a_file_added_to_or_removed_from_a_folder_an_agent_names_changes_it(
    repo: GitRepo,
) -> None:
    """A folder a command line names is every file under it: one the head adds there or
    removes from it (in no listing of the head) changes the agent."""
    tool = "tools: [{ name: web, command: [npm, --prefix, agents/web, start] }]"
    base = repo.commit(
        "an agent whose tool runs the package in its folder",
        {
            "agents/delta.yaml": agent("delta", system=f"system: Hi.\n  {tool}"),
            "agents/web/package.json": "{}",
            "agents/web/lib/util.js": "// v1",
            "evals/delta.yaml": EVAL.format(name="delta", threshold=0.9),
            "evals/fixtures/delta-1.yaml": FIXTURE.format(
                fixture="delta-1", name="delta", value="hi"
            ),
        },
    )
    repo.branch("pr")
    repo.commit("add", {"agents/web/lib/more.js": "// new"})
    assert changes_between(repo, base).changed_agents == {
        "delta": ["agents/web/lib/more.js changed"]
    }
    repo.git("checkout", "-q", base, "--", ".")
    repo.remove("agents/web/lib/util.js", "agents/web/lib/more.js")
    repo.commit("remove")
    assert changes_between(repo, base).changed_agents == {
        "delta": ["agents/web/lib/util.js changed"]
    }


def test_a_model_change_names_the_field(repo: GitRepo) -> None:
    base = base_repo(repo)
    repo.branch("pr")
    repo.commit("model", {"agents/alpha.yaml": agent("alpha").replace("gpt-test", "gpt-next")})
    assert changes_between(repo, base).changed_agents == {
        "alpha": ["models changed in agents/alpha.yaml"]
    }


def test_changed_fixtures_and_evals_affect_their_evals(repo: GitRepo) -> None:
    base = base_repo(repo)
    repo.branch("pr")
    repo.commit(
        "weaken the gate",
        {
            "evals/alpha.yaml": EVAL.format(name="alpha", threshold=0.1),
            "evals/fixtures/beta-1.yaml": FIXTURE.format(fixture="beta-1", name="beta", value="x"),
            "evals/fixtures/beta-2.yaml": FIXTURE.format(fixture="beta-2", name="beta", value="y"),
        },
    )
    changes = changes_between(repo, base)
    assert changes.changed_agents == {}
    assert changes.affected_evals == {
        "alpha-eval": ["the Eval is changed"],
        "beta-eval": ["fixture beta-1 is changed", "fixture beta-2 is new"],
    }
    assert changes.gate_changes == [
        "fixture beta-1: spec.assertions changed",
        "Eval alpha-eval: spec.scoring.passThreshold changed",
    ]


def test_by_default_the_gate_comes_from_the_base_and_additions_count(repo: GitRepo) -> None:
    base = base_repo(repo)
    repo.branch("pr")
    repo.commit(
        "weaken and add",
        {
            "agents/alpha.yaml": agent("alpha", system="system: Be brief."),
            "evals/alpha.yaml": EVAL.format(name="alpha", threshold=0.1),
            "evals/fixtures/alpha-1.yaml": FIXTURE.format(
                fixture="alpha-1", name="alpha", value="weak"
            ),
            "evals/fixtures/alpha-2.yaml": FIXTURE.format(
                fixture="alpha-2", name="alpha", value="new"
            ),
        },
    )
    git = Git(repo.path)
    head = load_resources(repo.path)
    with git.worktree(base) as base_root:
        base_set = load_resources(base_root)
        changes = detect_changes(git.changed_files(base, "HEAD"), head, base_set)
        gate = gate_resources(head, base_set, GateConfig.base)
        # the base threshold and the base version of the edited fixture gate ...
        assert gate.evals["alpha-eval"].resource.spec.scoring.pass_threshold == 0.9
        assert gate.fixtures["alpha-1"].resource.spec.assertions[0].value == "hi"  # type: ignore[union-attr]
        # ... the agent under test comes from the head, and the added fixture runs too
        assert gate.agents["alpha"].resource.spec.system == "Be brief."
        plan = build_plan(changes, gate, base_set)
        head_runs = sorted((r.eval, r.fixture) for r in plan.runs if r.side == "head")
        assert head_runs == [("alpha-eval", "alpha-1"), ("alpha-eval", "alpha-2")]
        # with gate-config head, the PR's own definitions gate
        own = gate_resources(head, base_set, GateConfig.head)
        assert own.evals["alpha-eval"].resource.spec.scoring.pass_threshold == 0.1


def test_loading_only_the_changed_files_equals_a_full_load_of_the_base(repo: GitRepo) -> None:
    from evalward.definitions.loader import load_changed_resources

    base = base_repo(repo)
    repo.branch("pr")
    repo.git("mv", "evals/fixtures/alpha-1.yaml", "evals/fixtures/alpha-one.yaml")
    repo.remove("evals/beta.yaml")
    repo.commit(
        "edit, add, move, delete",
        {
            "agents/alpha.yaml": agent("alpha", system="system: Be brief."),
            "evals/fixtures/beta-1.yaml": FIXTURE.format(fixture="beta-1", name="beta", value="x"),
            "evals/fixtures/beta-2.yaml": FIXTURE.format(fixture="beta-2", name="beta", value="y"),
        },
    )
    # an uncommitted edit and an untracked file in the working tree count as changes too
    repo.write(
        {"evals/fixtures/alpha-2.yaml": FIXTURE.format(fixture="alpha-2", name="alpha", value="z")}
    )
    git = Git(repo.path)
    head = load_resources(repo.path)
    changed = git.changed_files(base, None)
    differs = {c.path for c in changed} | {c.old_path for c in changed if c.old_path}
    differs |= git.dirty_paths()
    assert "evals/fixtures/alpha-2.yaml" in differs
    with git.worktree(base) as base_root:
        full = load_resources(base_root)
        incremental = load_changed_resources(base_root, head, differs)
    for kind in ("agents", "fixtures", "evals", "calibrations"):
        mine, theirs = getattr(incremental, kind), getattr(full, kind)
        assert sorted(mine) == sorted(theirs), kind
        for name in theirs:
            assert mine[name].resource == theirs[name].resource
            assert (mine[name].file, mine[name].line) == (theirs[name].file, theirs[name].line)


SUITE = """\
execution: { target: alpha }
tests: ./cases/alpha.yaml
assertions:
  - { type: llm-grader, prompt: ./grader.yaml }
"""
CASES = """\
- id: hello
  input:
    - role: user
      content:
        - {{ type: file, value: /notes/{note} }}
  criteria: greets
"""


def test_a_file_whose_reads_changed_is_parsed_again_and_the_others_reused(
    repo: GitRepo,
) -> None:
    """Every kind of file an AgentV suite reads — its cases file (here behind a linked
    folder), a content part, a grader prompt — makes the unchanged suite load anew when it
    changes, and equal to a full load; a file it does not read leaves it reused."""
    import os

    from evalward.definitions.loader import load_changed_resources

    repo.write(
        {
            "agents/alpha.yaml": agent("alpha"),
            "evals/alpha.yaml": EVAL.format(name="alpha", threshold=0.9)
            + "  judge: { model: openai/judge-m }\n",
            "evals/suite.eval.yaml": SUITE,
            "evals/grader.yaml": "Rubric v1\n",
            "shared/alpha.yaml": CASES.format(note="a.md"),
            "notes/a.md": "note v1\n",
            "notes/b.md": "other\n",
        }
    )
    os.symlink("../shared", repo.path / "evals" / "cases")
    base = repo.commit("a suite")
    git = Git(repo.path)
    head = load_resources(repo.path)
    assert head.reads["evals/suite.eval.yaml"] >= {
        "evals/cases",
        "shared/alpha.yaml",
        "evals/grader.yaml",
        "notes/a.md",
    }
    for path, content in [
        ("shared/alpha.yaml", CASES.format(note="b.md")),
        ("notes/a.md", "note v2\n"),
        ("evals/grader.yaml", "Rubric v2\n"),
    ]:
        repo.write({path: content})
        edited = load_resources(repo.path)
        with git.worktree(base) as base_root:
            full = load_resources(base_root)
            again = load_changed_resources(base_root, edited, {path})
        assert again.fixtures["hello"].resource == full.fixtures["hello"].resource, path
        assert again.fixtures["hello"].resource != edited.fixtures["hello"].resource, path
        repo.git("checkout", "--", ".")
    unrelated = load_changed_resources(repo.path, head, {"notes/b.md"})
    assert unrelated.fixtures["hello"] is head.fixtures["hello"]


PROGRAM = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: gamma }
spec:
  runtime: { command: { run: [python3, agent.py] } }
"""
"""A program that names no `watch`: any file of the repository may change it."""


def _behind(
    repo: GitRepo, tip_files: dict[str, str], tip_links: dict[str, str] | None = None
) -> ChangeSet:
    """A pull request branched off `base_repo`'s commit (with notes and shared rules) that
    changes `docs/notes.md` and `shared/rules.md`, while the base branch committed
    `tip_files` (and symbolic links, `tip_links`: path -> target) since: its changes, with
    the base branch's definitions now gating."""
    base_repo(repo)
    base = repo.commit("notes and rules", {"docs/notes.md": "notes", "shared/rules.md": "Be."})
    repo.branch("pr")
    repo.commit("more", {"docs/notes.md": "more notes", "shared/rules.md": "Be terse."})
    git = Git(repo.path)
    repo.checkout("main")
    for path, target in (tip_links or {}).items():
        (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
        (repo.path / path).symlink_to(target)
    tip = repo.commit("the base branch moves on", tip_files)
    repo.checkout("pr")
    head = load_resources(repo.path)
    with git.worktree(base) as base_root, git.worktree(tip) as tip_root:
        return detect_changes(
            git.changed_files(base, "HEAD"),
            head,
            load_resources(base_root),
            load_resources(tip_root),
        )


@pytest.mark.parametrize(
    ("gamma", "hit"),
    [
        (agent("gamma", system="systemFile: /shared/rules.md"), "shared/rules.md"),
        (agent("gamma", watch="[shared/*]"), "shared/rules.md"),
        (PROGRAM, "docs/notes.md"),
    ],
    ids=["its prompt", "its watch", "a program that watches nothing"],
)
def test_a_file_an_agent_the_base_branch_added_since_reads_stops_the_change(
    repo: GitRepo, gamma: str, hit: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        _behind(repo, {"agents/gamma.yaml": gamma})
    assert str(refused.value).startswith(
        f"{hit}, which this change touches, is read by agent gamma as the base branch defines "
        "it now (agents/gamma.yaml), not as this branch does: the base branch added the agent"
    )


def test_a_file_an_agent_the_base_branch_added_since_reads_through_a_link_stops_the_change(
    repo: GitRepo,
) -> None:
    """The base branch's new agent names `prompts/gamma.md`, a link to the rules this change
    touches: what it reads is where the link leads in the base branch's tree."""
    gamma = agent("gamma", system="systemFile: /prompts/gamma.md")
    with pytest.raises(ConfigError) as refused:
        _behind(repo, {"agents/gamma.yaml": gamma}, {"prompts/gamma.md": "../shared/rules.md"})
    assert str(refused.value).startswith(
        "shared/rules.md, which this change touches, is read by agent gamma as the base "
        "branch defines it now (agents/gamma.yaml)"
    )


def test_control_what_the_base_branch_added_since_that_reads_none_of_it_is_no_matter(
    repo: GitRepo,
) -> None:
    """An agent added since that reads its own prompt, and a prompt of an agent changed
    since (its definition as it was): the change stands as it is."""
    changes = _behind(
        repo,
        {
            "agents/gamma.yaml": agent("gamma", system="systemFile: /prompts/gamma.md"),
            "prompts/gamma.md": "You are gamma.",
            "prompts/beta.md": "You are beta, now kind.",
        },
    )
    assert changes.changed_agents == {}
