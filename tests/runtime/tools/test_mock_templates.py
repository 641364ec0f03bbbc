"""A tool's mock output rendered over the call's arguments, in jinja2's sandbox, within its
time and sizes: a template is a pull request's code, rendered beside every run of the job
(in a child process held to its memory, where it does more than name arguments)."""

from __future__ import annotations

import json

import pytest

from evalward.runtime.tools import mock_templates
from evalward.runtime.tools.mock_templates import render_mock
from support.clirun import evalward, initialised
from support.gitrepo import GitRepo

pytestmark = pytest.mark.unit


def test_every_string_of_a_mock_output_renders_over_the_arguments() -> None:
    output = {"order": "{{ order_id }}", "lines": ["{{ qty * 2 }}", 3], "note": "plain"}
    assert render_mock(output, {"order_id": "A-7", "qty": 4}) == {
        "order": "A-7",
        "lines": ["8", 3],
        "note": "plain",
    }


def test_a_broken_template_is_the_tools_error_not_the_runs() -> None:
    shown = render_mock("{{ order_id ", {"order_id": "A-7"})
    assert shown.startswith("error: the mock output template failed:")


def test_a_template_cannot_reach_past_the_sandbox() -> None:
    """An agent's arguments are hostile, and so is a template that walks to Python's
    internals: the sandbox refuses it, and the refusal is the tool's output."""
    escape = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
    shown = render_mock(escape, {})
    assert shown.startswith("error: the mock output template failed:")
    assert "is unsafe" in shown


@pytest.mark.parametrize(
    ("template", "said"),
    [
        ("{{ 1 / 0 }}", "ZeroDivisionError: division by zero"),
        ("{{ order_id | wordwrap(0) }}", "ValueError"),
        ("{{ '%d' % order_id }}", "TypeError"),
        ("{{ 'x' * 10 ** 10 }}", "`*` would make more than"),
        ("{{ 'x' * 5000000 }}", "`*` would make more than"),
        ("{{ [1] * 5000000 }}", "`*` would make more than"),
        ("{{ 7 ** 99999999 }}", "`**` would make more than"),
    ],
)
def test_a_template_that_raises_or_grows_past_a_reply_is_the_tools_error(
    template: str, said: str
) -> None:
    shown = render_mock({"status": template}, {"order_id": "A-7"})["status"]
    assert shown.startswith("error: the mock output template failed:"), shown
    assert said in shown, shown
    assert render_mock("{{ 'ab' * 3 }}{{ 2 ** 10 }}", {}) == "ababab1024"  # within bounds


@pytest.mark.parametrize(
    "template",
    [
        "{{ order_id | center(3000000000) }}",
        "{{ order_id.ljust(3000000000) }}",
        "{{ ('a' * 4000000) | replace('a', 'a' * 300) }}",
        "{% set big = 'x' * 4000000 %}{% for i in range(100000) %}{{ big }}{% endfor %}",
    ],
    ids=[
        "a filter's width",
        "a method's width",
        "a replace that multiplies",
        "a loop of a long text",
    ],
)
def test_a_template_that_would_take_gigabytes_is_the_tools_error_and_the_next_renders(
    template: str,
) -> None:
    """One step no clock can stop (a filter, a method, the join of a loop's output) asks for
    gigabytes: held by the kernel to the renderer's memory, it is the tool's error, and the
    renderer answers the next call."""
    shown = render_mock({"status": template}, {"order_id": "A-7"})["status"]
    assert shown.startswith("error: the mock output template failed:"), shown[:300]
    assert "MiB" in shown or "renderer stopped" in shown, shown[:300]
    assert render_mock("{{ order_id }}", {"order_id": "A-7"}) == "A-7"


def test_an_output_past_what_a_reply_holds_is_the_tools_error() -> None:
    shown = render_mock("{% for i in range(5) %}{{ 'x' * 4000000 }}{% endfor %}", {})
    assert shown == (
        f"error: the mock output template made more than {mock_templates.REPLY_BYTES:,} bytes"
    )


def test_a_renderer_that_was_ended_between_calls_is_started_again() -> None:
    """The kernel's out-of-memory killer, or anyone, may end it: the next call starts one."""
    assert render_mock("{{ order_id }}", {"order_id": "A-7"}) == "A-7"
    process = mock_templates._RENDERER._process
    assert process is not None
    process.kill()
    process.wait()
    assert render_mock("{{ order_id }}", {"order_id": "B-8"}) == "B-8"


def test_a_template_that_would_loop_for_hours_is_stopped_at_its_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ten billion turns of a loop, no output between them: the clock is asked at every line
    the template runs, so it stops at its time, with the other outputs of the call."""
    monkeypatch.setattr(mock_templates, "RENDER_SECONDS", 0.2)
    forever = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    shown = render_mock({"a": "{{ order_id }}", "b": forever}, {"order_id": "A-7"})
    assert shown == {
        "a": "A-7",
        "b": "error: the mock output template did not render within 0.2 s",
    }


@pytest.mark.integration
@pytest.mark.parametrize(
    ("template", "said"),
    [
        ("{{ 1 / 0 }}", "ZeroDivisionError: division by zero"),
        ("{{ order_id | center(3000000000) }}", "it would take more than 1,024 MiB"),
    ],
    ids=["divides by zero", "centres in gigabytes"],
)
def test_a_head_whose_mock_template_raises_runs_to_its_verdict_without_a_traceback(
    repo: GitRepo, template: str, said: str
) -> None:
    """`evalward init`'s agent, its tool's mock divided by zero or centred in a text of
    3 GB: validate passes it (it parses), and the run's tool reply is the error, as the
    model would read it."""
    initialised(repo)
    agent = repo.path / "agents/assistant.yaml"
    text = agent.read_text(encoding="utf-8")
    assert text.count('"{{ order_id }}"') == 1
    agent.write_text(text.replace('"{{ order_id }}"', f'"{template}"'), encoding="utf-8")
    repo.commit("a mock that fails")

    ran = evalward(
        "run",
        ".",
        "--mock-script",
        "evals/mock-replies.yaml",
        "--no-history",
        "--no-cache",
        "--output-dir",
        str(repo.path / "out"),
        cwd=repo.path,
    )

    assert "Traceback" not in ran.stdout + ran.stderr
    assert ran.returncode == 0, ran.stderr
    results = json.loads((repo.path / "out/results.json").read_text())
    (run,) = [f for f in results["fixtures"] if f["fixture"] == "assistant-order-status"]
    (result,) = [s for s in run["trace"]["steps"] if s["type"] == "tool_result"]
    assert result["output"].startswith('{"order": "error: the mock output template failed: ')
    assert said in result["output"]
