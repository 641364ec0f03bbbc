"""`plan.planned.plan` on a real repository: a change's runs planned, announced to the
progress and noted; a budget's cut said in the notes; a missing key refused before any model
call, skippable only where the base's own side lacks it too."""

from __future__ import annotations

import pytest

from evalward.errors import MissingSecretError
from evalward.plan.progress import RunProgress
from evalward.plan.run_setup import RunOptions
from evalward.rundata.sides import Side
from evalward.rundata.spending import Budget
from support.gitrepo import GitRepo
from support.greeter import greeter_agent
from support.planning import greeter_files, planned

pytestmark = pytest.mark.integration


def change(repo: GitRepo, head_models: str = "openai/gpt-test") -> str:
    """The greeter on the base; its prompt (and `head_models`) changed in the working tree."""
    base = repo.commit("greeter", greeter_files("execution: { repsPerFixture: 2 }"))
    repo.write({"agents/greeter.yaml": greeter_agent(head_models, "Greet warmly.")})
    return base


def test_a_change_is_planned_on_both_sides_and_announced(
    repo: GitRepo, env: dict[str, str]
) -> None:
    base = change(repo)
    progress = RunProgress()

    with planned(repo, base, env, progress=progress) as ready:
        runs = ready.context.plan.runs
        assert sorted((r.side.value, r.rep) for r in runs) == [
            ("base", 0),
            ("base", 1),
            ("head", 0),
            ("head", 1),
        ]
        assert progress.plan is ready.context.plan
        assert ready.changes.affected_evals == {"greeter-eval": ["agent greeter changed"]}
        assert ready.trimmed is None and ready.skipped == () and ready.estimate is None
        assert ready.context.checkouts[Side.base].sha == base
        assert ready.progress is progress


def test_a_budget_cuts_the_plan_and_says_so(repo: GitRepo, env: dict[str, str]) -> None:
    base = change(repo)
    options = RunOptions(budget=Budget(max_model_calls=2))

    with planned(repo, base, env, options) as ready:
        assert ready.trimmed is not None
        assert len(ready.context.plan.runs) + len(ready.skipped) == 4
        assert ready.skipped and ready.counted is not None
        assert any("budget" in note for note in ready.notes)


def test_a_missing_key_the_base_needs_too_may_be_skipped(repo: GitRepo) -> None:
    base = change(repo)

    with pytest.raises(MissingSecretError) as missing, planned(repo, base, {}):
        pass

    assert "OPENAI_API_KEY" in str(missing.value)
    assert missing.value.skippable


def test_a_key_only_the_change_needs_may_not_be_skipped(repo: GitRepo, env: dict[str, str]) -> None:
    base = change(repo, head_models="anthropic/claude-test")

    with pytest.raises(MissingSecretError) as missing, planned(repo, base, env):
        pass

    assert "ANTHROPIC_API_KEY" in str(missing.value)
    assert not missing.value.skippable
