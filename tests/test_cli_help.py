"""``groupcoord ... --help`` is readable at 80 columns: whole option names with a metavar
naming their value, defaults shown, no type column (``<bool>``), no ``{file}`` in the usage
line, and a bad choice says which values are allowed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from groupcoord.cli import app

runner = CliRunner()
COMMANDS = list(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
#: the commands of command groups (``groupcoord users add``), as argument lists
SUBCOMMANDS = [
    (group, sub)
    for group, cmd in typer.main.get_command(app).commands.items()  # type: ignore[attr-defined]
    for sub in getattr(cmd, "commands", {})
]


def _command(*names: str) -> object:
    cmd: object = typer.main.get_command(app)
    for name in names:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    return cmd


def help_text(*command: str) -> str:
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def flat(text: str) -> str:
    """The help with its line wrapping undone, for phrases the wrapper may split."""
    return " ".join(text.split())


def test_the_commands_are_all_checked() -> None:
    assert COMMANDS == ["assign", "bench", "serve", "simulate", "sweep", "analyze", "users"]
    assert SUBCOMMANDS == [("users", "add"), ("users", "remove"), ("users", "list")]


@pytest.mark.parametrize("command", ["", *COMMANDS, *(" ".join(c) for c in SUBCOMMANDS)])
def test_help_fits_80_columns_without_type_noise(command: str) -> None:
    text = help_text(*command.split())
    too_long = [line for line in text.splitlines() if len(line) > 80]
    assert not too_long, too_long
    for noise in ("<bool>", "<str>", "<int", "<float", "<path>", "<list", "…", "\\["):
        assert noise not in text, (noise, text)
    assert "{" not in text.splitlines()[0]  # the usage line
    assert "╭" not in text  # no rich panels


@pytest.mark.parametrize("command", [*COMMANDS, *(" ".join(c) for c in SUBCOMMANDS)])
def test_every_option_is_named_whole_with_its_value(command: str) -> None:
    text = help_text(*command.split())
    params = _command(*command.split()).params  # type: ignore[attr-defined]
    for param in params:
        if param.param_type_name != "option":
            continue
        for name in (*param.opts, *param.secondary_opts):
            assert name in text, name
        if not param.is_flag:
            # a value option shows what it takes: --port PORT, --log-level [debug|...]
            assert param.metavar and not param.metavar.startswith("<"), param.opts
            assert f"{param.opts[0]} {param.metavar}" in text, param.opts


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("serve", "--port PORT Port (0: any free port, printed). [default: 9092; 0<=x<=65535]"),
        ("serve", "[default: (./groupcoord-data)]"),
        ("serve", "Kafka's group.initial.rebalance.delay.ms. [default: 3000; x>=0]"),
        ("serve", "[default: (off); x>=1]"),
        ("serve", "--log-level [debug|info|warning|error] Log level (logs go to stderr)."),
        ("serve", "(logs go to stderr). [default: info]"),
        ("serve", "--log-format [text|json] Log lines as text, or one JSON object per line"),
        ("serve", "such as group, member, client). [default: text]"),
        ("bench", "[default: quick]"),
        ("bench", "[default: (5 for --sizes quick, 60 otherwise); x>=0.001]"),
        ("bench", "--peers / --no-peers"),
        ("assign", "--assignor [range|roundrobin|sticky|cooperative-sticky]"),
        ("assign", "The assignment strategy. [default: range]"),
        ("simulate", "[default: (the scenario's seed, else 0); x>=0]"),
        ("sweep", 'GRID.toml: scenario = "base.toml" (relative to the grid), seeds = [1, 2],'),
        ("sweep", "(pip install 'groupcoord[pipeline]')"),
    ],
)
def test_defaults_and_brackets_are_shown(command: str, shown: str) -> None:
    assert shown in flat(help_text(command))


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("assign", "Usage: groupcoord assign [OPTIONS] FILE"),
        ("simulate", "Usage: groupcoord simulate [OPTIONS] SCENARIO.toml"),
        ("analyze", "Usage: groupcoord analyze [OPTIONS] PATH..."),
    ],
)
def test_usage_lines_name_arguments_plainly(command: str, usage: str) -> None:
    assert help_text(command).splitlines()[0] == usage


def test_the_assign_file_format_keeps_its_layout() -> None:
    text = help_text("assign")
    assert '     "members": {"m1": {"topics": ["orders"],' in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["assign", "-", "--assignor", "bogus"],
            "Invalid value for '--assignor': 'bogus' is not one of range, roundrobin, sticky,"
            " cooperative-sticky",
        ),
        (["assign", "-", "--backend", "java"], "'java' is not one of rust, python"),
        (
            ["serve", "--log-level", "loud"],
            "'loud' is not one of debug, info, warning, error",
        ),
        (["serve", "--log-format", "xml"], "'xml' is not one of text, json"),
    ],
)
def test_a_bad_choice_names_the_allowed_values(argv: list[str], message: str) -> None:
    result = runner.invoke(app, argv, input="{}", env={"COLUMNS": "80"})
    assert result.exit_code == 2
    assert message in flat(result.stderr)
    assert "Value error" not in result.stderr


def test_the_installed_entry_point_renders_the_same() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "groupcoord", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr
    assert "--auto-create-partitions N" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
