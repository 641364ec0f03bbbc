"""A regression dry-run with no key: a mock script whose `side` (or `sha`) key answers the base
and the head differently, through `python -m evalward run --base main` on a real repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture

pytestmark = pytest.mark.e2e

SUITE = documents(
    greeter_agent("openai/gpt-4.1-mini", "Greet the customer and offer help."),
    greeting_fixture(
        "{ type: contains, value: help }",
        "type: judge\n      rubric: Was the greeting friendly?",
    ),
    greeter_eval("judge: { model: openai/gpt-4.1-mini }"),
)

VERDICT = '{"score": %s, "confidence": 0.9, "summary": "%s", "violations": []}'


def script(head_match: str) -> str:
    return f"""\
replies:
  - match: {{ purpose: judge, side: base }}
    turns: [{{ content: '{VERDICT % (1, "friendly")}' }}]
  - match: {{ purpose: judge, {head_match} }}
    turns: [{{ content: '{VERDICT % (0.2, "curt")}' }}]
  - match: {{ agent: greeter, side: base }}
    turns: [{{ content: "Hello! How can I help?" }}]
  - match: {{ agent: greeter, {head_match} }}
    turns: [{{ content: "What?" }}]
"""


def results(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((path / "results.json").read_text())
    return document


def by_side(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["side"]: f for f in document["fixtures"]}


def changed_greeter(repo: GitRepo, mock: str) -> None:
    repo.commit(
        "a greeter", {"greeter.yaml": SUITE, "mock.yaml": mock, ".gitignore": ".evalward/\n"}
    )
    repo.branch("terse")
    repo.commit("a terser greeter", {"greeter.yaml": SUITE.replace(" and offer help", "")})


def test_side_keys_show_a_regression_with_no_key(repo: GitRepo, tmp_path: Path) -> None:
    changed_greeter(repo, script("side: head"))
    assert evalward("validate", "--mock-script", "mock.yaml", cwd=repo.path).returncode == 0

    out = tmp_path / "out"
    done = evalward(
        "run", "--base", "main", "--mock-script", "mock.yaml", "--output-dir", str(out),
        cwd=repo.path,
    )  # fmt: skip

    assert done.returncode == 1, done.stderr
    fixtures = by_side(results(out))
    assert fixtures["base"]["status"] == "pass"
    assert fixtures["head"]["status"] == "fail"
    assert fixtures["head"]["output"] == "What?"
    judged = {
        side: next(a for a in f["assertions"] if a["type"] == "judge")
        for side, f in fixtures.items()
    }
    assert judged["base"]["score"] == 1 and judged["head"]["score"] == 0.2
    assert "greeting" in done.stdout and "regress" in done.stdout.lower()


def test_a_sha_key_answers_one_commit(repo: GitRepo, tmp_path: Path) -> None:
    changed_greeter(repo, script("side: head"))
    # the head's commit, by the first 8 characters of its sha (the script is not committed)
    repo.write({"mock.yaml": script(f'sha: "{repo.head()[:8]}"')})

    out = tmp_path / "out"
    done = evalward(
        "run", "--base", "main", "--mock-script", "mock.yaml", "--output-dir", str(out),
        cwd=repo.path,
    )  # fmt: skip

    assert done.returncode == 1, done.stderr
    fixtures = by_side(results(out))
    assert (fixtures["base"]["status"], fixtures["head"]["status"]) == ("pass", "fail")


def test_a_result_of_one_side_is_never_reused_for_the_other(repo: GitRepo) -> None:
    """On main, the greeter runs as the head and gets the head's reply; on a branch that
    changes it, the same definition runs as the base and must get the base's reply, not the
    cached result of the earlier head run."""
    changed_greeter(repo, script("side: head"))
    repo.checkout("main")
    first = evalward("run", "--mock-script", "mock.yaml", cwd=repo.path)
    assert first.returncode == 1, first.stderr  # the head's reply fails `contains: help`

    repo.checkout("terse")
    done = evalward("run", "--base", "main", "--mock-script", "mock.yaml", "--json", cwd=repo.path)

    assert done.returncode == 1, done.stderr
    fixtures = by_side(json.loads(done.stdout))
    assert fixtures["base"]["status"] == "pass" and not fixtures["base"].get("cached")
    assert fixtures["head"]["status"] == "fail"


def test_a_side_that_is_neither_is_refused_at_its_line(repo: GitRepo) -> None:
    repo.commit("a greeter", {"greeter.yaml": SUITE, "mock.yaml": script("side: pr")})
    done = evalward("validate", "--mock-script", "mock.yaml", cwd=repo.path)
    assert done.returncode == 2
    assert "mock.yaml:4:" in done.stderr and "side" in done.stderr, done.stderr
    assert "expected one of: base, head; found 'pr'" in done.stderr


def test_a_sha_of_digits_only_must_be_quoted_and_says_so(repo: GitRepo, tmp_path: Path) -> None:
    """YAML reads `sha: 01234567` as a number, which would lose its leading zero."""
    repo.commit("a greeter", {"greeter.yaml": SUITE, "mock.yaml": script("sha: 12345678")})
    done = evalward("run", "--mock-script", "mock.yaml", cwd=repo.path)
    assert done.returncode == 2
    assert "mock.yaml:" in done.stderr and 'quote it, as sha: "12345678"' in done.stderr
