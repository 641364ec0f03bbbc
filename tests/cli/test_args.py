"""The arguments several commands share (`cli/_args.py`): numbers and amounts refused with
what was expected, and an output folder refused as the command starts when a file stands
where it or one of the run's files must go."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from evalward.cli._args import (
    add_mock,
    add_root,
    add_selection,
    nameable,
    output_folder,
    positive,
    positive_amount,
    reps,
    run_output_folder,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("two", "expected a whole number, got 'two'"),
        ("0", "expected 1 or more, got 0"),
        ("1.5", "expected a whole number, got '1.5'"),
    ],
)
def test_a_count_is_a_whole_number_of_one_or_more(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        positive(text)
    assert positive("3") == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cheap", "expected an amount such as 0.50, got 'cheap'"),
        ("0", "expected an amount above 0, got 0"),
        ("-1", "expected an amount above 0, got -1"),
        ("inf", "expected an amount above 0, got inf"),
        ("nan", "expected an amount above 0, got nan"),
    ],
)
def test_an_amount_is_above_zero_and_finite(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        positive_amount(text)
    assert positive_amount("0.50") == 0.5


def test_a_file_on_the_way_to_the_output_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x", encoding="utf-8")
    with pytest.raises(argparse.ArgumentTypeError, match=r"taken is a file, where evalward"):
        output_folder(str(tmp_path / "taken" / "out"))
    missing = str(tmp_path / "new" / "out")
    assert output_folder(missing) == missing  # created later, by the command


def test_a_folder_where_a_run_file_goes_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "results.json").mkdir()
    with pytest.raises(argparse.ArgumentTypeError, match=r"results.json is not a file"):
        run_output_folder(str(tmp_path))
    assert run_output_folder(str(tmp_path / "fresh")) == str(tmp_path / "fresh")


def test_reps_are_bounded_as_an_evals_own() -> None:
    # a larger count planned runs without end (1e23 of them for `--reps 99999999999999999999999`)
    with pytest.raises(argparse.ArgumentTypeError, match="expected at most 1000"):
        reps("99999999999999999999999")
    assert reps("1000") == 1000


def test_a_name_longer_than_a_file_system_holds_is_refused(tmp_path: Path) -> None:
    # the machine refuses to look it up (ENAMETOOLONG), where a missing file is not there
    long = "x" * 256
    for text in (long, f"{tmp_path}/{long}/out", "é" * 128):
        with pytest.raises(argparse.ArgumentTypeError, match=r"a name of 256 bytes"):
            nameable(text)
        with pytest.raises(argparse.ArgumentTypeError, match=r"a name of 256 bytes"):
            output_folder(text)
    assert nameable("x" * 255) == "x" * 255


def test_the_shared_options_parse_as_a_command_line_gives_them() -> None:
    parser = argparse.ArgumentParser()
    add_root(parser)
    add_selection(parser)
    add_mock(parser)
    args = parser.parse_args(
        [
            "repo",
            "--base",
            "main",
            "--eval",
            "a",
            "--eval",
            "b",
            "--reps",
            "2",
            "--mock-script",
            "m.yaml",
        ]
    )
    assert (args.path, args.base, args.eval, args.agent, args.reps, args.mock_script) == (
        "repo",
        "main",
        ["a", "b"],
        [],
        2,
        "m.yaml",
    )
    assert parser.parse_args([]).path == "."


def test_each_option_that_narrows_the_plan_is_repeatable_and_its_help_says_so() -> None:
    """docs/cli.md: `--agent`, `--eval` and `--fixture` are each repeatable; the help says what
    the parser does."""
    parser = argparse.ArgumentParser()
    add_selection(parser)
    args = parser.parse_args(["--agent", "a", "--agent", "b", "--fixture", "x", "--fixture", "y"])
    assert (args.agent, args.fixture) == (["a", "b"], ["x", "y"])
    helps = {a.dest: a.help for a in parser._actions}
    for dest in ("agent", "eval", "fixture"):
        assert "(repeatable)" in str(helps[dest]), dest


@pytest.mark.parametrize(
    ("argv", "usage", "said"),
    [
        (
            ["run", "--no-cahce"],
            "usage: evalward run ",
            "evalward run: error: unrecognized arguments: --no-cahce (did you mean --no-cache?)",
        ),
        (
            ["plan", "--mock-scirpt=replies.yaml"],
            "usage: evalward plan ",
            "unrecognized arguments: --mock-scirpt=replies.yaml (did you mean --mock-script?)",
        ),
        (["--bogus"], "usage: evalward [", "evalward: error: unrecognized arguments: --bogus"),
    ],
)
def test_an_option_no_command_takes_is_refused_with_the_command_s_usage_and_the_nearest(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, said: str
) -> None:
    """argparse refuses an option a subcommand does not take with the top-level usage and
    no hint: `evalward run --no-cahce` showed `evalward [-h] [--version] COMMAND ...`."""
    from evalward.cli import main

    with pytest.raises(SystemExit) as exited:
        main(argv)

    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage), err
    assert said in err, err
