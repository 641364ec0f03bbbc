"""`plan.preflight.scorer_checks.ScorerChecks`: a fixture's code scorers compiled (Python) or
parsed by `node --check` (JavaScript) before a run, each error located where the code was
written: an inline scorer's at its line of the YAML file, a file's at its own line."""

from __future__ import annotations

import os
import shutil

import pytest

from evalward.plan.preflight.scorer_checks import ScorerChecks
from evalward.resources.reading.locate import Locator
from evalward.resources.resource_set import ResourceSet
from support.gitrepo import GitRepo
from support.shop import refund_fixture, refunder, refunds_eval, shop

pytestmark = pytest.mark.integration

INLINE_BROKEN = """\
type: code
      language: python
      source: |
        said = output.lower()
        return said.startswith(("""

JS_BROKEN = '{ type: code, language: javascript, source: "return output.includes(;" }'


def suite(repo: GitRepo, *assertions: str, files: dict[str, str] | None = None) -> ResourceSet:
    fixture = refund_fixture("refund", *assertions)
    return shop(repo, refunder(), refunds_eval("refund"), fixture, files=files).resources


def problems(resources: ResourceSet, env: dict[str, str]) -> list[str]:
    checks = ScorerChecks(Locator(resources), env)
    checks.add(resources.fixtures["refund"])
    return [f"{p.file}:{p.line}: {p.message}" for p in checks.problems()]


def test_scorers_that_compile_pass(repo: GitRepo) -> None:
    resources = suite(
        repo,
        "{ type: code, language: python, source: \"'refund' in output\" }",
        "{ type: code, file: scorers/ok.py:score }",
        files={"scorers/ok.py": "def score(output, context):\n    return True\n"},
    )

    assert problems(resources, {"PATH": ""}) == []


def test_an_inline_python_scorer_is_located_at_its_line_of_the_yaml_file(
    repo: GitRepo,
) -> None:
    resources = suite(repo, INLINE_BROKEN)
    text = (repo.path / "shop.yaml").read_text().splitlines()
    line = next(n for n, said in enumerate(text, 1) if "said.startswith" in said)

    (found,) = problems(resources, {"PATH": ""})

    assert found.startswith(f"shop.yaml:{line}: the inline Python scorer does not compile")


def test_a_scorer_file_is_located_at_its_own_line(repo: GitRepo) -> None:
    broken = "def score(output, context):\n    x = 1\n    return x +\n"
    resources = suite(
        repo, "{ type: code, file: scorers/bad.py }", files={"scorers/bad.py": broken}
    )

    (found,) = problems(resources, {"PATH": ""})

    assert found.startswith("scorers/bad.py:3: the Python scorer does not compile")


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node on PATH")
def test_a_javascript_scorer_is_parsed_by_node_where_node_is(repo: GitRepo) -> None:
    resources = suite(repo, JS_BROKEN)

    with_node = problems(resources, {"PATH": os.environ["PATH"]})
    without = problems(resources, {"PATH": ""})

    assert len(with_node) == 1
    assert "the inline JavaScript scorer does not parse: SyntaxError" in with_node[0]
    assert without == []  # the run will tell
