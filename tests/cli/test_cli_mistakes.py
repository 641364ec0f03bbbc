"""User mistakes and hostile inputs at the command line: each gives one message naming the
file or the setting and exit 2, never a traceback and never a silent pass, and what a run has
already computed is not lost to a mistake it could have found before running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess

import pytest
import yaml

from evalward.resources.checks.assertions import JsonSchemaAssertion
from evalward.rundata.results import Status
from evalward.rundata.trace import StepType, Trace
from evalward.scoring.assertions import check
from fakes.http import LoopbackServer, Request, Response
from support.clirun import REPO_ROOT, evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

DEEP = 100_000
"""Far deeper than Python's parser recurses, whatever the interpreter's recursion limit."""


def refused(done: subprocess.CompletedProcess[str], *said: str) -> None:
    """A configuration error: exit 2, one message naming what it is about, no traceback."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    for words in said:
        assert words in done.stderr, done.stderr


@pytest.fixture
def started(repo: GitRepo) -> GitRepo:
    """A repository with what `evalward init` writes, committed: an agent, its Eval and a mock
    script that passes it."""
    assert evalward("init", cwd=repo.path).returncode == 0
    repo.commit("evalward init")
    return repo


# --- init ----------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["agents", ".github"])
def test_init_writes_nothing_where_a_file_stands_for_a_folder_it_needs(
    repo: GitRepo, where: str
) -> None:
    (repo.path / where).write_text("notes\n")

    done = evalward("init", cwd=repo.path)

    refused(done, f"{where}: a file", "needs a folder", "nothing was written")
    assert sorted(p.name for p in repo.path.iterdir()) == sorted([".git", where])


def test_init_writes_nothing_where_gitignore_is_a_folder(repo: GitRepo) -> None:
    (repo.path / ".gitignore").mkdir()

    done = evalward("init", cwd=repo.path)

    refused(done, ".gitignore: a folder", "nothing was written")
    assert sorted(p.name for p in repo.path.iterdir()) == [".git", ".gitignore"]


def test_init_keeps_a_gitignore_that_is_not_utf8_byte_for_byte(repo: GitRepo) -> None:
    # git reads .gitignore as bytes: a Latin-1 file name in it is the user's business
    (repo.path / ".gitignore").write_bytes(b"caf\xe9/\n")

    done = evalward("init", cwd=repo.path)

    assert done.returncode == 0, done.stderr
    assert (repo.path / ".gitignore").read_bytes() == b"caf\xe9/\n.evalward/\n"


# --- import promptfoo ----------------------------------------------------------------------

SUITE = {"prompts": ["Answer: {{question}}"], "providers": ["openai:gpt-4.1-mini"]}


def imported(repo: GitRepo, config: dict[str, object], *args: str) -> CompletedProcess[str]:
    repo.write({"promptfooconfig.yaml": yaml.safe_dump(config)})
    return evalward("import", "promptfoo", "promptfooconfig.yaml", *args, cwd=repo.path)


@pytest.mark.parametrize("output_dir", ["notes.txt", "notes.txt/suite"])
def test_import_into_a_file_is_refused_before_converting(repo: GitRepo, output_dir: str) -> None:
    repo.write({"notes.txt": "mine\n"})

    done = imported(
        repo, {**SUITE, "tests": [{"vars": {"question": "2+2?"}}]}, "--output-dir", output_dir
    )

    refused(done, "--output-dir", "notes.txt is a file")
    assert (repo.path / "notes.txt").read_text() == "mine\n"


def test_import_a_reference_to_a_link_that_loops_is_located(repo: GitRepo) -> None:
    (repo.path / "a.txt").symlink_to("b.txt")
    (repo.path / "b.txt").symlink_to("a.txt")

    done = imported(repo, {**SUITE, "tests": [{"vars": {"question": "file://a.txt"}}]})

    refused(done, "promptfooconfig.yaml:", "tests[0].vars.question", "'a.txt'", "loops")
    assert not (repo.path / "evals").exists()


def test_import_a_prompt_nested_past_any_json_parser_is_refused_at_its_line(
    repo: GitRepo,
) -> None:
    """promptfoo sends a chat model no reply for it (JSON it cannot read, or not messages)."""
    repo.write({"prompt.json": "[" * DEEP + "]" * DEEP})

    done = imported(repo, {**SUITE, "prompts": ["file://prompt.json"]})

    refused(done, "promptfooconfig.yaml:2:3: prompts[0]:", "looks like JSON", "nests too deeply")
    assert not (repo.path / "evals").exists()


def test_import_test_rows_nested_past_any_json_parser_are_located(repo: GitRepo) -> None:
    repo.write({"tests.jsonl": '{"vars": ' + "[" * DEEP + "]" * DEEP + "}\n"})

    done = imported(repo, {**SUITE, "tests": "file://tests.jsonl"})

    refused(done, "promptfooconfig.yaml:", "tests.jsonl", "nested too deeply")
    assert not (repo.path / "evals").exists()


@pytest.mark.parametrize(
    ("config", "said"),
    [
        (
            {**SUITE, "prompts": []},
            "promptfooconfig.yaml:1:1: prompts: an empty list: each test runs against every "
            "prompt and provider, so none would run; give at least one, a prompt",
        ),
        (
            {**SUITE, "prompts": {}},
            "promptfooconfig.yaml:1:1: prompts: an empty mapping: each test runs against",
        ),
        (
            {**SUITE, "providers": []},
            "promptfooconfig.yaml:3:1: providers: an empty list: each test runs against every "
            "prompt and provider, so none would run; give at least one, a provider id such as",
        ),
        (
            {**SUITE, "providers": {}},
            "promptfooconfig.yaml:3:1: providers: an empty mapping: each test runs against "
            "every prompt and provider, so none would run; give at least one, a provider id",
        ),
    ],
    ids=["no-prompts", "no-prompt-map", "no-providers", "no-provider-map"],
)
def test_import_blames_an_empty_prompts_or_providers_at_its_line_not_the_tests(
    repo: GitRepo, config: dict[str, object], said: str
) -> None:
    """Every test runs against each (prompt, provider) pair: none is there to convert, but
    the tests are not what is missing."""
    done = imported(repo, {**config, "tests": [{"vars": {"question": "2+2?"}}]})

    refused(done, "1 part of the promptfoo config", said)
    assert "no test is left" not in done.stderr
    assert not (repo.path / "evals").exists()


# --- run, merge --------------------------------------------------------------------------

MOCK = "evals/mock-replies.yaml"


CALL = '{ name: lookup_order, arguments: { order_id: "12345" } }'
"""The tool call `evalward init`'s mock script makes, of the one tool its agent is offered."""


def _scripted_call(started: GitRepo, call: str, *, agent: bool = True) -> None:
    """`evalward init`'s mock script with its agent's tool call rewritten (and the entry's
    `agent:` left out where `agent` is False)."""
    script = started.path / MOCK
    text = script.read_text(encoding="utf-8")
    assert CALL in text
    text = text.replace(CALL, call)
    if not agent:
        text = text.replace(
            "agent: assistant, fixture: assistant-order-status", "fixture: assistant-order-status"
        )
    script.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_scripted_call_of_a_tool_the_agent_lacks_is_warned_of_at_its_line_and_runs(
    started: GitRepo, command: str
) -> None:
    """A script may make the model call a wrong tool name on purpose, to see how the agent
    recovers: a name close to a real tool is warned of at the script's line with the tool
    meant, and validate passes and the run runs (its assertion then fails on the call)."""
    _scripted_call(started, '{ name: lookup_ordr, arguments: { order_id: "12345" } }')

    done = evalward(command, "--mock-script", MOCK, cwd=started.path)

    assert done.returncode == (0 if command == "validate" else 1), done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    said = done.stdout + done.stderr
    assert (
        f"warning: {MOCK}:33:23: replies[6].turns[0].toolCalls[0].name: the call is of tool "
        "'lookup_ordr', which agent 'assistant' is not offered (did you mean 'lookup_order'?)"
    ) in said
    if command == "validate":
        assert "its tools are lookup_order; fix its name, unless the call is meant to fail" in said
    else:
        assert "the model asked for tools the agent was not offered: 'lookup_ordr'" in said


def test_a_scripted_argument_the_tool_s_schema_lacks_is_warned_of_at_its_line(
    started: GitRepo,
) -> None:
    """The tool refuses it in the run; a script may pass it on purpose (how the agent copes
    with a refused call), so validate warns, with the argument meant, and passes."""
    _scripted_call(started, '{ name: lookup_order, arguments: { orderid: "12345" } }')

    done = evalward("validate", "--mock-script", MOCK, cwd=started.path)

    assert done.returncode == 0, done.stderr
    assert f"warning: {MOCK}:33:" in done.stdout, done.stdout
    assert (
        "replies[6].turns[0].toolCalls[0].arguments.orderid: 'orderid' is no "
        "argument of tool 'lookup_order' (did you mean 'order_id'?), whose schema lists "
        "order_id and no other; fix its name, unless the call is meant to fail"
    ) in done.stdout


def test_a_scripted_call_of_no_agent_s_tool_is_checked_against_every_agent_s(
    started: GitRepo,
) -> None:
    """A tool no agent is offered may be called on purpose (how the agent copes with a tool
    it lacks): a warning at its line, and validate passes; a close one is warned of too,
    with the tool meant."""
    _scripted_call(started, "{ name: search_web, arguments: {} }", agent=False)

    done = evalward("validate", "--mock-script", MOCK, cwd=started.path)

    assert done.returncode == 0, done.stderr
    assert (
        f"warning: {MOCK}:33:23: replies[6].turns[0].toolCalls[0].name: the call is of tool "
        "'search_web', which no agent is offered: the run answers it that there is no such "
        "tool, and runs none; the tools are lookup_order; name one of them, unless the call "
        "is meant to fail"
    ) in done.stdout + done.stderr

    script = started.path / MOCK
    script.write_text(script.read_text(encoding="utf-8").replace("search_web", "Lookup_Order"))
    done = evalward("validate", "--mock-script", MOCK, cwd=started.path)
    assert done.returncode == 0, done.stderr
    assert (
        f"warning: {MOCK}:33:23: replies[6].turns[0].toolCalls[0].name: the call is of tool "
        "'Lookup_Order', which no agent is offered (did you mean 'lookup_order'?)"
    ) in done.stdout + done.stderr


@pytest.mark.parametrize("shard", [[], ["--shard", "1/2"]], ids=["run", "shard"])
@pytest.mark.parametrize("output_dir", ["notes.txt", "notes.txt/out"])
def test_run_into_a_file_is_refused_before_it_runs(
    started: GitRepo, output_dir: str, shard: list[str]
) -> None:
    started.write({"notes.txt": "mine\n"})

    done = evalward(
        "run", "--mock-script", MOCK, "--output-dir", output_dir, *shard, cwd=started.path
    )

    refused(done, "--output-dir", "notes.txt is a file")
    assert "runs planned" not in done.stderr  # nothing ran, so no result was lost
    assert (started.path / "notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize("command", ["run", "merge"])
def test_a_folder_evalward_cannot_write_is_refused_before_it_runs(
    started: GitRepo, command: str
) -> None:
    """/proc takes no folder of ours, whoever runs the command (root too): the run it would
    lose is never started."""
    args = ["--mock-script", MOCK] if command == "run" else ["parts/shard-1-of-1.json"]

    done = evalward(command, *args, "--output-dir", "/proc/evalward-out", cwd=started.path)

    refused(done, "--output-dir", "evalward cannot write in /proc", "give a folder")
    assert "runs planned" not in done.stderr


def test_merge_into_a_file_is_refused(started: GitRepo) -> None:
    part = evalward(
        "run", "--mock-script", MOCK, "--shard", "1/1", "--output-dir", "parts", cwd=started.path
    )
    assert part.returncode == 0, part.stderr
    started.write({"notes.txt": "mine\n"})

    done = evalward(
        "merge", "parts/shard-1-of-1.json", "--output-dir", "notes.txt", cwd=started.path
    )

    refused(done, "--output-dir", "notes.txt is a file")
    assert (started.path / "notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_number_of_reps_says_repsperfixture_takes_it(started: GitRepo, command: str) -> None:
    """`reps: 3` reads as three runs per fixture; `reps` takes only adaptive `{min, max}`."""
    evals = started.path / "evals" / "assistant.yaml"
    text = evals.read_text(encoding="utf-8")
    assert "execution: { reps: { min: 1, max: 8 } }" in text
    evals.write_text(text.replace("{ reps: { min: 1, max: 8 } }", "{ reps: 3 }"))

    done = evalward(command, "--mock-script", MOCK, cwd=started.path)

    refused(
        done,
        "evals/assistant.yaml:46:16: spec.execution.reps: expected a mapping; found 3 (for a "
        "fixed number of runs per fixture, `repsPerFixture: 3`; adaptive reps are `{min, max}`)",
    )


@pytest.mark.parametrize(
    ("option", "name", "said"),
    [
        ("--fixture", "assistant-eval", "an Eval, not a fixture; select it with --eval"),
        ("--eval", "assistant-order-status", "a fixture, not an Eval; select it with --fixture"),
        ("--eval", "assistant", "an agent, not an Eval; select it with --agent"),
        ("--agent", "assistant-eval", "an Eval, not an agent; select it with --eval"),
    ],
)
def test_a_name_given_to_the_option_of_another_kind_says_which_option_selects_it(
    started: GitRepo, option: str, name: str, said: str
) -> None:
    """The nearest name of the kind asked for (a fixture for an Eval's name) led astray."""
    done = evalward("run", "--mock-script", MOCK, option, name, cwd=started.path)

    refused(done, f"{option} {name}: {said} {name}")
    assert "did you mean" not in done.stderr
    assert "runs planned" not in done.stderr


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        ("--json", "no results to print (the part's runs go to shard-1-of-2.json in"),
        ("--allow-incomplete", "give it to `evalward merge`, which gates the parts"),
    ],
)
def test_a_part_refuses_what_only_a_report_or_a_gate_reads_before_it_runs(
    started: GitRepo, flag: str, said: str
) -> None:
    """A part neither reports nor gates: --json printed the part's file name, not JSON, and
    --allow-incomplete let nothing pass."""
    done = evalward("run", "--mock-script", MOCK, "--shard", "1/2", flag, cwd=started.path)

    refused(done, f"{flag} with --shard: --shard 1/2 runs one part of the plan", said)
    assert done.stdout == ""
    assert "runs planned" not in done.stderr
    assert not (started.path / ".evalward" / "shards").exists()


@pytest.mark.parametrize("name", ["results.json", "comment.md"])
def test_a_folder_where_a_run_writes_one_of_its_files_is_refused_before_the_run(
    started: GitRepo, name: str
) -> None:
    (started.path / "out" / name).mkdir(parents=True)

    done = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)

    refused(done, "--output-dir", f"{name} is not a file", "remove it or give another folder")
    assert sorted(p.name for p in (started.path / "out").iterdir()) == [name]


# --- diff, merge, promote --------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["diff", "deep.json", "deep.json"],
        ["merge", "deep.json"],
        ["promote", "--agent", "assistant", "deep.json"],
    ],
    ids=["diff", "merge", "promote"],
)
def test_a_file_nested_past_any_json_parser_is_refused_by_name(
    started: GitRepo, command: list[str]
) -> None:
    started.write({"deep.json": '{"evals": ' + "[" * DEEP + "]" * DEEP + ', "fixtures": []}'})

    done = evalward(*command, cwd=started.path)

    refused(done, "deep.json: not JSON", "nested too deeply")


def _not_a_file(path: Path, shape: str) -> None:
    if shape == "fifo":
        os.mkfifo(path)  # opening it to read would wait for a writer for ever
    elif shape == "link":
        path.symlink_to("/dev/zero")  # reading it would never end
    else:
        with path.open("wb") as sparse:  # larger than any bound, and no disk used
            sparse.truncate(4 << 30)


@pytest.mark.parametrize("shape", ["fifo", "link", "huge"])
@pytest.mark.parametrize(
    "command",
    [
        ["diff", "part.json", "part.json"],
        ["merge", "part.json"],
        ["promote", "--agent", "assistant", "part.json"],
    ],
    ids=["diff", "merge", "promote"],
)
def test_a_file_another_job_or_an_agent_wrote_that_is_not_a_plain_file_is_refused_by_name(
    started: GitRepo, command: list[str], shape: str
) -> None:
    """A shard part, a results.json or a transcript comes from a job or an agent that ran a
    pull request's code: a FIFO, a link to a device or a file of gigabytes is refused."""
    _not_a_file(started.path / "part.json", shape)

    done = evalward(*command, cwd=started.path)

    said = {"fifo": "is a FIFO", "link": "is a symbolic link", "huge": "is larger than"}
    refused(done, "part.json: cannot read", said[shape])


@pytest.mark.parametrize("shape", ["fifo", "link", "huge"])
def test_a_mock_script_that_is_not_a_plain_file_is_refused_by_name(
    started: GitRepo, shape: str
) -> None:
    _not_a_file(started.path / "replies.yaml", shape)

    done = evalward("run", "--mock-script", "replies.yaml", cwd=started.path)

    said = {"fifo": "is a FIFO", "link": "is a symbolic link", "huge": "is larger than"}
    refused(done, "replies.yaml", "cannot read the mock script", said[shape])


@pytest.mark.parametrize(
    ("command", "given", "kind"),
    [
        ("run", "evals/assistant.yaml", "EvalFixture"),
        ("validate", "agents/assistant.yaml", "Agent"),
    ],
)
def test_a_resource_file_given_as_the_mock_script_is_said_to_be_one_once(
    started: GitRepo, command: str, given: str, kind: str
) -> None:
    """Not each of its top-level fields as unknown to a script: the file is the wrong one."""
    done = evalward(command, "--mock-script", given, cwd=started.path)

    refused(
        done,
        f"{given}:3:1: a resource definition (`kind: {kind}`), not a mock script",
        "`replies: [{match, turns}, ...]`",
    )
    assert "unknown field" not in done.stderr
    assert done.stderr.count("not a mock script") == 1


def test_diff_of_a_results_json_from_another_schema_says_how_to_read_it(
    started: GitRepo,
) -> None:
    done = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)
    assert done.returncode == 0, done.stderr
    newer = json.loads((started.path / "out" / "results.json").read_text())
    newer["schemaVersion"] = 99
    started.write({"newer.json": json.dumps(newer)})

    done = evalward("diff", "out/results.json", "newer.json", cwd=started.path)

    refused(done, "newer.json: results schemaVersion 99", "with the evalward version that wrote it")


@pytest.mark.parametrize("format", ["openai", "anthropic"])
def test_promote_names_the_message_that_is_not_an_object(started: GitRepo, format: str) -> None:
    started.write({"trace.json": json.dumps({"messages": [{"role": "user", "content": "hi"}, 7]})})

    done = evalward("promote", "--format", format, "--agent", "assistant", "trace.json",
                    cwd=started.path)  # fmt: skip

    refused(done, f"trace.json: not a valid {format} trace", "messages[1] is 7")


def test_promote_names_an_empty_contains_flag(started: GitRepo) -> None:
    """Every output contains the empty text: the check would pass whatever the agent said."""
    trace = str(REPO_ROOT / "tests" / "data" / "traces" / "openai.json")

    done = evalward("promote", trace, "--agent", "assistant", "--contains", "shipped",
                    "--contains", "", cwd=started.path)  # fmt: skip

    refused(done, '--contains "": the text the output must contain is empty', "give the text")
    assert "spec.assertions" not in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("rubric", ["", "   "])
def test_promote_names_an_empty_rubric_flag(started: GitRepo, rubric: str) -> None:
    """An empty rubric added no judge assertion, and nothing said so."""
    trace = str(REPO_ROOT / "tests" / "data" / "traces" / "openai.json")

    done = evalward("promote", trace, "--agent", "assistant", "--rubric", rubric,
                    cwd=started.path)  # fmt: skip

    refused(done, f"--rubric {rubric!r}: the judge's rubric is empty", "leave out --rubric")
    assert done.stdout == ""


# --- an agent's output ----------------------------------------------------------------------


@pytest.mark.parametrize("field", ["", ', field: "0"'], ids=["message", "field"])
def test_an_output_nested_past_any_json_parser_fails_its_fixture_not_the_run(
    started: GitRepo, field: str
) -> None:
    evals = (started.path / "evals" / "assistant.yaml").read_text()
    mock = (started.path / MOCK).read_text()
    started.commit(
        "the agent answers JSON nested 100,000 deep",
        {
            "evals/assistant.yaml": evals.replace(
                "- { type: contains, value: shipped }",
                f"- {{ type: jsonSchema, schema: {{ type: array }}{field} }}",
            ),
            MOCK: mock.replace(
                "content: Order 12345 has shipped.", f"content: '{'[' * DEEP}{']' * DEEP}'"
            ),
        },
    )

    done = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)

    assert done.returncode == 1, done.stderr  # the gate fails on that fixture; nothing crashed
    results = json.loads((started.path / "out" / "results.json").read_text())
    fixture = next(f for f in results["fixtures"] if f["fixture"] == "assistant-order-status")
    checked = next(a for a in fixture["assertions"] if a["type"] == "jsonSchema")
    assert fixture["status"] != "pass" and checked["status"] != "pass", checked
    assert "the final message is not JSON" in checked["message"], checked


def test_an_output_nested_deeper_than_a_recursive_schema_can_follow_fails_its_assertion() -> None:
    depth = sys.getrecursionlimit() // 2  # parsed, but followed by the schema 3 calls a level
    trace = Trace()
    trace.add(StepType.final, content="[" * depth + "]" * depth)
    schema = {"type": "array", "items": {"$ref": "#"}}
    assertion = JsonSchemaAssertion.model_validate({"type": "jsonSchema", "schema": schema})

    status, message = check(assertion, trace)

    assert status is Status.failed
    assert "nested too deeply to check against the schema" in message


# --- a JSON Schema's $ref ------------------------------------------------------------------


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[Request]]]:
    """A loopback server that serves a schema every value passes, and the requests it got: a
    `$ref` to it, were it followed, would let whoever runs it choose the verdict."""
    asked: list[Request] = []

    def serve(request: Request) -> Response:
        asked.append(request)
        return Response(body={})

    server = LoopbackServer(serve)
    try:
        yield server.url, asked
    finally:
        server.close()


def _at(text: str, marker: str) -> str:
    """`line:column` of `marker`'s first character in `text` (1-based, as messages say)."""
    before = text[: text.index(marker)]
    return f"{before.count(chr(10)) + 1}:{len(before) - before.rfind(chr(10))}"


@pytest.mark.parametrize("where", ["jsonSchema", "tool"])
@pytest.mark.parametrize(
    "ref", ["#/defs/nope", "#/$ref", "{url}/s.json", "file://{repo}/evals/s.json"]
)
def test_a_schema_ref_to_no_schema_within_it_is_refused_at_its_line_and_never_fetched(
    started: GitRepo, schema_host: tuple[str, list[Request]], where: str, ref: str
) -> None:
    url, asked = schema_host
    ref = ref.format(url=url, repo=started.path)
    if where == "jsonSchema":
        path, old = "evals/assistant.yaml", "- { type: contains, value: shipped }"
        new, marker = f'- {{ type: jsonSchema, schema: {{ $ref: "{ref}" }} }}', "schema: {"
        mock = (started.path / MOCK).read_text()
        mock = mock.replace("content: Order 12345 has shipped.", """content: '{"a": 1}'""")
        started.commit("the agent answers JSON", {MOCK: mock})
    else:
        path, old = "agents/assistant.yaml", "properties: { order_id: { type: string } }"
        new, marker = f'properties: {{ order_id: {{ $ref: "{ref}" }} }}', "parameters:"
    text = (started.path / path).read_text().replace(old, new)
    started.commit(f"a $ref to {ref}", {path: text, "evals/s.json": "{}"})

    for command in (["validate"], ["run", "--mock-script", MOCK, "--output-dir", "out"]):
        done = evalward(*command, cwd=started.path)

        refused(
            done,
            f"{path}:{_at(text, marker)}: ",
            f"$ref {ref!r} ",
            "expected a $ref to a part of the schema, such as '#/$defs/name'",
        )
    assert asked == []


def _with_schema(started: GitRepo, schema: str) -> str:
    """Commit a jsonSchema assertion of `schema` (YAML flow) and an agent that answers a JSON
    object; the Eval file's text."""
    mock = (started.path / MOCK).read_text()
    mock = mock.replace("content: Order 12345 has shipped.", """content: '{"a": 1}'""")
    text = (started.path / "evals/assistant.yaml").read_text()
    text = text.replace(
        "- { type: contains, value: shipped }", f"- {{ type: jsonSchema, schema: {schema} }}"
    )
    started.commit("a jsonSchema assertion", {MOCK: mock, "evals/assistant.yaml": text})
    return text


DRAFT3 = '"$schema": "http://json-schema.org/draft-03/schema#"'


def test_a_draft_03_schema_that_extends_one_schema_loads_and_scores(started: GitRepo) -> None:
    """draft-03 allows `extends` a schema or a list of them; jsonschema checks either."""
    _with_schema(started, f"{{ {DRAFT3}, extends: {{ type: object }} }}")

    assert evalward("validate", cwd=started.path).returncode == 0
    done = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=started.path)

    assert done.returncode == 0, done.stdout + done.stderr


def test_a_schema_whose_refs_cannot_be_read_is_refused_at_its_line(started: GitRepo) -> None:
    """An `id` that is no address, where draft-03 checks none, leaves its $refs unreadable."""
    text = _with_schema(started, f"{{ {DRAFT3}, definitions: {{ a: {{ id: [] }} }} }}")

    done = evalward("validate", cwd=started.path)

    refused(
        done,
        f"evals/assistant.yaml:{_at(text, 'schema: {')}: ",
        "the schema could not be read for its $refs",
        "does not have the shape draft 03 gives that part",
    )


@pytest.mark.parametrize(
    "schema",
    [
        '{ "$ref": "#" }',
        '{ "$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveRef": "#" }',
        '{ "$defs": { a: { "$ref": "#/$defs/b" }, b: { "$ref": "#/$defs/a" } }, '
        '"$ref": "#/$defs/a" }',
        '{ "$defs": { a: { allOf: [{ "$ref": "#/$defs/a" }] } }, "$ref": "#/$defs/a" }',
        '{ not: { "$ref": "#" } }',
        '{ oneOf: [{ type: string }, { "$ref": "#/$defs/b" }], '
        '"$defs": { b: { if: { "$ref": "#" } } } }',
        '{ anyOf: [{ "$ref": "#" }, { type: string }] }',
    ],
    ids=["ref", "recursiveRef", "two", "allOf", "not", "oneOf-if", "anyOf-first"],
)
def test_a_schema_ref_that_leads_back_to_itself_is_refused_at_its_line(
    started: GitRepo, schema: str
) -> None:
    """Checked, it would check the value against itself until nested too deeply."""
    text = _with_schema(started, schema)

    done = evalward("validate", cwd=started.path)

    refused(
        done,
        f"evals/assistant.yaml:{_at(text, 'schema: {')}: ",
        "leads back to itself before any of the value is checked",
    )


@pytest.mark.parametrize("ref", ["#/defs/nope", "{url}/s.json"])
def test_a_schema_ref_to_no_schema_within_it_past_the_load_check_is_an_error_unfetched(
    schema_host: tuple[str, list[Request]], ref: str
) -> None:
    """A schema that reached scoring without the load check (which refuses it) does not make
    the check pass, fail on a traceback, or fetch what it names."""
    url, asked = schema_host
    ref = ref.format(url=url)
    trace = Trace()
    trace.add(StepType.final, content='{"a": 1}')
    schema = {"properties": {"a": {"$ref": ref}}}
    assertion = JsonSchemaAssertion.model_construct(type="jsonSchema", json_schema=schema)

    status, message = check(assertion, trace)

    assert status is Status.error, message
    assert "expected a $ref to a part of the schema" in message, message
    assert asked == []


# --- evalward.yaml ------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["link-to-nothing", "folder"])
def test_an_evalward_yaml_that_is_not_a_file_is_refused_not_ignored(
    started: GitRepo, shape: str
) -> None:
    # ignored, it would leave the run with no `defaults` and every YAML of the repository
    config = started.path / "evalward.yaml"
    config.unlink()
    if shape == "folder":
        config.mkdir()
    else:
        config.symlink_to("config/evalward.yaml")

    for command in (["validate"], ["plan"], ["run", "--mock-script", MOCK]):
        done = evalward(*command, cwd=started.path)

        refused(done, "evalward.yaml: not a file")


def test_an_agentv_jsonl_case_nested_too_deeply_is_refused_at_its_file(tmp_path: Path) -> None:
    """An AgentV suite's `tests: ./cases.jsonl`, the PR's to write: a line nested past the
    parser is a located problem, not an internal error."""
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "suite.eval.yaml").write_text(
        "name: suite\nexecution: {target: bot}\ntests: ./cases.jsonl\n"
    )
    (tmp_path / "evals" / "cases.jsonl").write_text("[" * DEEP + "]" * DEEP + "\n")

    done = evalward("validate", str(tmp_path), cwd=tmp_path)

    refused(done, "cases.jsonl: invalid JSON line", "nested too deeply")


@pytest.mark.parametrize(
    "field",
    [
        "systemFile: {name}",
        "mcpServers: {{ find: {{ command: [python3, {name}] }} }}",
        "environment: {{ python: {name} }}",
    ],
)
def test_a_file_name_longer_than_the_file_system_allows_is_a_missing_file(
    repo: GitRepo, field: str
) -> None:
    # the machine refuses to look such a name up (ENAMETOOLONG): no file can have it
    name = "tools/" + "x" * 300 + ".py"
    agent = "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: bot }\n"
    agent += f"spec:\n  models: [openai/gpt-4.1-mini]\n  {field.format(name=name)}\n"
    agent += "  tools: [{ name: look, command: [python3, tools/look.py] }]\n"
    repo.commit("an agent", {"agents/bot.yaml": agent, "tools/look.py": "print('found')\n"})

    done = evalward("validate", cwd=repo.path)

    refused(done, "agents/bot.yaml:6:", "x" * 300)


RUN = ["run", "--no-history", "--mock-script", MOCK]


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["validate", "x" * 300], "argument path: "),
        (["status", "x" * 300], "argument path: "),
        ([*RUN, "--output-dir", "x" * 300], "argument --output-dir: "),
        ([*RUN, "--reps", "99999999999999999999999"], "argument --reps: expected at most 1000"),
        ([*RUN, "--shard", "1/99999999999999999999"], "--shard: expected i/n with 1 <= i <= n"),
    ],
    ids=["root", "status root", "output folder", "reps", "shards"],
)
def test_an_argument_beyond_what_the_machine_holds_is_refused(
    started: GitRepo, command: list[str], said: str
) -> None:
    # a name longer than the file system holds raised from is_dir (an internal error); a
    # count of reps planned runs without end; a count of parts could not be held in memory
    done = evalward(*command, cwd=started.path)

    refused(done, said)


def test_a_program_named_with_a_nul_is_a_missing_program(repo: GitRepo) -> None:
    # no file is named with a NUL: looking one up raised ValueError (an internal error)
    agent = "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: bot }\n"
    agent += "spec:\n  models: [openai/gpt-4.1-mini]\n"
    agent += '  tools: [{ name: look, command: ["python3\\0", tools/look.py] }]\n'
    repo.commit("an agent", {"agents/bot.yaml": agent, "tools/look.py": "print('found')\n"})

    done = evalward("validate", cwd=repo.path)

    refused(done, "agents/bot.yaml:6:")
