"""`evalward init` as a user runs it: in an empty repository and in one with history, the files
it writes validate and pass a mock run at once, the workflow passes GitHub's validators, and
nothing the user has is ever overwritten."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from support.clirun import REPO_ROOT, evalward
from support.gitrepo import GitRepo
from toplevel.test_packaging import check, tool

pytestmark = pytest.mark.e2e

WRITTEN = [
    "evalward.yaml",
    "agents/assistant.yaml",
    "prompts/assistant.md",
    "evals/assistant.yaml",
    "evals/mock-replies.yaml",
    ".github/workflows/evals.yml",
]


def uses(workflow: Path) -> list[str]:
    document = yaml.safe_load(workflow.read_text())
    return [step["uses"] for job in document["jobs"].values() for step in job["steps"]]


def test_init_in_an_empty_repository_validates_and_passes_a_mock_run(
    repo: GitRepo, tmp_path: Path
) -> None:
    done = evalward("init", cwd=repo.path)

    assert done.returncode == 0, done.stderr
    for name in [*WRITTEN, ".gitignore"]:
        assert name in done.stdout and (repo.path / name).is_file(), name
    assert (repo.path / ".gitignore").read_text() == ".evalward/\n"

    validated = evalward("validate", cwd=repo.path)
    assert validated.returncode == 0, validated.stderr
    assert "1 agents, 2 fixtures, 1 evals OK" in validated.stdout
    assert "warning" not in validated.stdout

    out = tmp_path / "out"
    ran = evalward(
        "run", "--mock-script", "evals/mock-replies.yaml", "--output-dir", str(out), cwd=repo.path
    )
    assert ran.returncode == 0, ran.stderr
    fixtures = json.loads((out / "results.json").read_text())["fixtures"]
    assert len(fixtures) == 2
    # adaptive reps: one each, whose pass settles the fixture working
    assert sorted({(f["fixture"], f["status"]) for f in fixtures}) == [
        ("assistant-asks-for-the-order", "pass"),
        ("assistant-order-status", "pass"),
    ]
    judge = next(
        a for f in fixtures for a in f["assertions"] if a["type"] == "judge"
    )  # the judge ran, on the mock's verdict
    assert judge["status"] == "pass"
    # With no base to compare with, the pairwise judge says so, not its tests over no pairs.
    assert (
        "assistant-eval: no pairs — no fixture ran on both the base and the head, so it "
        "compared none"
    ) in ran.stdout
    assert "of 0 pairs" not in ran.stdout and "p ≤ 1.00" not in ran.stdout

    # What the run left (.evalward/: results, caches, history) is ignored: `git add -A` after
    # a run commits the definitions and nothing evalward wrote.
    assert (repo.path / ".evalward").is_dir()
    repo.git("add", "-A")
    staged = repo.git("diff", "--cached", "--name-only").splitlines()
    assert sorted(staged) == sorted([*WRITTEN, ".gitignore"])


def test_the_workflow_is_valid_pinned_and_asks_only_the_permissions_it_needs(
    repo: GitRepo,
) -> None:
    assert evalward("init", cwd=repo.path).returncode == 0
    workflow = repo.path / ".github" / "workflows" / "evals.yml"

    check(tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow))
    check(tool("actionlint"), str(workflow))
    check(tool("zizmor"), "--offline", "--no-progress", str(workflow))

    document = yaml.safe_load(workflow.read_text())
    assert document["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "issues": "read",
        "actions": "read",
    }
    (job,) = document["jobs"].values()
    assert job["timeout-minutes"] and job["steps"][0]["with"]["fetch-depth"] == 0
    # the same pinned actions as examples/workflows/evals.yml, each at a full commit SHA
    example = REPO_ROOT / "examples" / "workflows" / "evals.yml"
    theirs = [u for u in uses(workflow) if not u.startswith("evalward/")]
    assert theirs == [u for u in uses(example) if not u.startswith("evalward/")]
    assert all(re.fullmatch(r"[\w/.-]+@[0-9a-f]{40}", u) for u in theirs)
    evalward_step = next(s for s in job["steps"] if s["uses"].startswith("evalward/"))
    assert evalward_step["uses"] == "evalward/evalward@v0"  # the release's moving major tag
    assert evalward_step["env"] == {"OPENAI_API_KEY": "${{ secrets.OPENAI_API_KEY }}"}
    # no default branch yet: the branch the repository starts on
    assert document[True]["push"]["branches"] == ["main"]  # PyYAML reads `on` as True
    # a merge queue turned on later waits for this job's check on each group's commit
    assert document[True]["merge_group"] == {"types": ["checks_requested"]}
    # the cache is kept for pushes alone: a pull request's gate reads the base branch's
    # results from the artifact a push run uploaded (`base-cache`), never a restored cache
    # (one a workflow the pull request adds could have saved in its scope)
    steps = [s for s in job["steps"] if s["uses"].startswith(("actions/cache/", "actions/up"))]
    kept = [s for s in steps if s["uses"].startswith("actions/cache/")]
    assert [s["if"] for s in kept] == [
        "github.event_name == 'push'",
        "always() && github.event_name == 'push'",
    ]
    (artifact,) = [s for s in steps if s.get("with", {}).get("name") == "evalward-cache"]
    assert artifact["if"] == "always() && github.event_name == 'push'"
    assert evalward_step["with"] == {"base-cache": "evalward-cache"}


def test_init_in_a_repository_with_history_keeps_what_is_there(repo: GitRepo) -> None:
    repo.commit(
        "an application",
        {
            "README.md": "# shop\n",
            ".gitignore": "node_modules/\n*.log",  # no newline at the end
            "deploy/service.yaml": "apiVersion: v1\nkind: Service\nmetadata: { name: shop }\n",
            "src/app/main.py": "print('shop')\n",
        },
    )
    repo.git("branch", "-m", "main", "trunk")

    # from a subdirectory: the files go to the repository's top
    done = evalward(
        "init", "--agent", "support-bot", "--model", "anthropic/claude-haiku-4-5",
        cwd=repo.path / "src" / "app",
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert (repo.path / "agents" / "support-bot.yaml").is_file()
    assert not (repo.path / "src" / "app" / "agents").exists()
    assert (repo.path / ".gitignore").read_text() == "node_modules/\n*.log\n.evalward/\n"
    assert (repo.path / "README.md").read_text() == "# shop\n"
    workflow = yaml.safe_load((repo.path / ".github" / "workflows" / "evals.yml").read_text())
    assert workflow[True]["push"]["branches"] == ["trunk"]
    step = next(s for s in workflow["jobs"]["gate"]["steps"] if "evalward/" in s["uses"])
    assert step["env"] == {"ANTHROPIC_API_KEY": "${{ secrets.ANTHROPIC_API_KEY }}"}
    assert "anthropic/claude-haiku-4-5" in (repo.path / "evals" / "support-bot.yaml").read_text()

    assert evalward("validate", cwd=repo.path).returncode == 0
    ran = evalward("run", "--mock-script", "evals/mock-replies.yaml", cwd=repo.path)
    assert ran.returncode == 0, ran.stderr

    # committed, the suite gates a later change to the agent like any other
    repo.commit("evals for the support bot")
    repo.branch("stricter")
    prompt = repo.path / "prompts" / "support-bot.md"
    repo.commit("a stricter prompt", {"prompts/support-bot.md": prompt.read_text() + "Be brief.\n"})
    planned = evalward("plan", "--base", "trunk", cwd=repo.path)
    assert planned.returncode == 0, planned.stderr
    # the pairwise judge's base runs are planned too, not only the head's
    assert "2 fixtures, 2 head runs; " in planned.stdout
    assert "pairwise judge: 2 base runs too, one paired with each head run above" in (
        planned.stdout
    )
    changed = evalward(
        "run", "--base", "trunk", "--mock-script", "evals/mock-replies.yaml", cwd=repo.path
    )
    assert changed.returncode == 0, changed.stderr
    assert "support-bot" in changed.stdout
    # The base's runs are the ones the first run stored: the log says what asked for them
    # (the pairwise judge pairs each head run with one) and that the cache answered them.
    assert (
        "2 more runs that the pairwise judge's open tests ask for, 4 in all (2 of them reused "
        "from the result cache, not run again)"
    ) in changed.stderr
    assert changed.stderr.count(", reused)\n") == 2
    assert "where outcomes are open" not in changed.stderr


def test_init_refuses_to_overwrite_and_names_what_exists(repo: GitRepo) -> None:
    assert evalward("init", cwd=repo.path).returncode == 0
    before = {name: (repo.path / name).read_bytes() for name in [*WRITTEN, ".gitignore"]}

    again = evalward("init", cwd=repo.path)

    assert again.returncode == 2
    assert "nothing was written" in again.stderr
    for name in WRITTEN:
        assert name in again.stderr, name
    assert {name: (repo.path / name).read_bytes() for name in before} == before
    assert "Traceback" not in again.stderr


def test_one_existing_file_stops_init_before_it_writes_anything(repo: GitRepo) -> None:
    repo.write({".github/workflows/evals.yml": "name: mine\n"})
    # a dangling symbolic link is a file that exists too: never written through
    (repo.path / "evals").mkdir()
    (repo.path / "evals" / "assistant.yaml").symlink_to(repo.path / "elsewhere.yaml")

    done = evalward("init", cwd=repo.path)

    assert done.returncode == 2
    assert ".github/workflows/evals.yml" in done.stderr and "evals/assistant.yaml" in done.stderr
    assert "agents/assistant.yaml" not in done.stderr
    assert not (repo.path / "agents").exists() and not (repo.path / "evalward.yaml").exists()
    assert not (repo.path / "elsewhere.yaml").exists()
    assert (repo.path / ".github/workflows/evals.yml").read_text() == "name: mine\n"
    assert not (repo.path / ".gitignore").exists()


def test_a_name_or_model_init_cannot_use_is_refused(repo: GitRepo) -> None:
    for args in (["--agent", "Support Bot"], ["--model", "gemini/flash"], ["--agent", "a/b"]):
        done = evalward("init", *args, cwd=repo.path)
        assert done.returncode == 2, args
        assert "expected" in done.stderr or "letters" in done.stderr
    assert list(repo.path.iterdir()) == [repo.path / ".git"]


def test_init_can_write_a_conversation_fixture_that_passes_a_mock_run(
    repo: GitRepo, tmp_path: Path
) -> None:
    done = evalward("init", "--conversation", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    assert "evals/assistant-conversation.yaml" in done.stdout
    validated = evalward("validate", cwd=repo.path)
    assert validated.returncode == 0, validated.stderr
    assert "1 agents, 3 fixtures, 1 evals OK" in validated.stdout
    out = tmp_path / "out"
    ran = evalward(
        "run", "--mock-script", "evals/mock-replies.yaml", "--output-dir", str(out), cwd=repo.path
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    fixtures = json.loads((out / "results.json").read_text())["fixtures"]
    talk = next(f for f in fixtures if f["fixture"] == "assistant-order-conversation")
    assert talk["status"] == "pass" and talk["end_reason"] == "user done"
    said = [s["content"] for s in talk["trace"]["steps"] if s["type"] == "input"]
    assert said == ["Where is my order?", "It's 12345."]

    # the model calls split by whose they were add up to the whole: the simulated user's
    # among them; with no base, no pair is judged and no calibration replayed for one
    spent = json.loads((out / "results.json").read_text())["run"]["spent"]
    assert sum(spent["calls_by_purpose"].values()) == spent["model_calls"]
    assert spent["calls_by_purpose"]["user"] > 0 and "pairwise" not in spent["calls_by_purpose"]
    split = re.search(r"([\d,]+) model calls \(([^)]*)\)", ran.stdout)
    assert split is not None, ran.stdout
    named = [re.fullmatch(r"(\D+) ([\d,]+)(?: · \$[\d.]+)?", p) for p in split[2].split(", ")]
    parts = {m[1]: m[2] for m in named if m is not None}
    assert len(parts) == len(named), split[0]
    assert sum(int(n) for n in parts.values()) == int(split[1]), split[0]
    assert "pairwise judge" not in parts and "simulated user" in parts, split[0]
