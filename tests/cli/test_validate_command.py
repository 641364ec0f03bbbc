"""`evalward validate` in-process (`cli/validate.py`): `evalward init`'s files count as valid;
a broken reference is one located problem; `--ask-providers` warns about a model its provider
does not list, with the nearest it does; a path that is not a folder, refused."""

from __future__ import annotations

import io

import pytest

from evalward.cli import validate
from evalward.errors import ResourceError
from evalward.host import Host
from fakes.model_server import ScriptedModelServer
from support.clirun import build_parser, in_process, initialised, quiet_host, refused
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.integration


@pytest.fixture
def started(repo: GitRepo) -> GitRepo:
    return initialised(repo)


def test_what_init_writes_is_valid(started: GitRepo) -> None:
    script = str(started.path / "evals" / "mock-replies.yaml")
    code, said = in_process(
        validate.main,
        *("validate", str(started.path), "--mock-script", script),
        host=quiet_host(started.path),
    )
    assert code == 0
    assert said == "1 agents, 2 fixtures, 1 evals OK\n"


def test_an_eval_for_an_agent_that_is_not_defined_is_one_located_problem(
    started: GitRepo,
) -> None:
    evals = started.path / "evals" / "assistant.yaml"
    evals.write_text(
        evals.read_text().replace(
            "targetAgent: assistant\n  fixtureSelector", "targetAgent: asistant\n  fixtureSelector"
        )
    )
    args = build_parser().parse_args(["validate", str(started.path)])
    with pytest.raises(ResourceError) as raised:
        validate.main(args, io.StringIO(), quiet_host(started.path))
    (problem,) = raised.value.problems
    assert (problem.file, problem.path) == ("evals/assistant.yaml", "spec.targetAgent")
    assert problem.message == (
        "Eval 'assistant-eval' targets agent 'asistant', which is not defined (did you mean "
        "'assistant'?)"
    )


def test_asking_the_provider_warns_about_a_model_it_does_not_list(
    started: GitRepo, model: ScriptedModelServer
) -> None:
    model.models = ["gpt-4.1-mini-2025-04-14", "gpt-4.1"]
    host = Host({**quiet_host(started.path).env, **provider_env(model)})
    code, said = in_process(
        validate.main, "validate", str(started.path), "--ask-providers", host=host
    )
    assert code == 0  # a warning: a list may lag behind a new model
    warnings = [line for line in said.splitlines() if line.startswith("warning: ")]
    assert warnings and all("openai/gpt-4.1-mini" in w for w in warnings)
    assert "it is not among the 2 models its model list gave" in warnings[0]
    assert said.endswith("1 agents, 2 fixtures, 1 evals OK\n")
    assert model.targets == ["GET /v1/models?limit=1000"]
    assert "OPENAI_API_KEY" in host.key_envs  # its key is redacted from what is printed


def test_a_path_that_is_not_a_folder_is_refused(
    started: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    file = started.path / "evalward.yaml"
    said = refused(capsys, "validate", str(file), host=quiet_host(started.path))
    assert (
        said
        == f"{file}: not a directory; give a folder of the repository (default: the current one)"
    )
