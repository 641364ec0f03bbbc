"""`evalward import promptfoo` as a team moving from promptfoo runs it: their configuration
(promptfoo's own documented examples, tests/data/promptfoo) becomes evalward resources that
validate, and that, run against the same model, give every test promptfoo's verdict
(`make test-promptfoo` checks those verdicts against promptfoo itself). What has no
equivalent is refused at its line, and nothing the user has is overwritten or leaked."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakes.reply_table import (
    ReplyTableServer,
    load_table,
    model_env,
    point_at,
    second_env,
    second_server,
)
from support.clirun import REPO_ROOT, evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

EXAMPLES = REPO_ROOT / "tests" / "data" / "promptfoo"
WITH_VERDICTS = sorted(p.parent for p in EXAMPLES.glob("*/expected.yaml"))


def imported(example: Path, repo: GitRepo, *args: str) -> Any:
    shutil.copytree(example, repo.path, dirs_exist_ok=True)
    repo.commit("the promptfoo suite")
    return evalward("import", "promptfoo", "promptfooconfig.yaml", *args, cwd=repo.path)


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.fixture
def served() -> Iterator[dict[str, ReplyTableServer]]:
    servers: dict[str, ReplyTableServer] = {}
    yield servers
    for server in servers.values():
        server.close()


@pytest.mark.parametrize("example", WITH_VERDICTS, ids=lambda p: p.name)
def test_a_promptfoo_suite_gives_promptfoos_verdict_on_every_test(
    example: Path, repo: GitRepo, tmp_path: Path, served: dict[str, ReplyTableServer]
) -> None:
    second = second_server(example)  # the suite's other server, when it calls two
    if second is not None:
        served["second"] = second
    shutil.copytree(example, repo.path, dirs_exist_ok=True)
    point_at(repo.path, second)
    repo.commit("the promptfoo suite")
    done = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path, **second_env(second)
    )
    assert done.returncode == 0, done.stderr
    validated = evalward("validate", cwd=repo.path)
    assert validated.returncode == 0, validated.stderr
    # the one warning an import leaves: a tool promptfoo offers has no implementation in
    # evalward either (promptfoo stops at its call; the import says to give it a `mock`)
    warnings = [w for w in validated.stdout.splitlines() if w.startswith("warning")]
    assert all("has neither `mock` nor `command`" in w for w in warnings), validated.stdout

    server = served.setdefault("model", ReplyTableServer(*load_table(example / "replies.yaml")))
    out = tmp_path / "out"
    ran = evalward(
        "run", "--output-dir", str(out), cwd=repo.path, **model_env(server), **second_env(second)
    )

    expected = yaml.safe_load((example / "expected.yaml").read_text())
    results = json.loads((out / "results.json").read_text())
    verdicts = {f["fixture"]: f["status"] for f in results["fixtures"]}
    assert verdicts == expected, ran.stderr
    assert ran.returncode == (1 if "fail" in expected.values() else 0), ran.stderr


def test_each_assertion_becomes_its_natural_equivalent(repo: GitRepo) -> None:
    assert imported(EXAMPLES / "assertions", repo).returncode == 0
    suite = repo.path / "evals" / "order-support-replies"
    fixtures = {d["metadata"]["name"]: d for d in documents(suite / "fixtures.yaml")}
    status = fixtures["order-support-replies-order-status-names-the-order-and-its-state"]
    # defaultTest's assertions first (a `$ref` followed), then the test's own
    assert status["spec"]["assertions"] == [
        {"type": "regex", "pattern": r"(?i)\A(?![\s\S]*?as an AI)"},
        {"type": "regex", "pattern": r"(?i)\A(?![\s\S]*?(?:guarantee|promise))"},
        {"type": "contains", "value": "12345"},
        {"type": "regex", "pattern": "(?i)(?:Shipped|delivered)"},
        {"type": "regex", "pattern": "(?:on its way|out for delivery)"},
        {"type": "notContains", "value": "refund"},
        {"type": "regex", "pattern": r"\AYour order"},
        {"type": "regex", "pattern": r"order \d{5}"},
        {"type": "latency", "maxMs": 30000},
        {"type": "cost", "maxUsd": 0.01, "axis": "budget"},
    ]
    assert status["spec"]["input"] == {
        "type": "prompt",
        "payload": {
            "prompt": "You are the support agent of Acme. Answer in one sentence: "
            "Where is order 12345?"
        },
    }
    assert status["metadata"]["annotations"] == {"promptfoo": "promptfooconfig.yaml:32"}
    structured = fixtures["order-support-replies-structured-status"]["spec"]["assertions"]
    assert structured[3] == {
        "type": "jsonSchema",
        "schema": {"const": {"order_id": "777", "status": "shipped"}},
    }
    greeting = fixtures["order-support-replies-the-greeting-is-the-house-greeting"]
    # promptfoo's equals compares the output as it is: so does the converted one
    assert greeting["spec"]["assertions"][2] == {
        "type": "equals",
        "value": "Hello from Acme!",
        "exact": True,
    }
    apology = fixtures["order-support-replies-an-apology-offers-a-replacement"]["spec"]
    judge = apology["assertions"][2]
    assert judge["type"] == "judge" and "offers a 'replacement'" in judge["rubric"]
    assert apology["assertions"][3] == {"type": "regex", "pattern": "(?i)sorry", "weight": 2}
    note = fixtures["order-support-replies-an-internal-note-skips-the-house-rules"]
    assert note["spec"]["assertions"] == [{"type": "regex", "pattern": r"\ANote:"}]

    (agent,) = documents(suite / "agents.yaml")
    assert agent["spec"] == {
        "models": ["openai/gpt-4.1-mini"],
        "temperature": 0.0,
        "maxTokens": 256,
    }
    (evaluation,) = documents(suite / "evals.yaml")
    assert evaluation["spec"]["judge"] == {"model": "openai/gpt-4.1-mini"}
    assert evaluation["spec"]["scoring"] == {"passThreshold": 1.0}


def test_a_chat_template_becomes_a_conversation(repo: GitRepo) -> None:
    assert imported(EXAMPLES / "chat", repo).returncode == 0
    fixtures = documents(repo.path / "evals" / "travel-assistant" / "fixtures.yaml")
    city = next(f for f in fixtures if f["metadata"]["name"].endswith("a-weekend-city-break"))
    system, user = city["spec"]["input"]["messages"]
    # promptfoo trims a text file it reads into a variable
    policy = (EXAMPLES / "chat" / "docs" / "policy.txt").read_text().strip()
    assert system == {
        "role": "system",
        "content": f"You are the travel assistant of Wayfare. Follow this policy:\n{policy}\n"
        # a YAML file becomes JSON text; a variable may be made of another one
        'The traveller: {"name":"Ada","prefers":["train","ferry"]}\n'
        "Sign as: Wayfare travel desk",
    }
    assert user == {"role": "user", "content": "Suggest a city for a weekend in May, from Paris."}
    booking = next(f for f in fixtures if "booking" in f["metadata"]["name"])
    assert booking["metadata"]["annotations"] == {"promptfoo": "tests/bookings.yaml:1"}
    assert (
        booking["spec"]["input"]["messages"][1]["content"]
        == 'I need to change my booking "WF-2041".'
    )


def test_a_value_evalward_s_check_refuses_is_told_at_the_promptfoo_key_it_came_from(
    repo: GitRepo,
) -> None:
    """Not at the test's first line in the words of the converted fixture's fields."""
    repo.commit(
        "a suite",
        {
            "promptfooconfig.yaml": (
                "providers: [openai:gpt-4.1-mini]\n"
                "prompts: ['{{q}}']\n"
                "tests:\n"
                "  - vars: { q: hi }\n"
                "    assert:\n"
                "      - { type: contains, value: hi }\n"
                "      - { type: cost, threshold: -1 }\n"
                "      - { type: regex, value: '(' }\n"
            )
        },
    )
    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)

    assert done.returncode == 2, done.stderr
    assert (
        "promptfooconfig.yaml:7:23: tests[0].assert[1].threshold: `cost` converts to "
        "evalward's `cost` check, which refuses it: expected a number greater than or equal "
        "to 0; found -1"
    ) in done.stderr
    regex = "promptfooconfig.yaml:8:24: tests[0].assert[2].value: the pattern does not compile"
    assert regex in done.stderr
    assert "the converted" not in done.stderr and "Traceback" not in done.stderr
    assert not (repo.path / "evals").exists()


def test_what_has_no_equivalent_is_refused_at_its_line_and_nothing_is_written(
    repo: GitRepo,
) -> None:
    done = imported(EXAMPLES / "refused", repo)

    assert done.returncode == 2
    assert "1 part of the promptfoo config has no evalward equivalent" in done.stderr
    where = "promptfooconfig.yaml:37:9: tests[2].assert[2]"
    line = next((x for x in done.stderr.splitlines() if where in x), "")
    assert "`contains-json` looks for JSON" in line, done.stderr
    assert not (repo.path / "evals").exists()
    assert "Traceback" not in done.stderr


def test_skip_unsupported_leaves_out_the_refused_part_and_keeps_transforms_and_similarity(
    repo: GitRepo,
) -> None:
    """promptfoo's json-output example: its transforms (a test's and an assertion's) and its
    `similar` convert; only `contains-json` is left out."""
    done = imported(EXAMPLES / "refused", repo, "--skip-unsupported")

    assert done.returncode == 0, done.stderr
    assert done.stdout.count("left out: promptfooconfig.yaml:") == 1
    banana, passion, mango = documents(repo.path / "evals" / "json-object-evals" / "fixtures.yaml")
    assert banana["spec"]["assertions"][0] == {"type": "jsonSchema", "schema": {}}
    assert passion["spec"]["transform"] == {
        "language": "javascript",
        "source": "JSON.parse(output)",
    }
    assert passion["spec"]["vars"] == {"item": "Passion fruit"}  # what the transform is given
    assert mango["spec"]["assertions"] == [
        {"type": "code", "file": "check_mango.py"},
        {"type": "similar", "value": "a yellow tropical fruit", "threshold": 0.8},
        {
            "type": "regex",
            "pattern": "(?:India|Mexico)",
            "transform": {"language": "javascript", "source": "output.countries"},
        },
    ]
    assert evalward("validate", cwd=repo.path).returncode == 0


def test_provider_settings_go_to_evalward_yaml_and_a_key_goes_nowhere(
    repo: GitRepo, tmp_path: Path, served: dict[str, ReplyTableServer]
) -> None:
    server = served.setdefault(
        "model", ReplyTableServer(*load_table(EXAMPLES / "csv" / "replies.yaml"))
    )
    config = {
        "prompts": ["What is the capital of {{country}}? Answer with the city only."],
        "providers": [
            {
                "id": "openai:chat:house-model",
                "config": {
                    "apiBaseUrl": server.base_url,
                    "apiKeyEnvar": "HOUSE_KEY",
                    "apiKey": "sk-live-do-not-copy",
                    "inputCost": 0.000002,
                    "outputCost": 0.000004,
                },
            }
        ],
        "tests": [
            {"vars": {"country": "France"}, "assert": [{"type": "cost", "threshold": 0.001}]},
            {"vars": {"country": "Japan"}, "assert": [{"type": "cost", "threshold": 0.00001}]},
        ],
    }
    repo.commit("a suite", {"promptfooconfig.yaml": yaml.safe_dump(config)})

    done = evalward("import", "promptfoo", "promptfooconfig.yaml", "--name", "House", cwd=repo.path)

    assert done.returncode == 0, done.stderr
    settings = yaml.safe_load((repo.path / "evalward.yaml").read_text())
    assert settings == {
        "providers": {"openai": {"baseUrl": server.base_url, "apiKeyEnv": "HOUSE_KEY"}},
        "pricing": {"openai/house-model": {"input": 2.0, "output": 4.0}},
    }
    written = "".join(p.read_text() for p in repo.path.rglob("*.yaml") if ".git" not in p.parts)
    assert "sk-live-do-not-copy" in (repo.path / "promptfooconfig.yaml").read_text()
    assert written.count("sk-live-do-not-copy") == 1  # only the user's own config holds it
    assert "apiKey" in done.stdout and "HOUSE_KEY" in done.stdout

    out = tmp_path / "out"
    ran = evalward("run", "--output-dir", str(out), cwd=repo.path, HOUSE_KEY="sk-test-key")
    verdicts = {
        f["fixture"]: f["status"]
        for f in json.loads((out / "results.json").read_text())["fixtures"]
    }
    # ~20 tokens at $2 and $4 per million: about $0.00005, over the second bound only
    assert verdicts == {"house-test-1": "pass", "house-test-2": "fail"}, ran.stderr
    assert len(server.requests) == 2 and all(r["model"] == "house-model" for r in server.requests)


def test_a_second_import_never_overwrites(repo: GitRepo) -> None:
    assert imported(EXAMPLES / "getting-started", repo).returncode == 0
    fixtures = repo.path / "evals" / "getting-started" / "fixtures.yaml"
    before = fixtures.read_bytes()

    again = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)

    assert again.returncode == 2
    assert "evals/getting-started/agents.yaml" in again.stderr
    assert "nothing was written" in again.stderr
    assert fixtures.read_bytes() == before


@pytest.mark.parametrize(
    ("config", "refusal"),
    [
        # a file outside the repository would end up in files the user commits
        (
            {"prompts": ["{{secret}}"], "providers": ["openai:gpt-4.1-mini"],
             "tests": [{"vars": {"secret": "file://../outside.txt"}}]},
            "outside the repository",
        ),
        # the machine's environment, a secret perhaps, would be frozen into the fixtures
        (
            {"prompts": ["Key: {{ env.OPENAI_API_KEY }}"], "providers": ["openai:gpt-4.1-mini"]},
            "uses `env`",
        ),
        # a template is data: the sandbox refuses to reach into Python's objects
        (
            {"prompts": ["{{ ''.__class__.__mro__[1].__subclasses__() }}"],
             "providers": ["openai:gpt-4.1-mini"]},
            "does not render",
        ),
        # a provider evalward cannot call is left out by name; with none left, nothing is
        (
            {"prompts": ["hi"], "providers": ["vertex:gemini-2.0-flash"],
             "tests": [{"assert": [{"type": "contains", "value": "hi"}]}]},
            "'vertex:gemini-2.0-flash' is left out: evalward has no equivalent of this provider",
        ),
    ],
    ids=["file-outside", "env", "sandbox", "provider"],
)  # fmt: skip
def test_a_hostile_or_impossible_config_is_refused_with_nothing_written(
    repo: GitRepo, tmp_path: Path, config: dict[str, Any], refusal: str
) -> None:
    (repo.path.parent / "outside.txt").write_text("a secret beside the repository\n")
    repo.commit("a suite", {"promptfooconfig.yaml": yaml.safe_dump(config)})

    done = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", "--skip-unsupported", cwd=repo.path
    )

    assert done.returncode == 2, done.stdout
    assert refusal in done.stderr and "promptfooconfig.yaml:" in done.stderr
    assert not (repo.path / "evals").exists()
    assert "a secret beside" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("prompt", "refusal"),
    [
        # a hundred million turns: more than the sandbox's range gives
        ("{% for i in range(100000000) %}x{% endfor %}{{q}}", "OverflowError: Range too big"),
        # a text of 300 million characters, made in one step
        ("{{ q * 100000000 }}", "`*` would make more than 4,194,304 items"),
        # each step within bounds, the whole more than the file of fixtures holds
        ("{% for i in range(100000) %}{{ 'x' * 4000000 }}{% endfor %}", "renders more than"),
        # ten billion turns of a loop, nothing made: stopped at its time
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "did not render within 5 s",
        ),
        ("{{ q / 0 }}", "TypeError: unsupported operand"),
    ],
    ids=["range", "repeat", "too-long", "time", "raises"],
)
def test_a_template_the_import_cannot_render_is_refused_at_its_line_with_nothing_written(
    repo: GitRepo, prompt: str, refusal: str
) -> None:
    config = {
        "prompts": [prompt],
        "providers": ["openai:gpt-4.1-mini"],
        "tests": [{"vars": {"q": "why"}, "assert": [{"type": "contains", "value": "x"}]}],
    }
    repo.commit("a suite", {"promptfooconfig.yaml": yaml.safe_dump(config)})

    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    assert "promptfooconfig.yaml:2:" in done.stderr and "prompts[0]: the template" in done.stderr
    assert refusal in done.stderr
    assert "Traceback" not in done.stderr and "nothing was written" in done.stderr
    assert not (repo.path / "evals").exists()


def test_prompts_that_together_outgrow_the_file_of_fixtures_are_refused_at_the_test(
    repo: GitRepo,
) -> None:
    """Each prompt is 3 MB, under the 5 MiB a resource file may hold; two are over it."""
    config = """\
prompts: ["{{q}}"]
providers: ["openai:gpt-4.1-mini"]
tests:
  - vars: {q: "file://big.txt"}
    assert: [{type: contains, value: x}]
  - vars: {q: "file://big.txt"}
    assert: [{type: contains, value: y}]
"""
    big = "x" * 3_000_000 + "\n"
    repo.commit("a suite", {"promptfooconfig.yaml": config, "big.txt": big})

    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    assert "promptfooconfig.yaml:6:5: tests[1]:" in done.stderr
    assert "more than 5,242,880" in done.stderr
    assert "nothing was written" in done.stderr and "--name" in done.stderr
    assert not (repo.path / "evals").exists()


def test_lists_of_values_whose_combinations_outgrow_a_test_are_refused_before_any_is_made(
    repo: GitRepo,
) -> None:
    """Three lists of a hundred values: a million tests, every combination (five would be ten
    billion, more than any memory holds), refused at the longest list before one is made."""
    config = {
        "prompts": ["{{a}} {{b}} {{c}}"],
        "providers": ["openai:gpt-4.1-mini"],
        "tests": [
            {
                "vars": {
                    "a": [f"a{i}" for i in range(100)],
                    "b": [f"b{i}" for i in range(100)],
                    "c": [f"c{i}" for i in range(100)],
                },
                "assert": [{"type": "contains", "value": "a"}],
            }
        ],
    }
    repo.commit("a suite", {"promptfooconfig.yaml": yaml.safe_dump(config)})

    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    assert "promptfooconfig.yaml:" in done.stderr and "tests[0].vars.a" in done.stderr
    assert "make 1,000,000 tests (every combination of them)" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (repo.path / "evals").exists()


def test_a_fixture_whose_prompt_and_vars_outgrow_its_file_is_refused_at_its_test(
    repo: GitRepo,
) -> None:
    """A 3 MB prompt, and its 3 MB var beside it for the code scorer: `evalward validate`
    would refuse the file of fixtures, so the import writes none."""
    config = {
        "prompts": ["{{q}}"],
        "providers": ["openai:gpt-4.1-mini"],
        "tests": [
            {"vars": {"q": "file://big.txt"}, "assert": [{"type": "python", "value": "True"}]},
        ],
    }
    big = "x" * 3_000_000 + "\n"
    repo.commit("a suite", {"promptfooconfig.yaml": yaml.safe_dump(config), "big.txt": big})

    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("evalward: promptfooconfig.yaml:6: the import would write")
    assert "fixtures.yaml" in done.stderr and "over the 5 MiB" in done.stderr
    assert "nothing was written" in done.stderr
    assert not (repo.path / "evals").exists()


def test_providers_whose_names_agree_make_distinct_agents_and_evals(repo: GitRepo) -> None:
    config = {
        "description": "Two temperatures",
        "prompts": ["Say {{word}}."],
        "providers": [
            {"id": "openai:chat:gpt-4.1-mini", "config": {"temperature": 0}},
            {"id": "openai:chat:gpt-4.1-mini", "config": {"temperature": 1}},
            {"id": "openai:chat:gpt-4.1-mini-2025-04-14-with-a-long-name-a"},
            {"id": "openai:chat:gpt-4.1-mini-2025-04-14-with-a-long-name-b"},
        ],
        "tests": [{"vars": {"word": "hi"}, "assert": [{"type": "contains", "value": "hi"}]}],
    }
    repo.write({"promptfooconfig.yaml": json.dumps(config)})
    repo.commit("four providers, two names")
    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    suite = repo.path / "evals" / "two-temperatures"
    agents = [a["metadata"]["name"] for a in documents(suite / "agents.yaml")]
    evals = [e["metadata"]["name"] for e in documents(suite / "evals.yaml")]
    fixtures = documents(suite / "fixtures.yaml")
    assert len(set(agents)) == len(set(evals)) == len(fixtures) == 4
    assert agents[:2] == ["two-temperatures-gpt-4-1-mini", "two-temperatures-gpt-4-1-mini-2"]
    assert [a["spec"].get("temperature") for a in documents(suite / "agents.yaml")][:2] == [0, 1]
    selected = {tuple(sorted(f["metadata"]["labels"].items())) for f in fixtures}
    assert len(selected) == 4  # each Eval selects its own provider's fixture alone
    validated = evalward("validate", cwd=repo.path)
    assert validated.returncode == 0, validated.stdout + validated.stderr


CHAT_SUITE = {
    "promptfooconfig.yaml": """\
description: Weather chat
prompts:
  - file://chat.yaml
  - file://chat-messages.yaml
providers:
  - id: openai:chat:gpt-4.1-mini
    config:
      tools:
        - type: function
          function:
            name: get_weather
            description: The weather in a city.
            parameters: { type: object, properties: { city: { type: string } } }
derivedMetrics:
  - { name: f1, value: 2 * precision * recall / (precision + recall) }
defaultTest:
  assert:
    - { type: factuality, value: sunny }
tests:
  - vars: { city: Paris }
    assert: [{ type: contains, value: Paris, metric: precision }]
  - vars: { city: Rome }
    assert: [{ type: contains, value: Rome, metric: recall }]
""",
    "chat.yaml": """\
# The system prompt, then the question
- role: system
  content: You are a weather bot.
- role: user
  content: What is the weather in {{city}}?
""",
    "chat-messages.yaml": """\
messages:
  - role: user
    content: Weather in {{city}}?
""",
}


def test_chat_files_tools_and_derived_metrics_are_kept_or_named_once(repo: GitRepo) -> None:
    repo.write(CHAT_SUITE)
    repo.commit("a chat suite")
    refused = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)
    assert refused.returncode == 2
    # defaultTest's assertion is refused once, not once per test
    assert refused.stderr.count("defaultTest.assert[0]") == 1, refused.stderr
    assert "--skip-unsupported" in refused.stderr  # it can be left out, so the flag helps

    done = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", "--skip-unsupported", cwd=repo.path
    )
    assert done.returncode == 0, done.stderr
    # factuality, and the `messages:` file, which promptfoo sends OpenAI as an object
    assert [line for line in done.stdout.splitlines() if line.startswith("left out:")] == [
        line for line in done.stdout.splitlines() if "left out:" in line
    ]
    assert len([line for line in done.stdout.splitlines() if line.startswith("left out:")]) == 2
    assert "here the object `{messages: [...]}`" in done.stdout
    assert "derivedMetrics (f1) are not computed" in done.stdout
    suite = repo.path / "evals" / "weather-chat"
    (agent,) = documents(suite / "agents.yaml")
    assert agent["spec"]["tools"] == [
        {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    fixtures = documents(suite / "fixtures.yaml")
    inputs = [f["spec"]["input"] for f in fixtures]
    assert inputs[0] == {
        "type": "messages",
        "messages": [
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": "What is the weather in Paris?"},
        ],
    }
    assert len(inputs) == 2  # chat.yaml's column alone
    assert all(i["type"] == "messages" for i in inputs)
    assert evalward("validate", cwd=repo.path).returncode == 0


def test_skip_unsupported_is_offered_only_where_it_helps(repo: GitRepo) -> None:
    config = (
        "prompts: [hi]\nproviders: [openai:chat:gpt-4.1-mini]\n"
        "tests: [{vars: {}, assert: [{type: contains, value: hi}]}]\nscenarios: []\n"
    )
    repo.write({"promptfooconfig.yaml": config})
    repo.commit("a config with scenarios")
    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)
    assert done.returncode == 2
    assert "`scenarios` has no equivalent" in done.stderr
    assert "--skip-unsupported" not in done.stderr, done.stderr


def test_a_misspelt_key_is_named_with_the_one_it_meant_and_never_left_out(
    repo: GitRepo,
) -> None:
    """With --skip-unsupported a test whose `assert` was misspelt was left out as a part with
    no equivalent, and the import went on without it (exit 0)."""
    config = (
        "prompts: [hi]\nproviders: [openai:chat:gpt-4.1-mini, {id: openai:chat:gpt-4.1, lable: b}]"
        "\ntests:\n  - {vars: {}, asserts: [{type: contains, value: hi}]}\n"
        "  - {vars: {}, assert: [{type: contains, value: ho}]}\n"
    )
    repo.write({"promptfooconfig.yaml": config})
    repo.commit("a misspelt assert")
    done = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", "--skip-unsupported", cwd=repo.path
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "promptfooconfig.yaml:4:16: tests[0].asserts: `asserts` of a test has no equivalent in "
        "evalward (did you mean 'assert'?): fix its name; a misspelt key is not left out by "
        "--skip-unsupported"
    ) in done.stderr, done.stderr
    assert (
        "promptfooconfig.yaml:2:65: providers[1].lable: `lable` of a provider has no equivalent "
        "in evalward (did you mean 'label'?): fix its name"
    ) in done.stderr, done.stderr
    assert not (repo.path / "evals").exists()


def test_an_openai_compatible_vendor_becomes_an_endpoint(repo: GitRepo) -> None:
    config = {
        "prompts": ["Say hi."],
        "providers": ["mistral:mistral-large-latest"],
        "tests": [{"assert": [{"type": "contains", "value": "hi"}]}],
    }
    repo.write({"promptfooconfig.yaml": json.dumps(config)})
    repo.commit("a mistral suite")
    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    (agent,) = documents(next((repo.path / "evals").iterdir()) / "agents.yaml")
    assert agent["spec"]["models"] == ["mistral/mistral-large-latest"]
    settings = yaml.safe_load((repo.path / "evalward.yaml").read_text())
    assert settings["providers"] == {
        "mistral": {
            "api": "openai",
            "baseUrl": "https://api.mistral.ai/v1",
            "apiKeyEnv": "MISTRAL_API_KEY",
        }
    }
    assert evalward("validate", cwd=repo.path).returncode == 0


def test_a_yaml_chat_template_with_comments_becomes_a_conversation(repo: GitRepo) -> None:
    assert imported(EXAMPLES / "chat-yaml", repo).returncode == 0
    fixtures = documents(repo.path / "evals" / "weather-desk" / "fixtures.yaml")
    assert fixtures[0]["spec"]["input"] == {
        "type": "messages",
        "messages": [
            {"role": "system", "content": "You are the weather desk. Answer in one sentence."},
            {"role": "user", "content": "What is the weather like in Paris?"},
        ],
    }


def test_a_yaml_alias_bomb_is_refused_at_its_line_with_nothing_written(repo: GitRepo) -> None:
    """Nine aliases of nine lists each would expand to 387 million values."""
    anchors = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    anchors += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    config = "\n".join(
        [
            *anchors,
            'prompts: ["hi"]',
            'providers: ["openai:gpt-4.1-mini"]',
            "tests: [{vars: {x: *a9}}]",
        ]
    )
    repo.commit("a suite", {"promptfooconfig.yaml": config + "\n"})

    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    assert "promptfooconfig.yaml:6:10: invalid YAML: aliases expand to more than" in done.stderr
    assert "nothing was written" in done.stderr
    assert not (repo.path / "evals").exists()


def test_a_dollar_cost_check_on_a_model_with_no_price_is_named_at_import(repo: GitRepo) -> None:
    """A `cost` assertion on a model evalward cannot price would be an error at every run: the
    import says so, for that model alone, with what to write in evalward.yaml."""
    config = {
        "prompts": ["Say {{word}}."],
        "providers": ["openai:chat:acme-finetune-7", "openai:chat:gpt-4.1-mini"],
        "tests": [{"vars": {"word": "hi"}, "assert": [{"type": "cost", "threshold": 0.01}]}],
    }
    repo.commit("a priced and an unpriced model", {"promptfooconfig.yaml": json.dumps(config)})

    done = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)

    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stdout.splitlines() if "no price" in line]
    assert notes == [
        "note: 1 fixture(s) check `cost` in dollars on openai/acme-finetune-7, which evalward "
        "has no price for: those checks would be errors; give its price in evalward.yaml, "
        "`pricing: {openai/acme-finetune-7: {input: USD per million input tokens, output: USD "
        "per million output tokens}}`"
    ], done.stdout

    (repo.path / "evalward.yaml").write_text(
        "pricing:\n  openai/acme-finetune-7: { input: 0.3, output: 1.2 }\n"
    )
    again = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", "--output-dir", "again", cwd=repo.path
    )
    assert again.returncode == 0, again.stderr
    assert "no price" not in again.stdout, again.stdout


def test_a_test_s_own_rule_comes_over_defaulttest_s_and_a_wrong_one_is_located(
    repo: GitRepo,
) -> None:
    config = {
        "prompts": ["Say {{word}}"],
        "providers": ["openai:chat:gpt-4.1-mini"],
        "defaultTest": {"threshold": 0.5, "assertScoringFunction": "file://rules/all.py:decide"},
        "tests": [
            {"vars": {"word": "hi"}, "assert": [{"type": "contains", "value": "hi"}]},
            {
                "vars": {"word": "yo"},
                "threshold": 0,
                "assertScoringFunction": "file://rules/some.js:decide",
                "assert": [{"type": "contains", "value": "yo"}],
            },
        ],
    }
    rules = {"rules/all.py": "def decide(s, c):\n    return True\n", "rules/some.js": ""}
    repo.commit("a suite", {"promptfooconfig.yaml": yaml.safe_dump(config), **rules})

    done = evalward("import", "promptfoo", "promptfooconfig.yaml", "--name", "rules", cwd=repo.path)

    assert done.returncode == 0, done.stderr
    fixtures = documents(repo.path / "evals" / "rules" / "fixtures.yaml")
    rules_of = {
        f["metadata"]["name"]: (f["spec"]["passThreshold"], f["spec"]["scoringFunction"])
        for f in fixtures
    }
    assert rules_of == {
        "rules-test-1": (0.5, {"file": "rules/all.py:decide"}),
        "rules-test-2": (0, {"file": "rules/some.js:decide"}),
    }
    assert evalward("validate", cwd=repo.path).returncode == 0

    config["tests"][1]["threshold"] = "most"  # type: ignore[index]
    config["defaultTest"]["assertScoringFunction"] = "return true"  # type: ignore[index]
    (repo.path / "promptfooconfig.yaml").write_text(yaml.safe_dump(config))
    shutil.rmtree(repo.path / "evals")
    refused = evalward("import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path)
    assert refused.returncode == 2
    assert "`assertScoringFunction` names a file: file://path.js:function" in refused.stderr
    assert "a test's `threshold` is a number from 0 to 1" in refused.stderr


def test_settings_that_change_no_reply_and_text_parts_import_as_promptfoo_s_examples_write_them(
    repo: GitRepo,
) -> None:
    """ollama-comparison's `num_predict` and claude-vs-gpt's `cache_control`, and its
    `messages:` file as each provider is sent it: Ollama's completion API the file's JSON,
    Claude that JSON line by line."""
    config = {
        "prompts": ["file://prompt.yaml"],
        "providers": [
            {"id": "ollama:llama2", "config": {"num_predict": 1024}},
            {
                "id": "anthropic:messages:claude-3-5-sonnet-20241022",
                "config": {"temperature": 0, "cache_control": {"type": "ephemeral"}},
            },
        ],
        "tests": [
            {
                "vars": {"riddle": "What has keys?"},
                "assert": [{"type": "icontains", "value": "piano"}],
            }
        ],
    }
    prompt = {
        "messages": [
            {"role": "system", "content": [
                {"type": "text", "text": "Be concise", "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "user", "content": [{"type": "text", "text": "Answer: {{riddle}}"}]},
        ]
    }  # fmt: skip
    repo.commit(
        "a suite",
        {"promptfooconfig.yaml": yaml.safe_dump(config), "prompt.yaml": yaml.safe_dump(prompt)},
    )

    done = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", "--name", "riddles", cwd=repo.path
    )

    assert done.returncode == 0, done.stderr
    assert (
        "`cache_control` asks the provider to cache the prompt; it changes no reply" in done.stdout
    )
    suite = repo.path / "evals" / "riddles"
    agents = {d["metadata"]["name"]: d["spec"] for d in documents(suite / "agents.yaml")}
    tokens = {spec["models"][0]: spec.get("maxTokens") for spec in agents.values()}
    assert tokens == {"ollama/llama2": 1024, "anthropic/claude-3-5-sonnet-20241022": None}
    fixtures = documents(suite / "fixtures.yaml")
    sent = {f["spec"]["targetAgent"]: f["spec"]["input"]["payload"]["prompt"] for f in fixtures}
    as_json = {
        "messages": [
            {"role": "system", "content": [
                {"type": "text", "text": "Be concise", "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "user", "content": [{"type": "text", "text": "Answer: What has keys?"}]},
        ]
    }  # fmt: skip
    assert sent["riddles-llama2"] == json.dumps(as_json, indent=2, sort_keys=True)
    assert sent["riddles-claude-3-5-sonnet-202410"] == "\n".join(
        line.strip() for line in json.dumps(as_json, indent=2, sort_keys=True).splitlines()
    )
    assert evalward("validate", cwd=repo.path).returncode == 0


def test_azure_deployments_keep_their_dated_api_versions(
    repo: GitRepo, tmp_path: Path, served: dict[str, ReplyTableServer]
) -> None:
    """promptfoo's Azure examples and docs: each deployment's `apiVersion` (else promptfoo's
    2024-12-01-preview) becomes its provider's, a resource named by AZURE_API_BASE_URL alone
    is found there, and every call (chat and embeddings) goes to its deployment's dated URL
    with the key in `api-key`, as promptfoo sends it."""
    example = EXAMPLES / "azure"
    azure = served.setdefault("second", ReplyTableServer(*load_table(example / "second.yaml")))
    shutil.copytree(example, repo.path, dirs_exist_ok=True)
    point_at(repo.path, azure)
    repo.commit("the promptfoo suite")

    done = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", cwd=repo.path, **second_env(azure)
    )

    assert done.returncode == 0, done.stderr
    assert "deploymentName" not in done.stdout  # it names the id's deployment: nothing to say
    providers = yaml.safe_load((repo.path / "evalward.yaml").read_text())["providers"]
    at = azure.server.url + "/openai"
    assert providers == {
        "azure": {"api": "openai", "baseUrl": at, "apiKeyEnv": "AZURE_API_KEY",
                  "apiVersion": "2024-10-21"},
        "azure-2": {"api": "openai", "baseUrl": at, "apiKeyEnv": "AZURE_API_KEY",
                    "apiVersion": "2025-04-01-preview"},
        "azure-3": {"api": "openai", "baseUrl": at, "apiKeyEnv": "AZURE_API_KEY",
                    "apiVersion": "2024-12-01-preview"},
    }  # fmt: skip
    ran = evalward("run", "--output-dir", str(tmp_path / "out"), cwd=repo.path,
                   AZURE_API_KEY="azure-test-key")  # fmt: skip
    assert ran.returncode == 1, ran.stderr  # its second test fails, as under promptfoo
    targets = sorted({r.target for r in azure.received})
    assert targets == [
        "/openai/deployments/Mistral-Large-2411/chat/completions?api-version=2025-04-01-preview",
        "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-12-01-preview",
        "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21",
        "/openai/deployments/text-embedding-3-large/embeddings?api-version=2024-10-21",
    ]
    keys = {r.headers.get("api-key") or r.headers.get("Api-Key") for r in azure.received}
    assert keys == {"azure-test-key"}
    assert not any("authorization" in map(str.lower, r.headers) for r in azure.received)


def test_a_chat_file_promptfoo_sends_openai_as_an_object_is_refused_with_its_rewrite(
    repo: GitRepo,
) -> None:
    """promptfoo's examples/claude-vs-gpt as published: its prompt file is a `messages:`
    mapping, which promptfoo sends OpenAI as the request's `messages` (an object the API
    refuses) and Claude as the JSON text of the file, line by line."""
    published = EXAMPLES / "claude-vs-gpt" / "published"
    refused = imported(published, repo)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (
        "promptfooconfig.yaml:16:5: prompts[0]: `openai:chat:gpt-4o` is left out: promptfoo "
        "sends it this prompt, parsed, as the request's `messages`: here the object "
        "`{messages: [...]}`"
    ) in refused.stderr
    assert "the messages without `messages:` (`- role: system` …)" in refused.stderr
    assert not (repo.path / "evals").exists()

    done = evalward(
        "import", "promptfoo", "promptfooconfig.yaml", "--skip-unsupported", cwd=repo.path
    )
    assert done.returncode == 0, done.stderr
    suite = repo.path / "evals" / "claude-3-5-vs-gpt-4o"
    assert [a["spec"]["models"] for a in documents(suite / "agents.yaml")] == [
        ["anthropic/claude-3-5-sonnet-20241022"]
    ]
    fixtures = documents(suite / "fixtures.yaml")
    assert len(fixtures) == 15
    prompt = fixtures[0]["spec"]["input"]["payload"]["prompt"]
    assert prompt.splitlines()[:4] == ["{", '"messages": [', "{", '"role": "system",']
    assert json.loads(prompt)["messages"][1]["content"][0]["text"] == (
        "Answer this riddle:\nI speak without a mouth and hear without ears. I have no body, "
        "but I come alive with wind. What am I?\n"
    )
