"""`rnf` itself: a user's mistake is one line and exit 2, a bug a traceback and a line saying so, and every
subcommand is found in its component without importing the others."""

import subprocess
import sys

import click
import pytest
from rnf_cli import main as rnf_main
from rnf_cli.main import SUBCOMMANDS, main
from rnf_foundation.errors import UserError


def run(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return exit_info.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["no-such-command"], "Error: No such command 'no-such-command'."),
        (["run"], "Error: Missing argument 'SCENARIO_FILE'."),
        (["model", "--rtt-ms", "nan"], "Error: Invalid value for '--rtt-ms': 'nan' is not a finite number"),
        (["telemetry", "listen", "--bogus"], "Error: No such option '--bogus'."),
    ],
)
def test_a_user_error_is_one_line_and_exit_2(capsys, args, line):
    code, err = run(capsys, *args)
    assert (code, err.splitlines()) == (2, [line])


@pytest.fixture
def failing(monkeypatch):
    """A subcommand `fail` whose behaviour the test sets."""
    behaviour: list[BaseException] = []

    @click.command("fail")
    def fail() -> None:
        raise behaviour[0]

    monkeypatch.setitem(SUBCOMMANDS, "fail", rnf_main.Subcommand("tests:fail", "fails"))
    monkeypatch.setattr(rnf_main.LazyGroup, "get_command", lambda self, ctx, name: fail if name == "fail" else None)
    return behaviour


def test_a_user_error_raised_inside_a_command_is_one_line(capsys, failing):
    failing.append(UserError("scenario.toml: seed: Input should be greater than or equal to 0"))
    code, err = run(capsys, "fail")
    assert (code, err.splitlines()) == (2, ["Error: scenario.toml: seed: Input should be greater than or equal to 0"])


def test_a_bug_is_a_traceback_then_a_line_saying_so(capsys, failing):
    failing.append(ZeroDivisionError("division by zero"))
    code, err = run(capsys, "fail")
    lines = err.splitlines()
    assert code == rnf_main.BUG_EXIT
    assert lines[0] == "Traceback (most recent call last):" and "ZeroDivisionError: division by zero" in lines
    assert lines[-1] == (
        "rnf: a bug, not a problem with your input (ZeroDivisionError); please report it with the traceback above"
    )


def test_help_lists_every_subcommand_without_importing_the_components():
    code = (
        "import sys; from rnf_cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('rnf_') and m.split('.')[0] not in ('rnf_cli',)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    for name in SUBCOMMANDS:
        assert f"  {name} " in result.stdout
    assert result.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_subcommand_resolves_to_a_click_command(name):
    command = rnf_main.cli.get_command(click.Context(rnf_main.cli), name)
    assert isinstance(command, click.Command)
