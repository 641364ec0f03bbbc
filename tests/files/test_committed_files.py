"""The one door to files a definition names (files/committed.py), on real repositories: a
commit's side reads git's objects only; the working tree reads what git would commit; a
working copy of a commit holds its files, with git's modes, and nothing else."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalward.cli import plan
from evalward.definitions.loader import load_resources
from evalward.errors import NotCommitted, ResourceError
from evalward.files.committed import RepoFiles
from evalward.files.trees import TreeBounds
from evalward.git import Git
from evalward.resources.reading.yamlsource import too_large
from evalward.runtime.isolation.checkout_copy import copy_side
from fakes.model_server import ScriptedModelServer, text
from support.clirun import evalward, in_process, quiet_host
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.integration


@pytest.fixture
def planted(repo: GitRepo) -> str:
    """A commit with a prompt, a link to it, a link out, an executable and a submodule; then,
    in the workspace only: an ignored 0600 file, an untracked file and a changed prompt."""
    repo.write(
        {
            ".gitignore": "gha-creds-*.json\n",
            "prompts/bot.md": "committed prompt",
            "tools/run.sh": "#!/bin/sh\n",
        }
    )
    (repo.path / "tools" / "run.sh").chmod(0o700)
    os.symlink("bot.md", repo.path / "prompts" / "current.md")
    os.symlink("../../etc/passwd", repo.path / "prompts" / "out.md")
    commit = repo.commit("prompts")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{commit},vendor/lib")
    repo.git("commit", "-q", "-m", "a submodule")
    commit = repo.head()
    (repo.path / "gha-creds-1.json").write_text("PRIVATE")
    (repo.path / "gha-creds-1.json").chmod(0o600)
    (repo.path / "notes.md").write_text("untracked")
    (repo.path / "prompts" / "bot.md").write_text("changed on disk")
    return commit


def test_a_commit_is_read_from_git_objects_only(repo: GitRepo, planted: str) -> None:
    files = RepoFiles.at_commit(Git(repo.path), planted)

    assert files.read("prompts/bot.md", 100) == b"committed prompt"
    assert files.read("/prompts/current.md", 100) == b"committed prompt"
    refused = {
        "gha-creds-1.json": "is not a file of commit",
        "notes.md": "is not a file of commit",
        "prompts/out.md": "leads out of the repository",
        "../outside": "leads out of the repository",
        "vendor/lib": "is a submodule",
        "vendor/lib/README.md": "is inside the submodule 'vendor/lib'",
        "prompts": "is a folder",
    }
    for path, reason in refused.items():
        with pytest.raises(NotCommitted) as caught:
            files.read(path, 100)
        assert caught.value.reason.startswith(reason), (path, caught.value.reason)
    with pytest.raises(NotCommitted, match="larger than 4 bytes"):
        files.read("prompts/bot.md", 4)


def test_many_files_of_a_commit_are_read_at_once_within_a_limit(
    repo: GitRepo, planted: str
) -> None:
    files = RepoFiles.at_commit(Git(repo.path), planted)
    asked = ["prompts/bot.md", "prompts/current.md", "tools/run.sh", "gha-creds-1.json"]
    asked += ["notes.md", "prompts/out.md", "vendor/lib", "prompts"]

    found = files.read_committed(asked, limit=12)

    assert set(found) == {"prompts/bot.md", "prompts/current.md", "tools/run.sh"}
    assert found["tools/run.sh"].content == b"#!/bin/sh\n"
    assert found["prompts/bot.md"].size == len("committed prompt")
    assert found["prompts/bot.md"].content is None  # larger than asked: not held
    assert files.starts(["prompts/current.md"], 9) == {"prompts/current.md": b"committed"}
    assert RepoFiles.working_tree(repo.path).read_committed(asked, limit=12) == {}


RESOURCE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: bot }}
spec:
  models: [openai/gpt-4.1-mini]
  system: "{system}"
"""


def test_definitions_of_a_commit_are_its_own_not_the_workspaces(repo: GitRepo) -> None:
    """What another step rewrote in the workspace is not the commit's definition; a committed
    file past the size bound is refused as it would be on disk."""
    huge = RESOURCE.format(system="x" * (5 * 1024 * 1024))
    commit = repo.commit(
        "an agent",
        {"agents/bot.yaml": RESOURCE.format(system="committed"), "agents/huge.yaml": huge},
    )
    (repo.path / "agents" / "bot.yaml").write_text(RESOURCE.format(system="rewritten"))
    (repo.path / "agents" / "huge.yaml").write_text("# small on disk\n")
    door = RepoFiles.at_commit(Git(repo.path), commit)

    with pytest.raises(ResourceError) as caught:
        load_resources(repo.path, door=door)
    (problem,) = caught.value.problems
    assert (problem.file, problem.message) == ("agents/huge.yaml", too_large(len(huge)))

    (repo.path / "agents" / "huge.yaml").unlink()
    loaded = load_resources(repo.path, door=RepoFiles.at_commit(Git(repo.path), commit))
    assert loaded.agents["bot"].resource.spec.system == "committed"


def test_the_working_tree_reads_what_git_would_commit(repo: GitRepo, planted: str) -> None:
    files = RepoFiles.working_tree(repo.path)

    assert files.read("prompts/bot.md", 100) == b"changed on disk"
    assert files.read("notes.md", 100) == b"untracked"
    with pytest.raises(NotCommitted, match="is ignored by git"):
        files.read("gha-creds-1.json", 100)
    with pytest.raises(NotCommitted, match="leads out of the repository"):
        files.read("prompts/out.md", 100)


def test_the_working_tree_says_why_a_link_to_nothing_or_a_submodule_s_file_is_not_read(
    repo: GitRepo,
) -> None:
    """Refused as a commit refuses them, each said as what it is: a link that loops (or
    leads to nothing) is no missing file, and a file inside a submodule's folder is not
    ignored by anything: no commit of this repository holds it."""
    first = repo.commit("a prompt", {"prompts/bot.md": "hi\n"})
    (repo.path / "prompts" / "a").symlink_to("b")
    (repo.path / "prompts" / "b").symlink_to("a")
    (repo.path / "prompts" / "gone").symlink_to("nothing-here")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{first},vendored")
    repo.git("commit", "-qm", "a submodule")
    (repo.path / "vendored").mkdir()
    (repo.path / "vendored" / "prompt.md").write_text("theirs\n")
    files = RepoFiles.working_tree(repo.path)

    for link in ("prompts/a", "prompts/gone"):
        with pytest.raises(NotCommitted, match="is a symbolic link that leads to nothing"):
            files.read(link, 100)
    with pytest.raises(NotCommitted, match="is inside the submodule 'vendored'"):
        files.read("vendored/prompt.md", 100)
    with pytest.raises(NotCommitted, match="does not exist"):
        files.read("prompts/missing.md", 100)


def _listing(tree: Path) -> dict[str, int]:
    found = {}
    for folder, dirs, names in os.walk(tree):
        for name in [*names, *dirs]:
            path = Path(folder) / name
            found[path.relative_to(tree).as_posix()] = path.lstat().st_mode
    return found


@pytest.mark.parametrize("reads", [None, ["prompts/current.md", "tools"]])
def test_a_copy_of_a_commit_holds_its_files_with_gits_modes(
    repo: GitRepo, planted: str, tmp_path: Path, reads: list[str] | None
) -> None:
    target = tmp_path / "copy"
    old = os.umask(0)  # git's modes, whatever evalward's umask
    try:
        copy_side(
            RepoFiles.at_commit(Git(repo.path), planted),
            repo.path,
            target,
            reads,
            frozenset({".gitignore"}),
            TreeBounds(),
        )
    finally:
        os.umask(old)

    listing = _listing(target)
    expected = {"prompts", "prompts/bot.md", "prompts/current.md", "tools", "tools/run.sh"}
    if reads is None:
        expected |= {"prompts/out.md"}
    assert set(listing) == expected
    assert (target / "prompts" / "bot.md").read_text() == "committed prompt"
    assert os.readlink(target / "prompts" / "current.md") == "bot.md"
    assert stat.S_IMODE(listing["prompts/bot.md"]) == 0o644
    assert stat.S_IMODE(listing["tools/run.sh"]) == 0o755
    assert stat.S_IMODE(listing["tools"]) == 0o755


def test_a_copy_of_the_working_tree_leaves_out_what_git_ignores(
    repo: GitRepo, planted: str, tmp_path: Path
) -> None:
    target = tmp_path / "copy"
    copy_side(
        RepoFiles.working_tree(repo.path),
        repo.path,
        target,
        None,
        frozenset({".git"}),
        TreeBounds(),
    )

    listing = _listing(target)
    assert "gha-creds-1.json" not in listing
    assert (target / "notes.md").read_text() == "untracked"


SEEDS = {
    ".gitignore": "*.log\n",
    "shop/seed.sql": "CREATE TABLE t (x);\n",
    "shop/files/readme.md": "hello\n",
    "shop/files/run.sh": "#!/bin/sh\n",
    "shop/files/a\nnewline.txt": "odd\n",
}
ODD = os.fsdecode(b"shop/files/caf\xe9.txt")  # not UTF-8


def _seeded(repo: GitRepo) -> str:
    repo.write(SEEDS)
    (repo.path / "shop" / "files" / "run.sh").chmod(0o755)
    (repo.path / ODD).write_bytes(b"latin\n")
    os.symlink("readme.md", repo.path / "shop" / "files" / "current.md")
    return repo.commit("seeds")


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_file_or_folder_has_the_same_key_on_a_commit_and_a_working_tree_holding_it(
    tmp_path: Path, object_format: str
) -> None:
    """A push's run keys a playground's seeds on its working tree, a pull request's base on
    its commit: the same content is the same key, and what git ignores is not in it."""
    where = tmp_path / "repo"
    subprocess.run(
        ["git", "init", "-q", f"--object-format={object_format}", str(where)], check=True
    )
    repo = GitRepo(where)
    commit = _seeded(repo)
    assert Git(repo.path).object_format() == object_format
    (repo.path / "shop" / "files" / "debug.log").write_text("ignored: never copied\n")
    on_commit = RepoFiles.at_commit(Git(repo.path), commit)
    on_disk = RepoFiles.working_tree(repo.path)

    for path in ("shop/seed.sql", "shop/files", "shop", "/shop/files/current.md", ODD):
        assert on_disk.digest(path) == on_commit.digest(path), path
        assert not on_disk.digest(path).startswith("missing"), path
    assert on_disk.digest("shop/seed.sql") != on_disk.digest("shop/files/readme.md")


@pytest.mark.parametrize(
    "change",
    ["edited", "untracked", "mode", "link", "removed"],
)
def test_what_the_working_tree_holds_beside_the_commit_never_has_the_commits_key(
    tmp_path: Path, change: str
) -> None:
    """A file another workflow step wrote or changed in the workspace is in the working
    tree's key as it is: a run that saw it never stands for the commit's result."""
    repo = GitRepo(tmp_path / "repo")
    commit = _seeded(repo)
    folder = repo.path / "shop" / "files"
    if change == "edited":
        (folder / "readme.md").write_text("hello, planted\n")
    elif change == "untracked":
        (folder / "extra.md").write_text("planted\n")
    elif change == "mode":
        (folder / "readme.md").chmod(0o755)
    elif change == "link":
        (folder / "current.md").unlink()
        os.symlink("run.sh", folder / "current.md")
    else:
        (folder / "run.sh").unlink()
    on_commit = RepoFiles.at_commit(Git(repo.path), commit)
    on_disk = RepoFiles.working_tree(repo.path)

    assert on_disk.digest("shop/files") != on_commit.digest("shop/files")
    assert on_disk.digest("shop/seed.sql") == on_commit.digest("shop/seed.sql")


def test_the_working_tree_answers_each_path_as_git_asked_about_it_alone(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The working tree asks git once about many files (the index read once, the paths it
    does not hold in one call): each answer is the one `git ls-files` gives for that path
    alone, whatever the path's bytes, ignored folders, tracked ignored files and nested
    repositories included."""
    repo.write(
        {
            ".gitignore": "*.secret\nbuild/\n",
            "prompts/bot.md": "tracked",
            "prompts/a\nnewline.md": "tracked, odd name",
            "-rf": "tracked, an option's name",
            "*.md": "tracked, a glob's name",
            "kept.secret": "tracked, though ignored",
        }
    )
    repo.git("add", "-A")
    repo.git("add", "-f", "kept.secret")
    repo.commit("tracked")
    odd = os.fsdecode(b"prompts/caf\xe9.md")
    (repo.path / odd).write_bytes(b"untracked, not UTF-8")
    repo.write(
        {
            "notes.md": "untracked",
            "gha-creds.secret": "untracked, ignored",
            "build/out.md": "inside an ignored folder",
            "build/deep/er.md": "deeper inside it",
        }
    )
    GitRepo(repo.path / "nested").commit("its own", {"inner.md": "another repository's"})
    asked = [
        "prompts/bot.md",
        "prompts/a\nnewline.md",
        "-rf",
        "*.md",
        "kept.secret",
        odd,
        "notes.md",
        "gha-creds.secret",
        "build/out.md",
        "build/deep/er.md",
        "nested/inner.md",
    ]
    git = Git(repo.path)
    alone = {path for path in asked if git.committable([path])}
    assert alone == {"prompts/bot.md", "prompts/a\nnewline.md", "-rf", "*.md", "kept.secret"} | {
        odd,
        "notes.md",
    }

    files = RepoFiles.working_tree(repo.path)
    files.prefetch(asked)
    assert {path for path in asked if files.is_file(path)} == alone
    assert files.definitions(asked) == alone
    assert {
        path for path in reversed(asked) if RepoFiles.working_tree(repo.path).is_file(path)
    } == (alone)


def _logging_git(tmp_path: Path) -> tuple[str, Path]:
    """A PATH whose `git` notes each of its runs in a log, then runs git."""
    real = shutil.which("git")
    assert real is not None
    folder, log = tmp_path / "bin", tmp_path / "git.log"
    folder.mkdir(parents=True)
    (folder / "git").write_text(f'#!/bin/sh\necho run >> "{log}"\nexec "{real}" "$@"\n')
    (folder / "git").chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}", log


AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: bot-{n} }}
spec:
  models: [openai/gpt-test]
  systemFile: prompts/bot-{n}.md
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: bot-{n}-eval }}
spec:
  targetAgent: bot-{n}
  fixtures: [hello-{n}]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: hello-{n} }}
spec:
  targetAgent: bot-{n}
  input: {{ type: prompt, payload: {{ prompt: "Say hello, {n}" }} }}
  assertions: [{{ type: contains, value: hello }}]
"""


@pytest.mark.parametrize("untracked", [False, True])
def test_a_run_asks_git_as_often_for_forty_agents_as_for_two(
    tmp_path: Path, model: ScriptedModelServer, untracked: bool
) -> None:
    """`evalward run --base main` checks every Agent's `systemFile` on the working tree: git
    is asked about them all at once, so launch does not pay a git process per file. With
    `untracked`, the pull request's prompts are not committed yet (asked in one call too)."""
    model.script("Say hello", text("hello"))
    runs = {}
    for agents in (2, 40):
        repo = GitRepo(tmp_path / f"repo-{agents}")
        repo.commit("agents", {"evals.yaml": "", "prompts/bot-0.md": "You greet."})
        repo.branch("change")
        suite = "---\n".join(AGENT.format(n=n) for n in range(agents))
        prompts = {f"prompts/bot-{n}.md": f"You greet, {n}." for n in range(agents)}
        repo.write({"evals.yaml": suite, **prompts})
        if not untracked:
            repo.commit("more agents")
        path, log = _logging_git(tmp_path / f"git-{agents}")
        done = evalward(
            "run", ".", "--base", "main", "--no-cache", "--no-history",
            cwd=repo.path, PATH=path, **provider_env(model),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"{agents}/{agents} fixtures pass on head" in done.stdout, done.stdout
        runs[agents] = len(log.read_text().splitlines())
    assert runs[40] == runs[2], runs


WATCHING = AGENT.replace(
    "  systemFile: prompts/bot-{n}.md\n",
    '  systemFile: prompts/bot-{n}.md\n  watch: ["src/pkg-{n}/**"]\n',
)
"""`AGENT`, watching a folder of code of its own."""


def _agents_on_main(tmp_path: Path, template: str, agents: int) -> tuple[GitRepo, dict[str, str]]:
    """`agents` of `template`, each with its code and its `systemFile`, committed on main and
    a branch `change` made from it; and each prompt made warmer, for the change to hold."""
    repo = GitRepo(tmp_path / f"repo-{agents}")
    suite = "---\n".join(template.format(n=n) for n in range(agents))
    code = {f"src/pkg-{n}/tool.py": f"N = {n}\n" for n in range(agents)}
    prompts = {f"prompts/bot-{n}.md": f"You greet, {n}." for n in range(agents)}
    repo.commit("agents", {"evals.yaml": suite, **code, **prompts})
    repo.branch("change")
    return repo, {path: text + " Warmly." for path, text in prompts.items()}


def test_a_plan_asks_git_as_often_for_forty_agents_the_base_has_as_for_two(
    tmp_path: Path,
) -> None:
    """`evalward plan --base main` where the base already has every Agent, each with a
    `systemFile` and folders it `watch`es: the base's prompts are measured for the estimate,
    and the watched folders listed, in one git call for all the agents, not one each."""
    runs = {}
    for agents in (2, 40):
        repo, warmer = _agents_on_main(tmp_path, WATCHING, agents)
        repo.commit("warmer", warmer)
        path, log = _logging_git(tmp_path / f"git-{agents}")
        done = evalward("plan", "--base", "main", cwd=repo.path, PATH=path, OPENAI_API_KEY="k")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"bot-{agents - 1}-eval" in done.stdout, done.stdout
        runs[agents] = len(log.read_text().splitlines())
    assert runs[40] == runs[2], runs


LOOKS_PER_AGENT = 20
"""What a plan may look up of the working tree for each agent it has (`os.stat`, `os.lstat`
of a path in the repository): its prompt resolved and its mode read once, whether it is a
link or a folder, its size for the estimate, and the folders on its way. It was about 60
when each question about a file resolved it again (and the root with it)."""


class _Looks:
    """The paths below `root` that `os.stat` and `os.lstat` are asked about, counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.count = 0
        below = str(root)
        for name in ("stat", "lstat"):
            original = getattr(os, name)

            def counted(path: Any, *args: Any, _original: Any = original, **kw: Any) -> Any:
                if isinstance(path, (str, bytes, os.PathLike)):
                    self.count += os.fsdecode(path).startswith(below)
                return _original(path, *args, **kw)

            monkeypatch.setattr(os, name, counted)


@pytest.mark.parametrize("template", [AGENT, WATCHING], ids=["prompt", "watching"])
def test_a_plan_looks_up_each_agent_s_files_on_the_working_tree_a_few_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, template: str
) -> None:
    """`evalward plan --base main` on a working tree whose prompts are changed and not yet
    committed: the door and the listing of the head look up each path an agent names once
    for all the questions a plan asks of it (checked, prefetched, measured, read; whether it
    is a folder or a link), so each agent adds a dozen looks or so, not sixty."""
    looks = {}
    for agents in (2, 40):
        repo, warmer = _agents_on_main(tmp_path, template, agents)
        repo.write(warmer)
        with monkeypatch.context() as patched:
            counted = _Looks(patched, repo.path.resolve())
            exit_code, said = in_process(
                plan.main, "plan", str(repo.path), "--base", "main", host=quiet_host(repo.path)
            )
        assert exit_code == 0, said
        assert f"bot-{agents - 1}-eval" in said, said
        looks[agents] = counted.count
    assert looks[40] - looks[2] <= 38 * LOOKS_PER_AGENT, looks


def test_the_starts_of_many_files_are_read_on_a_commit_and_in_the_working_tree(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`starts` reads a commit's small files in one `cat-file --batch` and a larger one on
    its own, leaving out what `find` refuses (a link out of the repository), on a commit as
    in the working tree."""
    files = {f"data/{n}.json": f'{{"n": {n}}}\n' for n in range(40)}
    large = "x" * 3000
    sha = repo.commit("data", files | {"data/large.json": large})
    os.symlink("/etc/hostname", repo.path / "data/out.json")
    asked = [*files, "data/large.json", "data/out.json", "data/missing.json"]
    monkeypatch.setattr("evalward.files.committed.WHOLE_BLOBS", 1000)  # the large one apart

    on_commit = RepoFiles.at_commit(Git(repo.path), sha).starts(asked, 8)
    in_tree = RepoFiles.working_tree(repo.path).starts(asked, 8)

    expected = {path: text.encode()[:8] for path, text in files.items()}
    expected["data/large.json"] = b"xxxxxxxx"
    assert on_commit == expected
    assert in_tree == expected
