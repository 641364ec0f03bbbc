"""Files under a root that evalward does not read as definitions are refused, never passed
over: a symbolic link to a folder whose files no root holds (git keeps the link, not those
files) when a file under it is evalward's, a file named `*.YAML` or `*.YML` that holds a
document of evalward's, a `*.json` file that declares one, and a document whose
`apiVersion` or `kind` is written in other case. The same on the working tree (`evalward
validate`, `evalward run`) and on a commit (the action)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from evalward.definitions.loader import MAX_DEFINITION_BYTES
from evalward.resources.reading.discover import LINKED_WALK
from evalward.resources.reading.yamlsource import MAX_FILE_BYTES
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, gate_pull_request
from support.clirun import evalward, initialised
from support.gitrepo import GitRepo
from support.suite import GREETING_FIXTURE, make_pr

pytestmark = pytest.mark.e2e

ROOTS = "roots: [agents, evals]\n"
PLANTED = GREETING_FIXTURE.replace("name: greeting", "name: planted")
LINKED = (
    "evals/shared: a symbolic link to the folder 'shared', which no root of evalward.yaml "
    "holds, and its file 'planted.yaml' is an evalward resource: evalward reads each file at "
    "its own path under `roots` (git keeps a link as a link), so none under it is read; list "
    "'shared' under `roots` in evalward.yaml, or move its files here in place of the link"
)


def _with_roots(repo: GitRepo, github: FakeGitHub) -> str:
    """make_pr's change on a repository whose evalward.yaml lists its roots: the head."""
    make_pr(repo, github)
    return repo.commit("roots", {"evalward.yaml": ROOTS})


def test_a_link_to_a_folder_no_root_holds_is_refused_by_validate_and_run(
    repo: GitRepo, github: FakeGitHub
) -> None:
    _with_roots(repo, github)
    repo.write({"shared/planted.yaml": PLANTED})
    os.symlink("../shared", repo.path / "evals" / "shared")
    repo.commit("fixtures shared through a link")

    for argv in (("validate",), ("run", "--no-history", "--no-cache")):
        done = evalward(*argv, cwd=repo.path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"evalward:   {LINKED}\n" in done.stderr
        assert "Traceback" not in done.stderr


def test_a_link_to_a_folder_outside_the_repository_is_refused(
    repo: GitRepo, github: FakeGitHub, tmp_path: Path
) -> None:
    _with_roots(repo, github)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "planted.yaml").write_text(PLANTED)
    os.symlink(outside, repo.path / "evals" / "elsewhere")
    repo.commit("fixtures from outside")

    done = evalward("validate", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        f"evals/elsewhere: a symbolic link to the folder '{outside}', outside the repository, "
        "and its file 'planted.yaml' is an evalward resource: evalward reads only the "
        "repository's own files, so none under it is read; move the files into the repository "
        "in place of the link"
    ) in done.stderr


@pytest.mark.parametrize("where", ["excluded", "node_modules", "outside", "rootless"])
def test_a_link_to_a_folder_of_no_resources_is_passed_over(
    repo: GitRepo, github: FakeGitHub, tmp_path: Path, where: str
) -> None:
    """Docs, a package's files: nothing under the link would be a definition, so nothing is
    lost (a committed link into node_modules failed every pull request of the branch)."""
    _with_roots(repo, github)
    config, target = {
        "excluded": ("exclude: ['vendor/**']\n", "../vendor/docs"),
        "node_modules": ("exclude: []\n", "../node_modules/pkg"),
        "outside": (ROOTS, str(tmp_path / "outside")),
        "rootless": (ROOTS, "../vendor/docs"),
    }[where]
    folder = (repo.path / "evals" / target).resolve()
    repo.write({"evalward.yaml": config})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "readme.md").write_text("# docs\n")
    (folder / "config.yaml").write_text("kind: Deployment\nspec: {replicas: 1}\n")  # not ours
    os.symlink(target, repo.path / "evals" / "vendor-docs")
    repo.commit("docs linked in", {})

    done = evalward("validate", cwd=repo.path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "vendor-docs" not in done.stdout + done.stderr


@pytest.mark.parametrize("exclude", ["vendor/**", "node_modules"])
def test_a_link_to_an_excluded_folder_that_holds_a_resource_is_refused_naming_the_exclude(
    repo: GitRepo, github: FakeGitHub, exclude: str
) -> None:
    _with_roots(repo, github)
    folder = "vendor/docs" if exclude == "vendor/**" else "node_modules/pkg"
    config = f"exclude: ['{exclude}']\n" if exclude == "vendor/**" else "exclude: []\n"
    repo.write({"evalward.yaml": config, f"{folder}/readme.md": "# docs\n"})
    repo.write({f"{folder}/deep/planted.yaml": PLANTED})
    os.symlink(f"../{folder}", repo.path / "evals" / "vendor-docs")
    repo.commit("fixtures linked in from an excluded folder", {})

    done = evalward("validate", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    if exclude == "vendor/**":
        said = (
            "evals/vendor-docs: a symbolic link to the folder 'vendor/docs', which `exclude` in "
            "evalward.yaml leaves out ('vendor/**'), and its file 'deep/planted.yaml' is an "
            "evalward resource: git keeps a link as a link, so none under it is read; narrow "
            "`exclude` so that it leaves 'vendor/docs' in, or move its files here in place of "
            "the link"
        )
    else:
        said = (
            "evals/vendor-docs: a symbolic link to the folder 'node_modules/pkg', under "
            "'node_modules', which evalward never reads, and its file 'deep/planted.yaml' is an "
            "evalward resource"
        )
    assert said in done.stderr
    assert "Traceback" not in done.stderr


def test_a_link_to_a_folder_the_roots_hold_is_read_at_its_own_path(
    repo: GitRepo, github: FakeGitHub
) -> None:
    _with_roots(repo, github)
    os.symlink("fixtures", repo.path / "evals" / "latest")
    repo.commit("a name for the latest fixtures")

    done = evalward("validate", cwd=repo.path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 agents, 3 fixtures, 2 evals OK" in done.stdout


def test_the_gate_refuses_a_pull_request_that_links_a_folder_in(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = _with_roots(repo, github)
    repo.write({"shared/planted.yaml": PLANTED})
    os.symlink("../shared", repo.path / "evals" / "shared")
    head = repo.commit("fixtures shared through a link")

    run = gate_pull_request(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    assert LINKED in run.stderr
    assert run.outputs["result"] == "fail"


def test_a_resource_in_a_linked_folder_s_node_modules_is_passed_over_on_both_sides(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A package's copy of a resource, in `node_modules` under a linked folder: the look never
    enters a built-in exclude, on the working tree (`validate`) as on the commit (the gate),
    so neither refuses the link for it."""
    base = _with_roots(repo, github)
    repo.write({"shared/readme.md": "# shared\n", "shared/node_modules/pkg/planted.yaml": PLANTED})
    os.symlink("../shared", repo.path / "evals" / "shared")
    head = repo.commit("docs shared through a link")

    done = evalward("validate", cwd=repo.path)
    run = gate_pull_request(repo, github, base, head, env)

    assert done.returncode == 0, done.stdout + done.stderr
    said = _gate_said(run, github)
    assert "planted" not in said and "symbolic link" not in said, said
    assert run.returncode == 0, said


def test_the_look_into_a_linked_folder_reads_no_more_than_a_load_does(
    repo: GitRepo, github: FakeGitHub, tmp_path: Path
) -> None:
    """The folder a link leads to on the working tree (`/`, a home folder) is looked into
    within a load's bounds, its bytes too: each YAML file read is parsed when it may be
    evalward's (seconds for one of 5 MiB), so a folder of such files read whole took hours.
    What lies past them is not looked at, and the link is passed over."""
    _with_roots(repo, github)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data-00.yaml").write_text("# not evalward's\n" + "x" * (MAX_FILE_BYTES - 64))
    for index in range(1, MAX_DEFINITION_BYTES // MAX_FILE_BYTES + 2):
        os.link(outside / "data-00.yaml", outside / f"data-{index:02d}.yaml")
    (outside / "planted.yaml").write_text(PLANTED)
    os.symlink(outside, repo.path / "evals" / "elsewhere")
    repo.commit("data from outside")

    done = evalward("validate", cwd=repo.path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "elsewhere" not in done.stdout + done.stderr


def _gate_said(run: ActionRun, github: FakeGitHub) -> str:
    """All a gate told: its output, its job summary and its pull request comments."""
    comments = "".join(c["body"] for c in github.comments_on(7))
    return run.stdout + run.stderr + run.summary + comments


@pytest.mark.hostile
@pytest.mark.parametrize("name", ["elsewhere", "elsewhere.yaml"])
def test_the_gate_reads_nothing_a_committed_link_out_of_the_repository_leads_to(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
    name: str,
) -> None:
    """A pull request's link to a folder of the runner (`/`, `/home/runner`) had the gate
    walk it and parse its YAML files, and name the first that was evalward's. The commit
    holds the link alone: it is passed over as any file that is not YAML, or, named as a
    resource file, refused as a resource that leads out, by what the link says, whatever is
    there. On the developer's own working tree, the folder is still looked into."""
    base = _with_roots(repo, github)
    outside = tmp_path / "runner-disk"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "planted.yaml").write_text(PLANTED)
    os.symlink(outside, repo.path / "evals" / name)
    head = repo.commit("a link to the runner's disk")

    run = gate_pull_request(repo, github, base, head, env)

    said = _gate_said(run, github)
    assert "planted" not in said and "deep" not in said, said
    assert "Traceback" not in said
    if name == "elsewhere":  # nothing the commit holds changed: no Eval is affected
        assert (run.returncode, run.outputs["result"]) == (0, "skipped"), said
        assert "no Eval is affected by this change" in run.stdout
    else:
        assert (run.returncode, run.outputs["result"]) == (2, "fail"), said
        assert (
            "evals/elsewhere.yaml: the file is a symbolic link to a file outside the "
            "repository; a resource must be a file of the repository"
        ) in run.stderr

    done = evalward("validate", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        f"evals/{name}: a symbolic link to the folder '{outside}', outside the repository, "
        "and its file 'deep/planted.yaml' is an evalward resource"
    ) in done.stderr


@pytest.mark.hostile
def test_the_gate_looks_into_a_linked_folder_of_the_repository_through_its_commit_alone(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    """A link to a folder no root holds is looked into for resources of the commit: a file
    there that is itself a link out of the repository is none, and what it leads to on the
    runner is not read (its being evalward's had the gate refuse, naming it)."""
    base = _with_roots(repo, github)
    outside = tmp_path / "runner-disk"
    outside.mkdir()
    (outside / "planted.yaml").write_text(PLANTED)
    repo.write({"shared/readme.md": "# shared\n"})
    os.symlink(outside / "planted.yaml", repo.path / "shared" / "planted.yaml")
    os.symlink("../shared", repo.path / "evals" / "shared")
    head = repo.commit("a shared folder")

    run = gate_pull_request(repo, github, base, head, env)

    said = _gate_said(run, github)
    assert "planted" not in said, said
    assert (run.returncode, run.outputs["result"]) == (0, "skipped"), said


@pytest.mark.hostile
def test_a_base_branch_s_link_out_of_the_repository_is_read_by_the_link_alone(
    repo: GitRepo, tmp_path: Path
) -> None:
    """`evalward run --base main` loads the base branch from its commit: a link it commits
    to a folder outside the repository holds none of its files, whatever that folder holds
    on this machine, so nothing under it is read, named or refused."""
    initialised(repo)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "planted.yaml").write_text(PLANTED)
    os.symlink(outside, repo.path / "evals" / "elsewhere")
    repo.commit("fixtures kept elsewhere")
    repo.branch("feature")
    repo.remove("evals/elsewhere")
    config = (repo.path / "evalward.yaml").read_text()
    repo.commit("no link", {"evalward.yaml": config + "# the base is loaded whole\n"})

    done = evalward("run", ".", "--base", "main", "--no-history", "--no-cache", cwd=repo.path)

    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "planted" not in said and "elsewhere" not in said, said
    assert "Traceback" not in said


def test_a_yaml_file_named_in_upper_case_is_refused_when_it_is_evalwards(
    repo: GitRepo, github: FakeGitHub
) -> None:
    _with_roots(repo, github)
    repo.commit(
        "an upper-case fixture and another tool's file",
        {
            "evals/Planted.YAML": PLANTED,
            "evals/Other.YML": "kind: Deployment\nspec: {replicas: [\n",  # not ours, broken
        },
    )

    done = evalward("validate", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "evals/Planted.YAML: evalward reads resources only from files named *.yaml or *.yml, "
        "in lower case; rename it to 'Planted.yaml'"
    ) in done.stderr
    assert "Other.YML" not in done.stderr


def test_apiversion_and_kind_written_in_other_case_are_told_their_spelling(
    repo: GitRepo, github: FakeGitHub
) -> None:
    """A document whose `apiVersion` or `kind` is written in other case: with both, no file
    under `agents` was evalward's and the fixture's agent was not defined; with one, the
    other was said to be missing."""
    _with_roots(repo, github)
    agent = (repo.path / "agents" / "math-tutor.yaml").read_text()
    repo.commit(
        "keys in other case",
        {
            "agents/support-bot.yaml": (repo.path / "agents" / "support-bot.yaml")
            .read_text()
            .replace("apiVersion:", "apiversion:")
            .replace("kind: Agent", "Kind: Agent"),
            "agents/math-tutor.yaml": agent.replace("apiVersion:", "APIVERSION:", 1),
        },
    )

    done = evalward("validate", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stderr.splitlines()
    assert said[1:4] == [
        "evalward:   agents/math-tutor.yaml:1:1: APIVERSION: unknown field 'APIVERSION' (did "
        "you mean 'apiVersion'?): keys are case-sensitive",
        "evalward:   agents/support-bot.yaml:1:1: apiversion: unknown field 'apiversion' (did "
        "you mean 'apiVersion'?): keys are case-sensitive",
        "evalward:   agents/support-bot.yaml:2:1: Kind: unknown field 'Kind' (did you mean "
        "'kind'?): keys are case-sensitive",
    ]
    assert "holds no evalward resource" not in done.stderr


@pytest.mark.hostile
def test_a_committed_linked_folder_is_looked_into_no_further_than_the_working_tree_s(
    repo: GitRepo,
) -> None:
    """The base branch links a folder evalward never reads (`node_modules`) that its commit
    fills with 100,000 files before an evalward resource: the commit's folder is looked into
    as far as the working tree's is (`LINKED_WALK`'s first entries), not listed and held
    whole (a pull request's folder of millions would take the runner's memory), and the
    link is passed over, as the working tree's look passes it over."""
    initialised(repo)
    repo.write({"node_modules/readme.txt": "a package\n", "node_modules/zz-planted.yaml": PLANTED})
    os.symlink("../node_modules", repo.path / "evals" / "vendored")
    repo.git("add", "-A")
    blob = repo.git("hash-object", "-w", "node_modules/readme.txt")
    fillers = [f"node_modules/f{index:06d}.txt" for index in range(LINKED_WALK.entries)]
    git = ["git", "-C", str(repo.path), "update-index"]
    listed = "".join(f"100644 {blob}\t{name}\n" for name in fillers)
    subprocess.run([*git, "--index-info"], input=listed, text=True, check=True)
    repo.git("commit", "-q", "-m", "vendored packages")
    # the commit's files, none of them written out: the working tree holds the readme alone
    hidden = "".join(f"{name}\0" for name in [*fillers, "node_modules/zz-planted.yaml"])
    subprocess.run([*git, "--skip-worktree", "-z", "--stdin"], input=hidden, text=True, check=True)
    (repo.path / "node_modules" / "zz-planted.yaml").unlink()
    repo.branch("feature")
    config = (repo.path / "evalward.yaml").read_text()
    repo.commit("a note", {"evalward.yaml": config + "# a note\n"})

    done = evalward("plan", ".", "--base", "main", cwd=repo.path)

    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "planted" not in said and "vendored" not in said, said


PLANTED_JSON = json.dumps(yaml.safe_load(PLANTED), indent=2) + "\n"
JSON_REFUSED = (
    "evals/Planted.json:2:3: a JSON file that declares an evalward resource (`apiVersion: "
    "evalward.dev/…`): evalward reads resources only from files named *.yaml or *.yml, so it "
    "is never read; rename it to 'Planted.yaml'"
)


def test_a_json_file_that_declares_a_resource_is_refused_naming_the_yaml_name(
    repo: GitRepo, github: FakeGitHub
) -> None:
    _with_roots(repo, github)
    repo.commit(
        "a fixture written as JSON, and other JSON files",
        {
            "evals/Planted.json": PLANTED_JSON,
            "evals/package.json": '{"homepage": "https://evalward.dev/docs", "kind": "Eval"}\n',
        },
    )
    assert PLANTED_JSON.splitlines()[1].startswith('  "apiVersion": "evalward.dev/v1"')

    for argv in (("validate",), ("run", "--no-history", "--no-cache")):
        done = evalward(*argv, cwd=repo.path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert JSON_REFUSED in done.stderr
        assert "package.json" not in done.stderr
        assert "Traceback" not in done.stderr
    (repo.path / "evals/Planted.json").rename(repo.path / "evals/Planted.yaml")
    renamed = evalward("validate", cwd=repo.path)
    assert renamed.returncode == 0, renamed.stderr


def test_the_gate_refuses_a_pull_request_that_adds_a_resource_as_json(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = _with_roots(repo, github)
    head = repo.commit("a fixture written as JSON", {"evals/Planted.json": PLANTED_JSON})

    run = gate_pull_request(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    assert JSON_REFUSED in run.stderr
    assert run.outputs["result"] == "fail"
