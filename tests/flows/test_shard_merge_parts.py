"""`flows.shard_merge` on its own: the plan the merge computes itself (`expected`), and the
parts it takes or refuses (none, one its front end's check refuses, one sealed with another
key, one of another commit), with a part written by a real one-part shard run; and the notes
it says of the whole, which no part may say of its share alone."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward.errors import ConfigError
from evalward.flows import shard
from evalward.flows.shard import ShardSpec
from evalward.flows.shard_merge import expected, merge, merge_parts
from evalward.flows.shard_signature import seal
from evalward.plan.progress import RunProgress
from evalward.plan.run_setup import RunSetup
from evalward.security import Redactor
from fakes.model_server import ScriptedModelServer, error, text
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.planning import greeter_files, setup_of

pytestmark = pytest.mark.integration

KEY = "s" * 64


@pytest.fixture
def base(repo: GitRepo, model: ScriptedModelServer) -> str:
    """The greeter on the base, its prompt changed on the head commit."""
    first = repo.commit("greeter", greeter_files())
    repo.commit("warmer", {"agents/greeter.yaml": greeter_agent("openai/gpt-test", "Warmly.")})
    model.script(lambda body: True, text("Hi there."))
    return first


async def written(setup: RunSetup, output: Path, key: str) -> Path:
    try:
        spec, progress = ShardSpec(1, 1), RunProgress()
        part = await shard.run_part(setup, spec, output, Redactor([]), progress, key)
    finally:
        await setup.providers.aclose()
    assert part is not None, "only a signal cancels a part"
    return part.path


@pytest.fixture
def part(repo: GitRepo, base: str, env: dict[str, str], tmp_path: Path) -> Path:
    return asyncio.run(written(setup_of(repo, base, env), tmp_path / "parts", KEY))


@pytest.fixture
def setup(repo: GitRepo, base: str, env: dict[str, str]) -> Iterator[RunSetup]:
    made = setup_of(repo, base, env)
    yield made
    asyncio.run(made.providers.aclose())


def test_the_merge_computes_the_plan_and_takes_the_part_sealed_with_its_key(
    setup: RunSetup, base: str, part: Path
) -> None:
    with expected(setup) as plan:
        assert plan.source["base"] == base
        merged = asyncio.run(merge_parts([part], plan, KEY))

    assert sorted((f.side, f.status) for f in merged.fixtures) == [
        ("base", "pass"),
        ("head", "pass"),
    ]
    assert {e.eval for e in merged.evals} == {"greeter-eval"}


def test_no_part_is_refused(setup: RunSetup) -> None:
    with expected(setup) as plan, pytest.raises(ConfigError, match="no shard results given"):
        asyncio.run(merge([], plan, KEY))


def test_a_part_the_front_end_s_check_refuses_is_not_merged(setup: RunSetup, part: Path) -> None:
    def refuse(path: Path) -> None:
        raise ConfigError(f"{path.name} came with the checkout")

    with expected(setup) as plan, pytest.raises(ConfigError, match="came with the checkout"):
        asyncio.run(merge_parts([part], plan, KEY, refuse))


def test_a_part_sealed_with_another_key_or_none_is_not_taken(setup: RunSetup, part: Path) -> None:
    with expected(setup) as plan:
        with pytest.raises(ConfigError, match="not taken") as other:
            asyncio.run(merge_parts([part], plan, "t" * 64))
        with pytest.raises(ConfigError, match="not taken"):
            asyncio.run(merge_parts([part], plan, None))

    assert "the same `shard-key`" in str(other.value)


def test_a_part_of_another_commit_is_refused(
    repo: GitRepo, base: str, env: dict[str, str], part: Path
) -> None:
    repo.commit("later", {"README.md": "more\n"})
    later = setup_of(repo, base, env)
    try:
        with expected(later) as plan, pytest.raises(ConfigError) as refused:
            asyncio.run(merge_parts([part], plan, KEY))
    finally:
        asyncio.run(later.providers.aclose())

    assert "holds results for commit" in str(refused.value)
    assert json.loads(part.read_text())  # the part itself is left as it was


def test_a_part_that_holds_a_run_twice_is_refused_as_the_mistake_it_is(
    setup: RunSetup, part: Path
) -> None:
    """Sealed as it stands (a key's holder made it so): refused at the part, an exit 2 with
    its name, not a bug of the merge's (a second trace of one run)."""
    document = json.loads(part.read_text())
    document.pop("seal", None)
    document["fixtures"] = document["fixtures"] * 2
    twice = part.with_name("twice.json")
    twice.write_text(json.dumps(seal(document, KEY)))
    with expected(setup) as plan, pytest.raises(ConfigError) as refused:
        asyncio.run(merge_parts([twice], plan, KEY))

    assert str(refused.value).startswith(f"{twice}: holds "), refused.value
    assert str(refused.value).endswith(" twice; rerun the part that wrote it")


OUTAGE = error(503, headers={"Retry-After": "0"})


@pytest.mark.parametrize("unreached", [("farewell",), ("farewell", "greeting")])
def test_no_baseline_is_said_of_every_part_s_base_runs_not_of_one_part_s(
    repo: GitRepo,
    model: ScriptedModelServer,
    env: dict[str, str],
    tmp_path: Path,
    unreached: tuple[str, ...],
) -> None:
    """Two parts, each holding one fixture's base run: the merge says an Eval has no baseline
    only when every base run of it, in any part, reached no provider."""
    farewell = greeting_fixture("{ type: contains, value: Hi }")
    farewell = farewell.replace("greeting", "farewell").replace('"Hi!"', '"Bye!"')
    files = {
        **greeter_files(),
        "evals/greeter.yaml": greeter_eval().replace("[greeting]", "[greeting, farewell]"),
        "evals/fixtures/farewell.yaml": farewell,
    }
    base = repo.commit("greeter", files)
    repo.commit("warmer", {"agents/greeter.yaml": greeter_agent("openai/gpt-test", "Warmly.")})
    prompts = {"greeting": "Hi!", "farewell": "Bye!"}
    model.script(lambda body: any(prompts[f] in json.dumps(body) for f in unreached), OUTAGE)
    model.script(lambda body: True, text("Hi there."))

    async def part(index: int) -> Path:
        setup = setup_of(repo, base, env)
        try:
            spec, progress = ShardSpec(index, 2), RunProgress()
            written = await shard.run_part(setup, spec, tmp_path, Redactor([]), progress, KEY)
        finally:
            await setup.providers.aclose()
        assert written is not None
        return written.path

    paths = [asyncio.run(part(1)), asyncio.run(part(2))]
    bases = [
        sorted(f["fixture"] for f in json.loads(p.read_text())["fixtures"] if f["side"] == "base")
        for p in paths
    ]
    assert sorted(bases) == [["farewell"], ["greeting"]], "each part holds one base run"

    setup = setup_of(repo, base, env)
    try:
        with expected(setup) as plan:
            merged = asyncio.run(merge_parts(paths, plan, KEY))
    finally:
        asyncio.run(setup.providers.aclose())
    said = [note for note in merged.notes if "no baseline" in note]
    if len(unreached) == 2:
        assert said == [
            "greeter-eval: no baseline — every base run failed to reach its model provider "
            "after retries"
        ]
    else:
        assert said == [], "one part's base reached no provider; the other part's did"
